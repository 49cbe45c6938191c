package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.transfer.NotificationSink;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bound on notifications received and not yet drained: peers fill the inbox faster than the
 * engine drains it only by mistake or malice, and either must not grow the heap without end. A
 * notification past {@code maxCount} queued, or past {@link #MAX_BYTES} queued bytes, is dropped and
 * counted; {@link #problem} reports the drops with the latest sender.
 *
 * <p>Threads: the control thread admits; one thread at a time drains ({@link #drain}).
 */
final class NotificationBound implements NotificationSink
{
    static final long MAX_BYTES = 64L << 20;
    private static final Logger LOG = LoggerFactory.getLogger(NotificationBound.class);

    private final int maxCount;
    private final AtomicLong queued = new AtomicLong();
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private volatile String lastDropped;
    // the sink of the drain in progress: this object is the counting sink, so a drain allocates nothing
    private NotificationSink delegate;

    NotificationBound(int maxCount)
    {
        this.maxCount = maxCount;
    }

    /** @return whether a notification from {@code sender} may be queued; when not, it is counted as dropped. */
    boolean admit(String sender, int bytes)
    {
        boolean full = queued.incrementAndGet() > maxCount;
        if (!full && queuedBytes.addAndGet(bytes) > MAX_BYTES) {
            queuedBytes.addAndGet(-bytes);
            full = true;
        }
        if (full) {
            queued.decrementAndGet();
            if (dropped.getAndIncrement() == 0) {
                LOG.warn("dropping notifications from peer '{}': {} are queued undrained (max-queued-notifications={}, at most {} bytes); drain them "
                        + "faster or raise the option", sender, queued.get(), maxCount, MAX_BYTES);
            }
            lastDropped = sender;
            return false;
        }
        return true;
    }

    /**
     * Drains an inbox through a sink, counting what leaves the bound.
     *
     * @param drainer drains the inbox into the sink it is given.
     * @return how many were drained.
     */
    synchronized int drain(NotificationSink sink, java.util.function.ToIntFunction<NotificationSink> drainer)
    {
        delegate = sink;
        try {
            return drainer.applyAsInt(this);
        }
        finally {
            delegate = null;
        }
    }

    @Override
    public void accept(String peerName, byte[] message)
    {
        queued.decrementAndGet();
        queuedBytes.addAndGet(-message.length);
        delegate.accept(peerName, message);
    }

    /** @return notifications dropped since the instance started. */
    long dropped()
    {
        return dropped.get();
    }

    /** @return notifications queued undrained. */
    long queued()
    {
        return queued.get();
    }

    Optional<String> problem()
    {
        long count = dropped.get();
        return count == 0 ? Optional.empty() : Optional.of(count + " notifications were dropped because " + maxCount
                + " were queued undrained (max-queued-notifications); latest from peer '" + lastDropped + "'");
    }
}
