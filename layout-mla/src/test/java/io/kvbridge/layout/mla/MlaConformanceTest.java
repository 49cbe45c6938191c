package io.kvbridge.layout.mla;

/** The mla layout, packing where the memory is packed, keeps the whole layout contract. */
final class MlaConformanceTest extends MlaCases
{
}
