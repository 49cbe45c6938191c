package io.kvbridge.backend.cudaipc;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The answers to one notice (a close, or the unmap of revoked regions): the requesting thread
 * waits; the control thread sends the notice and counts the answers (or hang-ups) as they come.
 *
 * <p>Threads: any; one lock.
 */
final class CloseAcks
{
    private static final long WAKE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private boolean requested;
    private boolean sent;
    private final List<String> awaiting = new ArrayList<>();

    synchronized void request()
    {
        requested = true;
    }

    /** @return whether the notice is asked for and not sent yet. */
    synchronized boolean due()
    {
        return requested && !sent;
    }

    /** The notice went out to these agents, one entry per connection. */
    synchronized void sent(List<String> agents)
    {
        awaiting.addAll(agents);
        sent = true;
        notifyAll();
    }

    /** One connection of the agent answered or hung up. */
    synchronized void answered(String agent)
    {
        awaiting.remove(agent);
        notifyAll();
    }

    /**
     * Waits until every connection answered, at most until the deadline or while the control thread runs.
     *
     * @return the agents that did not answer, one entry per connection.
     */
    synchronized List<String> await(long deadlineNanos, BooleanSupplier alive)
    {
        while (!(sent && awaiting.isEmpty()) && alive.getAsBoolean()) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                break;
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, Math.min(left, WAKE_NANOS));
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return sent ? List.copyOf(awaiting) : List.of("(the control thread did not send the close notice)");
    }
}
