package io.kvbridge.spi.memory;

/** Where a memory range lives. */
public enum MemoryKind
{
    /** Host memory (DRAM), addressable by the CPU. */
    HOST,
    /** Accelerator memory (VRAM) on the device given by the allocation's device index. */
    DEVICE
}
