package io.kvbridge.core.layout;

/** The per-layer layout with heads-outermost blocks keeps the whole layout contract. */
final class PerLayerConformanceTest extends PerLayerCases
{
}
