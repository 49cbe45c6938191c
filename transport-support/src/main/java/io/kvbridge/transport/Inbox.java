package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.NotificationSink;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;

/**
 * Received notifications in arrival order, and the one thread to wake when a notification arrives
 * or a transfer ends ({@link io.kvbridge.spi.transfer.TransferBackend#wakeOnProgress}). Any thread
 * may add; one thread drains at a time.
 */
public final class Inbox
{
    /** Creates an empty inbox. */
    public Inbox()
    {
    }

    private record Notification(String sender, byte[] message)
    {
    }

    private final ConcurrentLinkedQueue<Notification> queue = new ConcurrentLinkedQueue<>();
    private volatile Thread waiter;

    /**
     * Adds a notification and wakes the waiter.
     *
     * @param sender the sending peer's agent name.
     * @param message the bytes, owned by the inbox from now on.
     */
    public void add(String sender, byte[] message)
    {
        queue.add(new Notification(requireNonNull(sender, "sender is null"), requireNonNull(message, "message is null")));
        wake();
    }

    /**
     * Hands every notification to a sink, in arrival order.
     *
     * @param sink receives each one.
     * @return how many were drained.
     */
    public int drain(NotificationSink sink)
    {
        requireNonNull(sink, "sink is null");
        int drained = 0;
        Notification notification;
        while ((notification = queue.poll()) != null) {
            sink.accept(notification.sender(), notification.message());
            drained++;
        }
        return drained;
    }

    /**
     * Sets the thread to wake; what {@code wakeOnProgress} does.
     *
     * @param thread the thread, or null for none.
     * @return true: the transport using the inbox wakes the thread.
     */
    public boolean wakeOnProgress(Thread thread)
    {
        waiter = thread;
        return true;
    }

    /** Wakes the waiter, if any: call it whenever a transfer ends. */
    public void wake()
    {
        Thread thread = waiter;
        if (thread != null) {
            LockSupport.unpark(thread);
        }
    }

    /** Drops every notification and wakes the waiter one last time, so it learns of the close. */
    public void close()
    {
        queue.clear();
        wake();
        waiter = null;
    }
}
