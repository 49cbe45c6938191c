package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * Wraps a transport and breaks it the way a {@link FaultPlan} says: notifications dropped,
 * duplicated, delayed or reordered on the receiving side; posts that fail; transfers that end in
 * error or stall. Decisions come from one seeded random stream, so failure tests are deterministic
 * for a given order of calls.
 *
 * <p>A transfer chosen to end in error or to stall is posted without its notification, so the peer
 * never hears of it; every other transfer passes through untouched. With {@link FaultPlan#none}
 * the wrapper behaves exactly like the transport it wraps.
 */
public final class FaultInjectingTransferBackend extends ForwardingTransferBackend
{
    private enum Fate
    {
        NORMAL, ERROR, STALL
    }

    private record Held(String sender, byte[] message, int releaseAtDrain)
    {
    }

    private final FaultPlan plan;
    private final SplittableRandom random;
    private final Map<Long, Fate> faulty = new HashMap<>();
    private final List<Held> held = new ArrayList<>();
    private int drains;
    private final FaultCounters counters = new FaultCounters();
    private volatile String injectedProblem;

    /**
     * Wraps a transport.
     *
     * @param delegate the transport that moves the bytes.
     * @param plan what to break.
     */
    public FaultInjectingTransferBackend(TransferBackend delegate, FaultPlan plan)
    {
        super(delegate);
        this.plan = requireNonNull(plan, "plan is null");
        this.random = new SplittableRandom(plan.seed());
    }

    /** {@return how many faults were injected so far} */
    public synchronized FaultCounters counters()
    {
        return counters.copy();
    }

    /** Counts of injected faults. */
    public static final class FaultCounters
    {
        /** Notifications dropped. */
        public int droppedNotifications;
        /** Notifications handed over twice. */
        public int duplicatedNotifications;
        /** Notifications held back. */
        public int delayedNotifications;
        /** Posts that threw. */
        public int failedPosts;
        /** Transfers turned into errors. */
        public int erroredTransfers;
        /** Transfers stalled. */
        public int stalledTransfers;

        /** Creates counters at zero. */
        public FaultCounters()
        {
        }

        FaultCounters copy()
        {
            FaultCounters copy = new FaultCounters();
            copy.droppedNotifications = droppedNotifications;
            copy.duplicatedNotifications = duplicatedNotifications;
            copy.delayedNotifications = delayedNotifications;
            copy.failedPosts = failedPosts;
            copy.erroredTransfers = erroredTransfers;
            copy.stalledTransfers = stalledTransfers;
            return copy;
        }
    }

    @Override
    public long post(TransferRequest request)
    {
        Fate fate;
        synchronized (this) {
            if (random.nextDouble() < plan.failPost()) {
                counters.failedPosts++;
                throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, "injected post failure (fault plan seed=" + plan.seed() + ")");
            }
            double draw = random.nextDouble();
            fate = draw < plan.errorTransfer() ? Fate.ERROR : draw < plan.errorTransfer() + plan.stallTransfer() ? Fate.STALL : Fate.NORMAL;
            if (fate == Fate.ERROR) {
                counters.erroredTransfers++;
            }
            else if (fate == Fate.STALL) {
                counters.stalledTransfers++;
            }
        }
        if (fate == Fate.NORMAL) {
            return delegate().post(request);
        }
        // a failed or stalled transfer delivers no notification; the caller's request is handed back as it came
        byte[] notification = request.notification();
        long handle;
        try {
            handle = delegate().post(request.notification(null));
        }
        finally {
            request.notification(notification);
        }
        synchronized (this) {
            faulty.put(handle, fate);
        }
        return handle;
    }

    @Override
    public TransferStatus status(long handle)
    {
        TransferStatus status = delegate().status(handle);
        Fate fate;
        synchronized (this) {
            fate = faulty.get(handle);
        }
        if (fate == null || !status.terminal()) {
            return status;
        }
        return fate == Fate.STALL ? TransferStatus.IN_PROGRESS : TransferStatus.FAILED;
    }

    @Override
    public Optional<KvBridgeException> failure(long handle)
    {
        Fate fate;
        synchronized (this) {
            fate = faulty.get(handle);
        }
        if (fate == Fate.ERROR && delegate().status(handle).terminal()) {
            return Optional.of(new KvBridgeException(ErrorCode.TRANSFER_FAILED, "injected transfer error (fault plan seed=" + plan.seed() + ")"));
        }
        return fate == Fate.STALL ? Optional.empty() : delegate().failure(handle);
    }

    @Override
    public void release(long handle)
    {
        delegate().release(handle);
        synchronized (this) {
            faulty.remove(handle);
        }
    }

    /**
     * Passes the waiter on, but promises wake-ups only when no notification is held back: a held one
     * is handed over by a later drain, which no wake-up announces.
     */
    @Override
    public boolean wakeOnProgress(Thread waiter)
    {
        return super.wakeOnProgress(waiter) && plan.delayNotification() == 0;
    }

    @Override
    public int drainNotifications(NotificationSink sink)
    {
        List<Held> ready = new ArrayList<>();
        synchronized (this) {
            drains++;
            delegate().drainNotifications((sender, message) -> {
                double draw = random.nextDouble();
                if (draw < plan.dropNotification()) {
                    counters.droppedNotifications++;
                }
                else if (draw < plan.dropNotification() + plan.duplicateNotification()) {
                    counters.duplicatedNotifications++;
                    held.add(new Held(sender, message, drains));
                    held.add(new Held(sender, message.clone(), drains));
                }
                else if (draw < plan.dropNotification() + plan.duplicateNotification() + plan.delayNotification()) {
                    counters.delayedNotifications++;
                    held.add(new Held(sender, message, drains + 1 + random.nextInt(plan.maxDelayDrains())));
                }
                else {
                    held.add(new Held(sender, message, drains));
                }
            });
            for (Iterator<Held> it = held.iterator(); it.hasNext(); ) {
                Held next = it.next();
                if (next.releaseAtDrain() <= drains) {
                    ready.add(next);
                    it.remove();
                }
            }
        }
        for (Held next : ready) {
            sink.accept(next.sender(), next.message());
        }
        return ready.size();
    }

    /**
     * Makes {@link #problem()} report a failure for good, as a transport whose owner thread died
     * would, while calls keep reaching the wrapped transport: what a health check must notice.
     *
     * @param problem what to report; null reports the wrapped transport's own problem again.
     */
    public void injectProblem(String problem)
    {
        this.injectedProblem = problem;
    }

    @Override
    public Optional<String> problem()
    {
        Optional<String> own = delegate().problem();
        String injected = injectedProblem;
        return own.isPresent() || injected == null ? own : Optional.of("injected: " + injected);
    }

    @Override
    public void close()
    {
        delegate().close();
        synchronized (this) {
            faulty.clear();
            held.clear();
        }
    }
}
