package io.kvbridge.core.engine;

import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.spi.ErrorCode;

/**
 * What a {@link RankRuntime} calls back into the role (producer or consumer) it runs, always on its
 * worker thread except {@link #audit()}.
 */
interface RankRole
{
    /** An authenticated notification from a peer. */
    void onNotification(String sender, byte[] message);

    void transferDone(Transfer transfer);

    void transferFailed(Transfer transfer, ErrorCode code, String message);

    /** A transfer whose release failed earlier was released now. */
    void releasedLate(Transfer transfer);

    /**
     * A lingering transfer (failed or cancelled while in progress, on a transport whose release
     * proves nothing) ended: it moves no byte any more.
     *
     * @param done whether it ended {@code DONE}.
     */
    void stopped(Transfer transfer, boolean done);

    /** Runs the role's timers. */
    void tick(long now);

    /** {@return when {@link #tick} next has something to do, on the services' clock; Long.MAX_VALUE for nothing} */
    long nextTimerNanos();

    /** Publishes what {@link #audit()} reads from other threads. */
    void publishAudit();

    /** Counts what the rank holds; any thread. */
    ConnectorAudit audit();
}
