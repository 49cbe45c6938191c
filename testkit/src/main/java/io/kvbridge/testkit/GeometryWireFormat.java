package io.kvbridge.testkit;

import io.kvbridge.spi.geometry.CacheGeometry;

/**
 * Carries a geometry through a wire format and back, so the layout conformance suite can check that
 * nothing a layout advertises is lost on the way to a peer. Plugged in through
 * {@link AbstractCacheLayoutConformanceTest#wireFormat()}.
 */
@FunctionalInterface
public interface GeometryWireFormat
{
    /**
     * Encodes a geometry and decodes the bytes again.
     *
     * @param geometry to send.
     * @return what a peer would receive.
     */
    CacheGeometry roundTrip(CacheGeometry geometry);
}
