package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.NotificationSink;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Received notifications in arrival order, and the one thread to wake when a notification arrives
 * or a transfer ends ({@link io.kvbridge.spi.transfer.TransferBackend#wakeOnProgress}). Any thread
 * may add; one thread drains at a time.
 *
 * <p>Bounded: peers send notifications at will, and an instance whose inbox nobody drains must not
 * hold them without end. A notification that would take the inbox past its count or its bytes is
 * dropped and counted ({@link #dropped()}); what is queued is never touched.
 */
public final class Inbox
{
    /** Notifications held at once by default: far more than an engine's round leaves undrained. */
    public static final int DEFAULT_MAX_MESSAGES = 65_536;
    /** Bytes of notifications held at once by default. */
    public static final long DEFAULT_MAX_BYTES = 64L << 20;

    private record Notification(String sender, byte[] message)
    {
    }

    private final int maxMessages;
    private final long maxBytes;
    private final ConcurrentLinkedQueue<Notification> queue = new ConcurrentLinkedQueue<>();
    // reserved before a notification is queued, released once it is drained: never more than the bounds
    private final AtomicLong messages = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private volatile Thread waiter;

    /** Creates an empty inbox with the default bounds ({@link #DEFAULT_MAX_MESSAGES}, {@link #DEFAULT_MAX_BYTES}). */
    public Inbox()
    {
        this(DEFAULT_MAX_MESSAGES, DEFAULT_MAX_BYTES);
    }

    /**
     * Creates an empty inbox.
     *
     * @param maxMessages notifications held at once, at least 1.
     * @param maxBytes bytes of notifications held at once, at least 1.
     */
    public Inbox(int maxMessages, long maxBytes)
    {
        if (maxMessages < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("an inbox holds at least one notification of one byte, got maxMessages=" + maxMessages + " maxBytes="
                    + maxBytes);
        }
        this.maxMessages = maxMessages;
        this.maxBytes = maxBytes;
    }

    /**
     * Adds a notification and wakes the waiter, or drops it when the inbox is full.
     *
     * @param sender the sending peer's agent name.
     * @param message the bytes, owned by the inbox from now on.
     * @return false when it was dropped: the inbox held its bound already.
     */
    public boolean add(String sender, byte[] message)
    {
        requireNonNull(sender, "sender is null");
        requireNonNull(message, "message is null");
        if (messages.incrementAndGet() > maxMessages) {
            messages.decrementAndGet();
            dropped.incrementAndGet();
            return false;
        }
        if (bytes.addAndGet(message.length) > maxBytes) {
            bytes.addAndGet(-message.length);
            messages.decrementAndGet();
            dropped.incrementAndGet();
            return false;
        }
        queue.add(new Notification(sender, message));
        wake();
        return true;
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
            bytes.addAndGet(-notification.message().length);
            messages.decrementAndGet();
            sink.accept(notification.sender(), notification.message());
            drained++;
        }
        return drained;
    }

    /** {@return notifications held now, undrained} */
    public int size()
    {
        return (int) messages.get();
    }

    /** {@return bytes of the notifications held now} */
    public long bytes()
    {
        return bytes.get();
    }

    /** {@return notifications dropped since the inbox was made, because it was full} */
    public long dropped()
    {
        return dropped.get();
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
        Notification notification;
        while ((notification = queue.poll()) != null) {
            bytes.addAndGet(-notification.message().length);
            messages.decrementAndGet();
        }
        wake();
        waiter = null;
    }
}
