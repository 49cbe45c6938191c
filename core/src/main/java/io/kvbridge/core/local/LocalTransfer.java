package io.kvbridge.core.local;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferStatus;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One posted transfer, resolved at post time into absolute (source, destination, length) triples.
 * Slots are reused: the arrays grow to the largest transfer seen and are never reallocated below it,
 * so steady-state posting allocates nothing but the notification copy.
 */
final class LocalTransfer
{
    final int slot;
    int generation;

    long[] sources = new long[16];
    long[] destinations = new long[16];
    long[] lengths = new long[16];
    int count;
    int parts;

    LocalPreparedList localList;
    LocalPreparedList remoteList;
    byte[] notification;

    final AtomicInteger pendingParts = new AtomicInteger();
    volatile TransferStatus status = TransferStatus.DONE;
    volatile KvBridgeException failure;
    volatile boolean cancelled;
    boolean released = true;

    LocalTransfer(int slot)
    {
        this.slot = slot;
    }

    long handle()
    {
        return ((long) generation << 32) | slot;
    }

    void ensureCapacity(int pairs)
    {
        if (sources.length < pairs) {
            int size = Math.max(pairs, sources.length * 2);
            sources = new long[size];
            destinations = new long[size];
            lengths = new long[size];
        }
    }

    /** Drops references so a finished transfer keeps no lists, peers or messages alive. */
    void clearReferences()
    {
        localList = null;
        remoteList = null;
        notification = null;
    }
}
