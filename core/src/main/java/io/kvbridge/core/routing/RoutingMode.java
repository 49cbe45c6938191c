package io.kvbridge.core.routing;

/** How the regions of two ranks are paired. */
public enum RoutingMode
{
    /**
     * Region {@code r} of the local rank with region {@code offset + r} of the peer: exact when
     * both sides register the same layers in the same order and map regions to groups the same
     * way, and the cheapest (one entry per region).
     */
    BY_INDEX,
    /**
     * Every layer the local rank holds with the peer region holding the same layer: needed when the
     * two sides pool layers into regions differently (pipeline stages of a hybrid-allocator or
     * packed cache), or when the peer is itself split into pipeline stages.
     */
    BY_LAYER_NAME
}
