package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.TransferMode;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The transfer metrics of one bridge, shared by its connectors: Micrometer meters (Prometheus names
 * {@code kvbridge_transfer_time_seconds}, {@code kvbridge_post_time_seconds},
 * {@code kvbridge_transfer_bytes}, {@code kvbridge_transfer_descriptors},
 * {@code kvbridge_transfer_operations}, {@code kvbridge_transfer_failed_total},
 * {@code kvbridge_notification_failed_total}, {@code kvbridge_lease_expired_total},
 * {@code kvbridge_notifications_rejected_total} by {@code reason}), and an interval
 * summary for one log line that is reset each time it is read. Recording allocates nothing.
 * Thread-safe.
 *
 * <p>Both sides in both modes: {@code kvbridge.request.time} (tags {@code side=producer|consumer},
 * {@code mode=push|pull}) times a request a connector served successfully, on the producer from
 * {@code prefillFinished} to the last consumer's acknowledgement, on the consumer from
 * {@code blocksAllocated} to the request being received. {@code kvbridge.handshake.time} (tag
 * {@code outcome=ok|failed}) times a handshake a connector had to wait for (a cached engine is not
 * one). {@code kvbridge.handover.time} (tag {@code mode}) is recorded by the consumer: from the
 * producer's {@code prefillFinished} to the moment this consumer rank first had data of the
 * request in place (pull: its first READ completed; push: the first writer's {@code PUSH_DONE}
 * arrived). Neither side can see the first byte arrive (a transport reports only that a transfer
 * completed), so this is the first completed part, an upper bound on the first byte; the
 * producer's instant comes from {@code TransferParams.finishedNanos}, moved to the consumer's clock
 * with the clock offset of its handshake with pipeline stage 0, which bounds the error by half
 * that handshake's round trip. Parameters handed over before the prefill finished carry no
 * instant, so such push requests are not recorded. Every tag combination is registered when the
 * metrics are, so a scrape shows every meter from the start.
 *
 * <p>{@code kvbridge.transfer.descriptors} counts the descriptor pairs a transfer posted, before
 * coalescing; {@code kvbridge.transfer.operations} the operations the transport issued for them,
 * after coalescing ({@link io.kvbridge.spi.transfer.TransferBackend#operations}), or the pair count
 * when the transport does not report it. Their ratio is what coalescing saved.
 */
final class TransferMetrics
{
    private static final int SAMPLES = 4096;

    private final Timer transferTime;
    private final Timer postTime;
    private final DistributionSummary bytes;
    private final DistributionSummary descriptors;
    private final DistributionSummary operations;
    private final Counter failedTransfers;
    private final Counter failedNotifications;
    private final Counter expiredLeases;
    private final Counter droppedAnnouncements;
    // [side][mode]: side 0 producer, 1 consumer; mode as TransferMode's ordinal
    private final Timer[][] requestTime = new Timer[2][TransferMode.values().length];
    private final Timer[] handoverTime = new Timer[TransferMode.values().length];
    private final Timer handshakeOk;
    private final Timer handshakeFailed;
    private final Counter[] rejectedNotifications = new Counter[PeerSessions.Rejection.values().length];

    private final Object lock = new Object();
    private long count;
    private long transferNanos;
    private long postNanos;
    private long totalBytes;
    private long totalDescriptors;
    private long totalOperations;
    private long failures;
    private long notificationFailures;
    private long expiries;
    private final long[] samples = new long[SAMPLES];

    TransferMetrics(MeterRegistry registry)
    {
        requireNonNull(registry, "registry is null");
        this.transferTime = Timer.builder("kvbridge.transfer.time").description("time from post to completion of one transfer")
                .serviceLevelObjectives(seconds(0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5))
                .register(registry);
        this.postTime = Timer.builder("kvbridge.post.time").description("time the transport took to accept one transfer")
                .serviceLevelObjectives(seconds(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5))
                .register(registry);
        double[] byteBuckets = new double[12];
        for (int i = 0; i < byteBuckets.length; i++) {
            byteBuckets[i] = Math.pow(2, 11 + 2 * i);
        }
        this.bytes = DistributionSummary.builder("kvbridge.transfer.bytes").baseUnit("bytes").description("bytes moved by one transfer")
                .serviceLevelObjectives(byteBuckets).register(registry);
        this.descriptors = DistributionSummary.builder("kvbridge.transfer.descriptors").description("descriptor pairs of one transfer, before coalescing")
                .serviceLevelObjectives(10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000).register(registry);
        // coalesced transfers issue few operations: buckets start at one
        this.operations = DistributionSummary.builder("kvbridge.transfer.operations")
                .description("operations the transport issued for one transfer, after coalescing")
                .serviceLevelObjectives(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000).register(registry);
        this.failedTransfers = Counter.builder("kvbridge.transfer.failed").description("transfers that failed or were given up").register(registry);
        this.failedNotifications = Counter.builder("kvbridge.notification.failed").description("notifications that could not be sent").register(registry);
        this.droppedAnnouncements = Counter.builder("kvbridge.stream.announcements.dropped")
                .description("streamed pull watches and computed-layer announcements dropped as unknown, duplicate or from a peer not serving the request")
                .register(registry);
        this.expiredLeases = Counter.builder("kvbridge.lease.expired").description("producer leases that expired before every consumer finished")
                .register(registry);
        Duration[] requestBuckets = seconds(0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60);
        for (TransferMode mode : TransferMode.values()) {
            String name = mode.name().toLowerCase(Locale.ROOT);
            for (int side = 0; side < 2; side++) {
                requestTime[side][mode.ordinal()] = Timer.builder("kvbridge.request.time")
                        .description("producer: prefillFinished to the last acknowledgement; consumer: blocksAllocated to received")
                        .tags("side", side == 0 ? "producer" : "consumer", "mode", name).serviceLevelObjectives(requestBuckets).register(registry);
            }
            handoverTime[mode.ordinal()] = Timer.builder("kvbridge.handover.time")
                    .description("prefillFinished on the producer to the consumer rank's first data of the request in place")
                    .tags("mode", name).serviceLevelObjectives(requestBuckets).register(registry);
        }
        Duration[] handshakeBuckets = seconds(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5);
        this.handshakeOk = Timer.builder("kvbridge.handshake.time").description("a handshake a connector waited for, with one remote engine")
                .tags("outcome", "ok").serviceLevelObjectives(handshakeBuckets).register(registry);
        this.handshakeFailed = Timer.builder("kvbridge.handshake.time").description("a handshake a connector waited for, with one remote engine")
                .tags("outcome", "failed").serviceLevelObjectives(handshakeBuckets).register(registry);
        for (PeerSessions.Rejection reason : PeerSessions.Rejection.values()) {
            rejectedNotifications[reason.ordinal()] = Counter.builder("kvbridge.notifications.rejected").tag("reason", reason.tag)
                    .description("notifications dropped because they were not authenticated as coming from a peer met at a handshake").register(registry);
        }
    }

    void requestDone(boolean producer, TransferMode mode, long durationNanos)
    {
        requestTime[producer ? 0 : 1][mode.ordinal()].record(Math.max(0, durationNanos), TimeUnit.NANOSECONDS);
    }

    void handover(TransferMode mode, long durationNanos)
    {
        // clock offsets err by up to half a round trip: a hand-over faster than that reads as zero, not negative
        handoverTime[mode.ordinal()].record(Math.max(0, durationNanos), TimeUnit.NANOSECONDS);
    }

    void handshakeDone(long durationNanos, boolean ok)
    {
        (ok ? handshakeOk : handshakeFailed).record(Math.max(0, durationNanos), TimeUnit.NANOSECONDS);
    }

    private static Duration[] seconds(double... values)
    {
        Duration[] durations = new Duration[values.length];
        for (int i = 0; i < values.length; i++) {
            durations[i] = Duration.ofNanos((long) (values[i] * 1e9));
        }
        return durations;
    }

    void transferDone(long durationNanos, long postDurationNanos, long byteCount, int descriptorCount, int operationCount)
    {
        transferTime.record(durationNanos, TimeUnit.NANOSECONDS);
        postTime.record(postDurationNanos, TimeUnit.NANOSECONDS);
        bytes.record(byteCount);
        descriptors.record(descriptorCount);
        operations.record(operationCount);
        synchronized (lock) {
            samples[(int) (count % SAMPLES)] = durationNanos;
            count++;
            transferNanos += durationNanos;
            postNanos += postDurationNanos;
            totalBytes += byteCount;
            totalDescriptors += descriptorCount;
            totalOperations += operationCount;
        }
    }

    void transferFailed()
    {
        failedTransfers.increment();
        synchronized (lock) {
            failures++;
        }
    }

    void notificationFailed()
    {
        failedNotifications.increment();
        synchronized (lock) {
            notificationFailures++;
        }
    }

    void leaseExpired()
    {
        expiredLeases.increment();
        synchronized (lock) {
            expiries++;
        }
    }

    /** A streamed pull's watch or announcement was dropped after it was opened. */
    void announcementDropped()
    {
        droppedAnnouncements.increment();
    }

    /** A notification was dropped unopened. */
    void notificationRejected(PeerSessions.Rejection reason)
    {
        rejectedNotifications[reason.ordinal()].increment();
    }

    /**
     * Returns the one-line summary of the interval since the last call and starts a new interval.
     *
     * @return the line, or null when nothing happened.
     */
    String drainSummary()
    {
        synchronized (lock) {
            if (count == 0 && failures == 0 && notificationFailures == 0 && expiries == 0) {
                return null;
            }
            String line;
            if (count == 0) {
                line = "kvbridge transfers: none succeeded";
            }
            else {
                long[] sorted = Arrays.copyOf(samples, (int) Math.min(count, SAMPLES));
                Arrays.sort(sorted);
                long p90 = sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * 0.9) - 1)];
                double seconds = transferNanos / 1e9;
                line = String.format(Locale.ROOT,
                        "kvbridge transfers: count=%d time mean=%.3f ms p90=%.3f ms post mean=%.3f ms, %.3f MB per transfer, %.1f descriptors and %.1f operations"
                                + " per transfer, %.3f GB/s",
                        count, transferNanos / 1e6 / count, p90 / 1e6, postNanos / 1e6 / count, totalBytes / 1e6 / count,
                        (double) totalDescriptors / count, (double) totalOperations / count, seconds > 0 ? totalBytes / 1e9 / seconds : 0.0);
            }
            line += String.format(Locale.ROOT, ", failed transfers=%d, failed notifications=%d, expired leases=%d", failures, notificationFailures, expiries);
            count = 0;
            transferNanos = 0;
            postNanos = 0;
            totalBytes = 0;
            totalDescriptors = 0;
            totalOperations = 0;
            failures = 0;
            notificationFailures = 0;
            expiries = 0;
            return line;
        }
    }
}
