package io.kvbridge.core.engine;

import io.kvbridge.api.Health.Check;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.ServedRole;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelServer;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferBackend;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The probes behind {@code KvBridge.health()}. Each looks at one part as it is at the call and, when
 * it fails, says what failed with the values involved and what to do.
 */
final class HealthProbes
{
    private HealthProbes()
    {
    }

    /** A transport instance: whatever its {@link TransferBackend#problem()} reports. */
    static Check transport(String name, TransferBackend transport)
    {
        return problemOf(transport).map(problem -> Check.failed(name, problem))
                .orElseGet(() -> Check.passed(name, transport.name() + " transport '" + transport.agentName() + "': no problem reported"));
    }

    private static Optional<String> problemOf(TransferBackend transport)
    {
        try {
            return transport.problem();
        }
        catch (RuntimeException e) {
            // the contract says it never throws; a plugin that does is broken, which is a problem too
            return Optional.of(transport.name() + " transport problem() threw " + e + ", which its contract forbids: report it to the plugin's authors");
        }
    }

    /**
     * One connector: its worker runs and answered the probe before the deadline, its transport
     * reports no problem, it retains no handle, and no transfer is past its deadline by more than
     * {@code graceNanos} (deadlines are enforced by the worker's rounds, a few microseconds apart).
     */
    static Check connector(OpenRank worker, CompletableFuture<HealthReport> answer, long sentNanos, long deadlineNanos, long graceNanos)
    {
        List<String> problems = new ArrayList<>();
        Thread thread = worker.workerThread();
        Thread.State state = thread.getState();
        HealthReport report = null;
        if (state == Thread.State.NEW) {
            problems.add("worker thread " + thread.getName() + " was never started: nothing runs this connector's requests, transfers or deadlines");
        }
        else if (state == Thread.State.TERMINATED) {
            problems.add("worker thread " + thread.getName() + " has stopped (state=TERMINATED): this connector no longer moves data, handles"
                    + " notifications or enforces deadlines; close it and open a new one (the failure that stopped it went to standard error)");
        }
        else {
            report = await(answer, deadlineNanos);
            if (report == null) {
                problems.add(String.format(Locale.ROOT, "worker thread %s did not answer a probe within %d ms (state=%s%s): its loop is stalled,"
                        + " so this connector's requests, transfers and deadlines do not progress; a thread dump shows what it waits for",
                        thread.getName(), TimeUnit.NANOSECONDS.toMillis(deadlineNanos - sentNanos), thread.getState(), where(thread)));
            }
        }
        problemOf(worker.transport()).ifPresent(problem -> problems.add("transport: " + problem));
        int retained = report != null ? report.retainedHandles() : worker.retainedHandles();
        if (retained > 0) {
            String which = report == null ? "" : String.format(Locale.ROOT, " (%s; the oldest posted %d ms ago)", report.retainedHandleIds(),
                    TimeUnit.NANOSECONDS.toMillis(report.oldestRetainedAgeNanos()));
            problems.add("retainedHandles=" + retained + which + ": releasing these transfer handles failed, so the transport may still move"
                    + " their bytes and their blocks stay held; the worker retries every round, and if the count does not fall the transport"
                    + " is failing: check its log, then close this connector");
        }
        long overdueNanos = worker.now() - worker.earliestDeadlineNanos();
        if (overdueNanos > graceNanos) {
            problems.add(String.format(Locale.ROOT, "a transfer is %d ms past its deadline and was not failed (inFlightTransfers=%d,"
                    + " transferTimeout=%s): deadlines are enforced by the worker loop, which has not run since", TimeUnit.NANOSECONDS.toMillis(overdueNanos),
                    worker.inFlightTransfers(), worker.transferTimeout()));
        }
        if (!problems.isEmpty()) {
            return Check.failed(worker.name(), String.join("; ", problems));
        }
        // the answer may be an earlier call's probe, answered just after this call sent its own
        long latencyNanos = Math.max(0, report.answeredAtNanos() - sentNanos);
        return Check.passed(worker.name(), String.format(Locale.ROOT, "worker answered in %.1f ms; inFlightTransfers=%d, retainedHandles=0;"
                + " transport: no problem reported", latencyNanos / 1e6, worker.inFlightTransfers()));
    }

    private static HealthReport await(CompletableFuture<HealthReport> answer, long deadlineNanos)
    {
        try {
            return answer.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
        }
        catch (TimeoutException | ExecutionException e) {
            return null;
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** The first frame of a thread's stack outside the JDK: where kvbridge or a plugin waits. */
    private static String where(Thread thread)
    {
        for (StackTraceElement frame : thread.getStackTrace()) {
            String type = frame.getClassName();
            if (!type.startsWith("java.") && !type.startsWith("jdk.") && !type.startsWith("sun.")) {
                return ", in " + frame;
            }
        }
        return "";
    }

    /**
     * An engine's side channel: a request for one of its ranks, sent over TCP from this process,
     * gets an authenticated answer within the client's deadlines, and the answer carries this
     * incarnation's epoch (another answer is another process on the port).
     */
    static Check sideChannel(String engineId, long epoch, SideChannelServer server, SideChannelClient client)
    {
        String name = "side channel " + engineId;
        InetSocketAddress address = reachable(server.address());
        String at = address.getAddress().getHostAddress() + ":" + address.getPort();
        Optional<RankKey> rank = server.ranks().stream().min(Comparator.comparingInt(RankKey::ppRank).thenComparingInt(RankKey::tpRank));
        if (rank.isEmpty()) {
            return Check.failed(name, "listening on " + at + " but serving no rank: a connector of engine " + engineId
                    + " is still starting or its rank was withdrawn; peers' handshakes fail until a rank is published");
        }
        long start = System.nanoTime();
        long answered;
        try {
            WireLimits limits = client.settings().limits();
            // a rank of an engine that runs both kinds is asked for under one of its roles, which both carry the epoch
            ServedRole role = server.roles(rank.get()).stream().min(Comparator.naturalOrder()).orElse(null);
            byte[] payload = client.fetch(address, List.of(rank.get()), role, null).getFirst().payload();
            answered = MetadataCodec.decode(HandshakePayload.decode(payload, limits).metadata(), limits).epoch();
        }
        catch (KvBridgeException e) {
            return Check.failed(name, "its own side channel at " + at + " did not answer the request for rank " + rank.get() + ": "
                    + e.getMessage() + "; peers cannot shake hands with engine " + engineId + ", so no transfer with it starts: look in the log for"
                    + " accept failures or the file-descriptor limit (ulimit -n), then close and reopen the engine's connectors");
        }
        long elapsed = System.nanoTime() - start;
        if (answered != epoch) {
            return Check.failed(name, "the side channel at " + at + " answered with epoch " + RankMetadata.formatEpoch(answered) + ", not this engine's "
                    + RankMetadata.formatEpoch(epoch) + ": another process serves the port; stop it, or give engine " + engineId + " another port");
        }
        return Check.passed(name, String.format(Locale.ROOT, "answered the request for rank %s at %s with epoch %s in %.1f ms", rank.get(), at,
                RankMetadata.formatEpoch(epoch), elapsed / 1e6));
    }

    // a server bound to every interface is reached through loopback
    private static InetSocketAddress reachable(InetSocketAddress bound)
    {
        return bound.getAddress().isAnyLocalAddress() ? new InetSocketAddress(InetAddress.getLoopbackAddress(), bound.getPort()) : bound;
    }
}
