package io.kvbridge.backend.ucx;

import io.kvbridge.spi.memory.Allocation;

/**
 * One registered allocation: its UCX memory handle and packed remote key. The owner thread creates
 * and unmaps it; other threads read the final fields and {@link #live}.
 */
final class UcxRegistration
{
    final Allocation allocation;
    final long memh;
    final byte[] packedKey;
    // memory UCX allocated for allocate(): unmapping frees it
    final boolean transportOwned;
    volatile boolean live = true;

    // owner thread only: issued transfers using this memory; unmapping waits for them
    int inFlight;
    boolean unmapped;

    UcxRegistration(Allocation allocation, long memh, byte[] packedKey, boolean transportOwned)
    {
        this.allocation = allocation;
        this.memh = memh;
        this.packedKey = packedKey;
        this.transportOwned = transportOwned;
    }
}
