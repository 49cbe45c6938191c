package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Turns the per-worker reports of a scheduler with TP × PP workers into one "finished" per request:
 * a request finishes when every expected worker reported it, a second report from the same worker
 * does not count again, and a failure on any worker makes the request finish failed, once, with the
 * union of the workers' invalid blocks. Use one aggregator for sending (producer polls) and one for
 * receiving (consumer polls).
 *
 * <p>The expected count is the worker count unless a report names another one for its request (for
 * example an MLA push where only some ranks take part); the latest report's count holds. A finished
 * request is remembered until {@code retention} passes, so a late duplicate does not finish it again.
 * At most {@code capacity} requests are tracked; entries past their deadline ({@code retention}
 * after their first report) are evicted by {@link #evictStale}, which names unfinished ones so the
 * scheduler can fail them, and, without naming them, when the table is full; a full table of live
 * entries refuses a new request rather than drop one.
 *
 * <p>Thread-safe (one lock). A report allocates nothing but the request's own entry on its first
 * report, and the finished record and merged failure when it finishes.
 */
public final class CompletionAggregator
{
    /**
     * One request's aggregated outcome.
     *
     * @param requestId the request.
     * @param failure the merged failure (union of every worker's invalid blocks, the earliest first
     *     invalid block, the first failing worker's code and message), or null when every worker succeeded.
     */
    public record Finished(String requestId, ReceiveFailure failure)
    {
        /** Validates the id. */
        public Finished
        {
            requireNonNull(requestId, "requestId is null");
        }

        /** {@return true when some worker failed the request} */
        public boolean failed()
        {
            return failure != null;
        }
    }

    private static final class Entry
    {
        final long[] reported;
        int count;
        int expected;
        long deadline;
        boolean finished;
        ReceiveFailure failure;

        Entry(int workers, long deadline)
        {
            this.reported = new long[(workers + 63) / 64];
            this.deadline = deadline;
        }
    }

    private final int workers;
    private final int capacity;
    private final long retentionNanos;
    private final LongSupplier clock;
    private final Map<String, Entry> entries;

    /**
     * Creates an aggregator.
     *
     * @param workers the scheduler's workers (TP × PP); worker ids are {@code [0, workers)}.
     * @param capacity most requests tracked at once, finished ones within their retention included.
     * @param retentionNanos how long an entry lives after its first report (or after it finished).
     * @param clock a monotonic clock in nanoseconds, such as {@code System::nanoTime}.
     */
    public CompletionAggregator(int workers, int capacity, long retentionNanos, LongSupplier clock)
    {
        checkArgument(workers > 0, "workers=%d is not positive", workers);
        checkArgument(capacity > 0, "capacity=%d is not positive", capacity);
        checkArgument(retentionNanos > 0, "retentionNanos=%d is not positive", retentionNanos);
        this.workers = workers;
        this.capacity = capacity;
        this.retentionNanos = retentionNanos;
        this.clock = requireNonNull(clock, "clock is null");
        this.entries = HashMap.newHashMap(Math.min(capacity, 1 << 16));
    }

    /**
     * Records that a worker finished a request successfully; every worker is expected.
     *
     * @param requestId the request.
     * @param worker the reporting worker.
     * @return the outcome when this report finished the request, else null.
     */
    public Finished report(String requestId, int worker)
    {
        return report(requestId, worker, workers, null);
    }

    /**
     * Records a worker's report.
     *
     * @param requestId the request.
     * @param worker the reporting worker, in {@code [0, workers)}.
     * @param expectedWorkers how many workers report this request, in {@code [1, workers]}.
     * @param failure the worker's failure, or null when it succeeded.
     * @return the outcome when this report finished the request, else null (also for a duplicate,
     *     or a report of a request that finished already).
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for a worker or count out of range, or a
     *     failure of another request; {@code UNSUPPORTED} when {@code capacity} unfinished requests
     *     are tracked and none is stale.
     */
    public Finished report(String requestId, int worker, int expectedWorkers, ReceiveFailure failure)
    {
        requireNonNull(requestId, "requestId is null");
        checkArgument(worker >= 0 && worker < workers, "worker=%d is outside [0, %d)", worker, workers);
        checkArgument(expectedWorkers > 0 && expectedWorkers <= workers, "expectedWorkers=%d is outside [1, %d]", expectedWorkers, workers);
        checkArgument(failure == null || failure.requestId().equals(requestId), "failure of request %s reported for %s",
                failure == null ? null : failure.requestId(), requestId);
        synchronized (this) {
            long now = clock.getAsLong();
            Entry entry = entries.get(requestId);
            if (entry == null) {
                if (entries.size() >= capacity) {
                    evictStale(now, null);
                    KvBridgeException.check(entries.size() < capacity, ErrorCode.UNSUPPORTED,
                            "%d requests are awaiting worker reports (capacity=%d) and none is older than retention=%d ns; raise the capacity "
                                    + "or report fewer requests at once", entries.size(), capacity, retentionNanos);
                }
                entry = new Entry(workers, now + retentionNanos);
                entries.put(requestId, entry);
            }
            if (entry.finished) {
                return null;
            }
            long bit = 1L << (worker & 63);
            if ((entry.reported[worker >>> 6] & bit) != 0) {
                return null;
            }
            entry.reported[worker >>> 6] |= bit;
            entry.count++;
            entry.expected = expectedWorkers;
            if (failure != null) {
                entry.failure = entry.failure == null ? failure : merge(entry.failure, failure);
            }
            if (entry.count < entry.expected) {
                return null;
            }
            entry.finished = true;
            entry.deadline = now + retentionNanos;
            return new Finished(requestId, entry.failure);
        }
    }

    private static ReceiveFailure merge(ReceiveFailure first, ReceiveFailure next)
    {
        BlockIds a = first.invalidBlocks();
        BlockIds b = next.invalidBlocks();
        int groups = Math.max(a.groupCount(), b.groupCount());
        int[][] union = new int[groups][];
        for (int g = 0; g < groups; g++) {
            int[] left = g < a.groupCount() ? a.group(g) : new int[0];
            int[] right = g < b.groupCount() ? b.group(g) : new int[0];
            int[] merged = Arrays.copyOf(left, left.length + right.length);
            int n = left.length;
            for (int id : right) {
                if (!contains(left, id)) {
                    merged[n++] = id;
                }
            }
            union[g] = Arrays.copyOf(merged, n);
        }
        return new ReceiveFailure(first.requestId(), first.code(), first.message(), BlockIds.of(union), first.policy(),
                Math.min(first.firstInvalidBlock(), next.firstInvalidBlock()));
    }

    private static boolean contains(int[] ids, int id)
    {
        for (int candidate : ids) {
            if (candidate == id) {
                return true;
            }
        }
        return false;
    }

    /**
     * Evicts every entry past its deadline.
     *
     * @param unfinished told the id of each evicted request that never finished (some worker never
     *     reported it); may be null.
     * @return the number of entries evicted.
     */
    public synchronized int evictStale(Consumer<String> unfinished)
    {
        return evictStale(clock.getAsLong(), unfinished);
    }

    private int evictStale(long now, Consumer<String> unfinished)
    {
        int evicted = 0;
        for (Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Entry> next = it.next();
            if (now - next.getValue().deadline >= 0) {
                it.remove();
                evicted++;
                if (!next.getValue().finished && unfinished != null) {
                    unfinished.accept(next.getKey());
                }
            }
        }
        return evicted;
    }

    /** {@return requests tracked, finished ones within their retention included} */
    public synchronized int size()
    {
        return entries.size();
    }
}
