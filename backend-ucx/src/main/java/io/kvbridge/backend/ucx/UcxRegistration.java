package io.kvbridge.backend.ucx;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.transport.Registration;

/**
 * One registered allocation: its UCX memory handle and packed remote key.
 *
 * <p>Threads: the owner thread creates and unmaps it and alone touches {@code inFlight} and
 * {@code unmapped}; other threads read the final fields and {@link #live()}.
 */
final class UcxRegistration extends Registration
{
    final long memh;
    final byte[] packedKey;
    // memory UCX allocated for allocate(): unmapping frees it
    final boolean transportOwned;

    // owner thread only: issued transfers using this memory; unmapping waits for them
    int inFlight;
    boolean unmapped;

    UcxRegistration(Allocation allocation, long memh, byte[] packedKey, boolean transportOwned)
    {
        super(allocation);
        this.memh = memh;
        this.packedKey = packedKey;
        this.transportOwned = transportOwned;
    }
}
