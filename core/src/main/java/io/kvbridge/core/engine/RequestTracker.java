package io.kvbridge.core.engine;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.RequestView;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What {@code inspect} shows of one request: written by the worker as the request moves, read by any
 * thread. One per request, created when the engine hands the request over and dropped when
 * {@code poll()} hands out its report, so inspecting allocates nothing.
 */
final class RequestTracker
{
    private volatile RequestState state = RequestState.PENDING;
    private volatile long deadlineNanos;
    private volatile int blocks;
    private volatile int seen;
    private volatile int expected;
    // push: which layers landed so far, once the registrations went out; else null
    volatile LayerReadiness layers;

    RequestTracker(long deadlineNanos, int blocks)
    {
        this.deadlineNanos = deadlineNanos;
        this.blocks = blocks;
    }

    void state(RequestState state)
    {
        this.state = state;
    }

    RequestState state()
    {
        return state;
    }

    void deadline(long deadlineNanos)
    {
        this.deadlineNanos = deadlineNanos;
    }

    void blocks(int blocks)
    {
        this.blocks = blocks;
    }

    void progress(int seen, int expected)
    {
        this.seen = seen;
        this.expected = expected;
    }

    void fill(RequestView view)
    {
        view.set(state, deadlineNanos, blocks, seen, expected);
    }

    /** Looks a request up and fills the view; false when the request is unknown. Allocation-free. */
    static boolean inspect(ConcurrentHashMap<String, RequestTracker> trackers, String requestId, RequestView into)
    {
        RequestTracker tracker = trackers.get(requestId);
        if (tracker == null) {
            return false;
        }
        tracker.fill(into);
        return true;
    }

    /** Drops a reported request's tracker once its report was handed out; a newer request under the same id keeps its own. */
    static void reported(ConcurrentHashMap<String, RequestTracker> trackers, String requestId)
    {
        RequestTracker tracker = trackers.get(requestId);
        if (tracker != null && tracker.state().terminal()) {
            trackers.remove(requestId, tracker);
        }
    }

    /** {@return the state a request reported for this reason ends in} */
    static RequestState terminal(FreeReason reason)
    {
        return switch (reason) {
            case COMPLETED -> RequestState.COMPLETED;
            case EXPIRED -> RequestState.EXPIRED;
            case ABORTED -> RequestState.ABORTED;
        };
    }
}
