package io.kvbridge.core.engine;

import io.kvbridge.core.sidechannel.RemoteEngines;

/**
 * One posted transfer a worker polls: its handle, who it belongs to, when it must be done, and what
 * the metrics record when it is. Confined to the worker thread.
 */
final class Transfer
{
    final long handle;
    final Object owner;
    final long postedNanos;
    final long postDurationNanos;
    final long deadlineNanos;
    final long bytes;
    final int descriptors;
    // what the transport issued for the descriptor pairs after coalescing
    final int operations;
    final RemoteEngines.InFlight mark;
    // the remote engine the transfer moves data with: its links are closed when this transfer is stopped in flight
    final RemoteKey remote;
    // consumer: the cache groups whose blocks this transfer writes, as a mask (LayoutRules.groupsWritten)
    long groups = LayoutRules.ALL_GROUPS;
    // failed or cancelled while in progress, its handle kept until the transfer ends (InFlightTransfers)
    boolean lingering;

    Transfer(long handle, Object owner, long postedNanos, long postDurationNanos, long deadlineNanos, long bytes, int descriptors,
            int operations, RemoteEngines.InFlight mark, RemoteKey remote)
    {
        this.handle = handle;
        this.owner = owner;
        this.postedNanos = postedNanos;
        this.postDurationNanos = postDurationNanos;
        this.deadlineNanos = deadlineNanos;
        this.bytes = bytes;
        this.descriptors = descriptors;
        this.operations = operations;
        this.mark = mark;
        this.remote = remote;
    }
}
