package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.concurrent.TimeUnit;

/**
 * Releases everything native of one {@code nixl} instance in the order NIXL needs: requests
 * (cancelled, within a deadline), prepared lists, peers, registrations, then the agent. Every step
 * runs even when one before it failed; the first failure is thrown at the end with the others
 * suppressed in it. Runs on the owner thread, once: from {@code close()}, or when the owner loop
 * ends for another reason.
 */
final class NixlShutdown implements Runnable
{
    static final long CANCEL_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** How long {@code close()} waits for the whole shutdown by default ({@code close-timeout-ms}). */
    static final long CLOSE_TIMEOUT_MILLIS = 30_000;

    private final NixlOwner owner;
    private final NixlTransfers transfers;
    private final NixlLists lists;
    private final NixlPeers peers;
    private final NixlMemoryRegistry memory;
    // requests get at most half the close deadline, so the releases and the agent's destruction have the rest
    private final long cancelNanos;

    NixlShutdown(NixlOwner owner, NixlTransfers transfers, NixlLists lists, NixlPeers peers, NixlMemoryRegistry memory, long closeTimeoutNanos)
    {
        this.cancelNanos = Math.min(CANCEL_NANOS, closeTimeoutNanos / 2);
        this.owner = requireNonNull(owner, "owner is null");
        this.transfers = requireNonNull(transfers, "transfers is null");
        this.lists = requireNonNull(lists, "lists is null");
        this.peers = requireNonNull(peers, "peers is null");
        this.memory = requireNonNull(memory, "memory is null");
    }

    @Override
    public void run()
    {
        RuntimeException first = attempt(null, () -> transfers.cancelAll(System.nanoTime() + cancelNanos));
        first = merge(first, lists.closeAll());
        first = merge(first, peers.closeAll());
        first = merge(first, memory.closeAll());
        first = attempt(first, owner::closeAgent);
        if (first != null) {
            throw first;
        }
    }

    /**
     * Runs one step of a shutdown that goes on past failures.
     *
     * @param first the failure so far, or null.
     * @param step the step.
     * @return the first failure, the step's suppressed in it.
     */
    static RuntimeException attempt(RuntimeException first, Runnable step)
    {
        try {
            step.run();
            return first;
        }
        catch (RuntimeException e) {
            return merge(first, e);
        }
    }

    private static RuntimeException merge(RuntimeException first, RuntimeException next)
    {
        if (first == null) {
            return next;
        }
        if (next != null) {
            first.addSuppressed(next);
        }
        return first;
    }

    /** @return true for the error a call gets because the instance closed, which close() need not rethrow. */
    static boolean closedError(RuntimeException e)
    {
        return e instanceof KvBridgeException k && k.code() == ErrorCode.CLOSED;
    }
}
