package io.kvbridge.api;

/**
 * A caller-owned, reusable view of one request on one connector, filled by
 * {@link ProducerConnector#inspect} or {@link ConsumerConnector#inspect} without allocating, so a
 * scheduler may poll it every step. Each value is read from the connector's worker as of some recent
 * moment; values read together may be from consecutive rounds of the worker. Not thread-safe: one
 * view per polling thread.
 */
public final class RequestView
{
    private RequestState state = RequestState.PENDING;
    private long deadlineNanos;
    private int blocks;
    private int notificationsSeen;
    private int notificationsExpected;

    /** Creates a view of no request yet; {@code inspect} fills it. */
    public RequestView()
    {
    }

    /**
     * Sets every value; what a connector calls when it fills the view.
     *
     * @param state where the request stands.
     * @param deadlineNanos the deadline on the connector's monotonic clock.
     * @param blocks blocks held (producer) or being received (consumer).
     * @param notificationsSeen completions seen so far.
     * @param notificationsExpected completions awaited; 0 while unknown.
     * @return this view.
     */
    public RequestView set(RequestState state, long deadlineNanos, int blocks, int notificationsSeen, int notificationsExpected)
    {
        this.state = state;
        this.deadlineNanos = deadlineNanos;
        this.blocks = blocks;
        this.notificationsSeen = notificationsSeen;
        this.notificationsExpected = notificationsExpected;
        return this;
    }

    /** {@return where the request stands} */
    public RequestState state()
    {
        return state;
    }

    /**
     * Returns the request's deadline on the connector's monotonic clock (the engine's clock when it
     * gave one to the bridge, else {@link System#nanoTime()}): producer, the lease deadline (moved
     * by heartbeats); consumer, the handshake or push registration deadline, {@link Long#MAX_VALUE}
     * once its transfers are posted (each has its own {@code transferTimeout}).
     *
     * @return the deadline in nanoseconds.
     */
    public long deadlineNanos()
    {
        return deadlineNanos;
    }

    /** {@return blocks the producer holds for the request, or the consumer receives (after sliding-window clipping)} */
    public int blocks()
    {
        return blocks;
    }

    /**
     * Returns the completions seen so far: producer, distinct consumer ranks that said they are
     * done; consumer, transfers done (pull) or writers whose data is in place (push).
     *
     * @return the count.
     */
    public int notificationsSeen()
    {
        return notificationsSeen;
    }

    /**
     * Returns the completions awaited: producer, the consumer ranks the first completion announced
     * (0 before it); consumer, transfers posted (pull) or writers registered with (push).
     *
     * @return the count; 0 while unknown.
     */
    public int notificationsExpected()
    {
        return notificationsExpected;
    }

    @Override
    public String toString()
    {
        return "RequestView[state=" + state + ", deadlineNanos=" + deadlineNanos + ", blocks=" + blocks + ", notifications=" + notificationsSeen
                + "/" + notificationsExpected + "]";
    }
}
