package io.kvbridge.backend.tcp;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.ChildJvm;
import java.lang.management.ManagementFactory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * This JVM is the initiator and a child JVM ({@link TcpPeerProcess}) the target that granted its
 * blocks: every byte moved both ways is checked on the side that received it, and the target killed
 * with SIGKILL or stopped with SIGSTOP never leaves this side's transfers hanging, its CPU busy or
 * its {@code close()} stuck.
 */
final class TcpTwoProcessTest
{
    private static final Duration STEP = Duration.ofSeconds(60);
    private static final int BLOCKS = 256;
    private static final int BLOCK_BYTES = 64 * 1024;
    private static final long BYTES = (long) BLOCKS * BLOCK_BYTES;
    private static final int[] ALL = TcpPeerProcess.all(BLOCKS);
    private static final String INITIATOR = "initiator";
    private static final String TARGET = "target";
    // a killed peer's sockets are closed by its kernel at once; on loopback the survivor reads the end in microseconds
    private static final Duration KILL_NOTICED = Duration.ofSeconds(5);
    private static final int TRANSFER_TIMEOUT_MS = 2_000;
    // the sweep that ends overdue transfers runs every 10 ms; the rest is room for a loaded machine
    private static final Duration DEADLINE_SLACK = Duration.ofSeconds(3);
    private static final Duration CLOSE_BOUND = Duration.ofSeconds(10);
    // the owner sleeps in its selector between 10 ms sweeps: near 1 % of a core; room for two loaded shared cores
    private static final double MAX_WAITING_CORE_SHARE = 0.25;
    // a light child: it shares the machine with this JVM, which measures its own CPU time
    private static final List<String> CHILD_OPTIONS = List.of("--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1");

    private final List<ChildJvm> children = new ArrayList<>();
    private Arena arena;
    private TransferBackend backend;

    /** The initiator's view of the child: its peer, its blocks, the initiator's own blocks. */
    private record Link(ChildJvm child, byte[] metadata, Peer peer, PreparedList local, PreparedList remote, MemorySegment memory,
            long remoteAddress)
    {
    }

    @AfterEach
    void closeEverything() throws InterruptedException
    {
        try {
            if (backend != null) {
                backend.close();
            }
            if (arena != null) {
                arena.close();
            }
        }
        finally {
            for (ChildJvm child : children) {
                child.close();
            }
        }
    }

    /**
     * Starts the target with its blocks filled as {@code targetFill}, creates this side's instance
     * with {@code options} and connects it.
     */
    private Link link(String targetFill, Map<String, String> options) throws Exception
    {
        ChildJvm child = ChildJvm.start(TARGET, CHILD_OPTIONS, TcpPeerProcess.class, TARGET, Integer.toString(BLOCKS), Integer.toString(BLOCK_BYTES),
                targetFill);
        children.add(child);
        byte[] metadata = Base64.getDecoder().decode(child.expect("METADATA", STEP).substring("METADATA ".length()));
        String[] region = child.expect("REGION", STEP).split(" ");
        assertEquals(Long.toString(BYTES), region[2]);
        long remoteAddress = Long.parseLong(region[1]);
        Map<String, String> config = new HashMap<>(options);
        config.put("host", "127.0.0.1");
        backend = new TcpBackendFactory().create(config, () -> INITIATOR);
        arena = Arena.ofShared();
        MemorySegment memory = arena.allocate(BYTES, 4096);
        backend.register(Allocation.host(memory));
        Peer peer = backend.connect(metadata);
        PreparedList local = backend.prepareLocal(TcpPeerProcess.blocksOf(memory.address(), BLOCKS, BLOCK_BYTES));
        PreparedList remote = backend.prepareRemote(peer, TcpPeerProcess.blocksOf(remoteAddress, BLOCKS, BLOCK_BYTES));
        return new Link(child, metadata, peer, local, remote, memory, remoteAddress);
    }

    private long post(TransferOp op, Link link, String notification)
    {
        return backend.post(new TransferRequest().start(op).local(link.local(), ALL).remote(link.remote(), ALL).count(BLOCKS)
                .notification(notification == null ? null : notification.getBytes(StandardCharsets.UTF_8)).grantKey(TcpPeerProcess.KEY));
    }

    /** Waits, parked rather than polling hot, until the transfer ends or the deadline passes. */
    private TransferStatus awaitEnd(long handle, long deadlineNanos)
    {
        backend.wakeOnProgress(Thread.currentThread());
        TransferStatus status = backend.status(handle);
        while (!status.terminal() && System.nanoTime() - deadlineNanos < 0) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
            status = backend.status(handle);
        }
        return status;
    }

    private TransferStatus awaitEnd(long handle, Duration timeout)
    {
        return awaitEnd(handle, System.nanoTime() + timeout.toNanos());
    }

    private static long millisSince(long nanos)
    {
        return (System.nanoTime() - nanos) / 1_000_000;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransferOp.class)
    @Timeout(120)
    void everyByteMovesBetweenTheProcessesAndTheNotificationFollowsTheData(TransferOp op) throws Exception
    {
        // WRITE: this side's pattern lands in the target's zeroed blocks; READ: the target's pattern lands here
        boolean write = op == TransferOp.WRITE;
        long seed = write ? 7 : 11;
        Link link = link(write ? "zero" : Long.toString(seed), Map.of());
        if (write) {
            TcpPeerProcess.fill(link.memory(), BLOCK_BYTES, seed);
            // the check can fail: the target's blocks are zeros before the WRITE
            link.child().send("VERIFY " + seed);
            String before = link.child().expect("CHECKED", STEP);
            assertTrue(before.startsWith("CHECKED mismatch at byte 0 "), before);
        }
        else {
            assertEquals(0, TcpPeerProcess.firstMismatch(link.memory(), BLOCK_BYTES, seed));
        }
        String notification = (write ? "pushed:" : "pulled:") + BYTES;
        long started = System.nanoTime();
        long handle = post(op, link, notification);
        TransferStatus status = awaitEnd(handle, STEP);
        long moveMillis = millisSince(started);
        assertEquals(TransferStatus.DONE, status, () -> backend.failure(handle).map(Throwable::getMessage).orElse("still " + backend.status(handle)));
        // the notification goes out after the target answered, so every byte is in place when it arrives
        assertEquals("NOTIFIED " + notification + " from " + INITIATOR, link.child().expect("NOTIFIED", STEP));
        if (write) {
            link.child().send("VERIFY " + seed);
            assertEquals("CHECKED " + BYTES + " bytes match", link.child().expect("CHECKED", STEP), link.child()::transcript);
        }
        else {
            assertEquals(-1, TcpPeerProcess.firstMismatch(link.memory(), BLOCK_BYTES, seed), "first byte that differs from the target's pattern");
        }
        System.out.printf(Locale.ROOT, "%s of %d MiB between two JVMs took %d ms%n", op, BYTES >> 20, moveMillis);
        backend.release(handle);
        assertEquals(new BackendResources(1, 2, 1, 0), backend.resources());
        finish(link.child());
        assertClosesToNothing();
    }

    /**
     * A long stream of transfers is in flight when the target dies: its kernel closes its socket,
     * and this side, reading the end of the stream, fails every transfer the connection carried with
     * one TRANSFER_FAILED naming the peer. Transfers end in the order they were queued, so those that
     * finished are a prefix of the stream.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(TransferOp.class)
    @Timeout(120)
    void aPeerKilledMidStreamFailsEveryTransferInFlightAndTheSurvivorStillCloses(TransferOp op) throws Exception
    {
        Link link = link("5", Map.of());
        // 128 transfers of 16 MiB each: 2 GiB, far more than moves before the kill
        long[] handles = new long[128];
        for (int i = 0; i < handles.length; i++) {
            handles[i] = post(op, link, "stream-" + i);
        }
        assertEquals(TransferStatus.DONE, awaitEnd(handles[0], STEP), () -> backend.failure(handles[0]).map(Throwable::getMessage).orElse("still running"));
        long killed = System.nanoTime();
        link.child().kill();
        long deadline = killed + KILL_NOTICED.toNanos();
        int done = 0;
        List<KvBridgeException> failures = new ArrayList<>();
        for (int i = 0; i < handles.length; i++) {
            TransferStatus status = awaitEnd(handles[i], deadline);
            int index = i;
            assertTrue(status.terminal(), () -> "transfer " + index + " still " + backend.status(handles[index]) + " " + KILL_NOTICED + " after the kill");
            if (status == TransferStatus.DONE) {
                assertTrue(failures.isEmpty(), () -> "transfer " + index + " finished after an earlier one failed: " + failures.getFirst().getMessage());
                done++;
            }
            else {
                failures.add(backend.failure(handles[i]).orElseThrow());
            }
        }
        long endedMillis = millisSince(killed);
        System.out.printf(Locale.ROOT, "%s: %d transfers done before the kill, %d failed within %d ms of it: %s%n", op, done, failures.size(), endedMillis,
                failures.isEmpty() ? "-" : failures.getFirst().getMessage());
        assertFalse(failures.isEmpty(), "no transfer was still in flight when the target was killed");
        Set<String> messages = new HashSet<>();
        for (KvBridgeException failure : failures) {
            assertEquals(ErrorCode.TRANSFER_FAILED, failure.code(), failure::getMessage);
            messages.add(failure.getMessage());
        }
        // one connection closed, one reason for all: the end of the stream, or a reset when bytes were still unread there
        assertEquals(1, messages.size(), messages::toString);
        assertTrue(Pattern.compile("peer 'target' \\(127\\.0\\.0\\.1:\\d+\\): (the peer closed the connection|reading failed: .+|writing failed: .+)$")
                .matcher(messages.iterator().next()).find(), messages::toString);
        assertPeerDead(link);
        for (long handle : handles) {
            backend.release(handle);
        }
        // the dead peer stays counted until it is disconnected or the instance closed
        assertEquals(new BackendResources(1, 2, 1, 0), backend.resources());
        assertClosesToNothing();
    }

    /**
     * The target dies while nothing is in flight: the next post either is refused at once (this side
     * already read the end of the stream) or is taken and fails as soon as the end is read; either
     * way the peer is dead from then on, and connecting to it again finds nobody listening.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(TransferOp.class)
    @Timeout(120)
    void aPeerKilledBetweenTransfersFailsTheNextPostFast(TransferOp op) throws Exception
    {
        Link link = link("5", Map.of());
        long first = post(op, link, null);
        assertEquals(TransferStatus.DONE, awaitEnd(first, STEP));
        backend.release(first);
        link.child().kill();
        long started = System.nanoTime();
        String outcome;
        try {
            long next = post(op, link, "after-the-kill");
            TransferStatus status = awaitEnd(next, KILL_NOTICED);
            assertEquals(TransferStatus.FAILED, status, "the transfer posted after the kill");
            KvBridgeException failure = backend.failure(next).orElseThrow();
            // TRANSFER_FAILED: the connection closed under it; PEER_UNKNOWN: it reached the owner after the close
            assertTrue(failure.code() == ErrorCode.TRANSFER_FAILED || failure.code() == ErrorCode.PEER_UNKNOWN, failure::getMessage);
            assertTrue(failure.getMessage().contains("peer 'target'"), failure::getMessage);
            backend.release(next);
            outcome = "taken, then " + failure.getMessage();
        }
        catch (KvBridgeException refused) {
            assertEquals(ErrorCode.PEER_UNKNOWN, refused.code(), refused::getMessage);
            assertTrue(refused.getMessage().contains("cannot post to peer 'target'"), refused::getMessage);
            outcome = "refused: " + refused.getMessage();
        }
        long failedMillis = millisSince(started);
        System.out.printf(Locale.ROOT, "%s after the kill: %s, in %d ms%n", op, outcome, failedMillis);
        assertTrue(failedMillis < 2_000, () -> "the post after the kill failed only after " + failedMillis + " ms");
        assertPeerDead(link);
        // nobody listens on the dead peer's port: a new connection is refused by the kernel, not left to connect-timeout-ms
        long connecting = System.nanoTime();
        assertCode(ErrorCode.PEER_UNKNOWN, () -> backend.connect(link.metadata()), "cannot connect to peer 'target'");
        long connectMillis = millisSince(connecting);
        assertTrue(connectMillis < 5_000, () -> "reconnecting to the dead peer took " + connectMillis + " ms");
        assertEquals(new BackendResources(1, 2, 1, 0), backend.resources());
        assertClosesToNothing();
    }

    /**
     * A stopped target keeps its socket open and answers nothing: only {@code transfer-timeout-ms}
     * ends its transfers, which must not end before it nor long after, and this side must sleep, not
     * spin, while it waits. The deadline fails the transfers, not the peer: continued, the target
     * takes a new transfer whole, and no failed transfer's notification ever reaches it. Stopped
     * again, with a transfer in flight to it, it does not hold up this side's close.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(TransferOp.class)
    @Timeout(120)
    void aTransferToAStoppedPeerFailsByItsDeadlineWithoutBurningCpu(TransferOp op) throws Exception
    {
        boolean write = op == TransferOp.WRITE;
        long targetSeed = 5;
        long ownSeed = 9;
        Link link = link(Long.toString(targetSeed), Map.of("transfer-timeout-ms", Integer.toString(TRANSFER_TIMEOUT_MS)));
        TcpPeerProcess.fill(link.memory(), BLOCK_BYTES, ownSeed);
        long warmUp = post(op, link, "warm-up");
        assertEquals(TransferStatus.DONE, awaitEnd(warmUp, STEP));
        backend.release(warmUp);
        assertEquals("NOTIFIED warm-up from " + INITIATOR, link.child().expect("NOTIFIED", STEP));
        link.child().pause();
        boolean stopped = true;
        try {
            long ownerCpuBefore = ownerCpuNanos();
            long cpuBefore = processCpuNanos();
            long started = System.nanoTime();
            // a few in flight: the first frames sit in the socket buffers, the rest in this side's queue
            long[] handles = new long[4];
            for (int i = 0; i < handles.length; i++) {
                handles[i] = post(op, link, "never");
            }
            long deadline = started + TimeUnit.MILLISECONDS.toNanos(TRANSFER_TIMEOUT_MS) + DEADLINE_SLACK.toNanos();
            TransferStatus[] statuses = new TransferStatus[handles.length];
            long[] endedMillis = new long[handles.length];
            for (int i = 0; i < handles.length; i++) {
                statuses[i] = awaitEnd(handles[i], deadline);
                endedMillis[i] = millisSince(started);
            }
            long waitedNanos = System.nanoTime() - started;
            double share = (double) (processCpuNanos() - cpuBefore) / waitedNanos;
            double ownerShare = (double) (ownerCpuNanos() - ownerCpuBefore) / waitedNanos;
            System.out.printf(Locale.ROOT, "%s to a stopped peer: %s after %s ms; this JVM used %.1f %% of a core meanwhile, its owner thread %.2f %%%n",
                    op, Arrays.toString(statuses), Arrays.toString(endedMillis), 100 * share, 100 * ownerShare);
            for (int i = 0; i < handles.length; i++) {
                int index = i;
                assertEquals(TransferStatus.FAILED, statuses[i], () -> "transfer " + index + " to the stopped peer");
                assertTrue(endedMillis[i] >= TRANSFER_TIMEOUT_MS, () -> "transfer " + index + " failed after " + endedMillis[index]
                        + " ms, before transfer-timeout-ms");
                KvBridgeException failure = backend.failure(handles[i]).orElseThrow();
                assertEquals(ErrorCode.DEADLINE_EXCEEDED, failure.code(), failure::getMessage);
                assertTrue(failure.getMessage().contains(op + " of 1 runs to peer 'target' (127.0.0.1:") && failure.getMessage().contains(
                        "did not finish within transfer-timeout-ms=" + TRANSFER_TIMEOUT_MS), failure::getMessage);
                backend.release(handles[i]);
            }
            assertTrue(share < MAX_WAITING_CORE_SHARE, () -> String.format(Locale.ROOT, "this JVM used %.1f %% of a core while waiting", 100 * share));

            // continued, the target reads what the failed transfers left on the stream, then a new transfer whole
            link.child().resume();
            stopped = false;
            if (!write) {
                link.memory().fill((byte) 0);
            }
            long recovered = post(op, link, "recovered");
            assertEquals(TransferStatus.DONE, awaitEnd(recovered, STEP), () -> backend.failure(recovered).map(Throwable::getMessage).orElse("still running"));
            backend.release(recovered);
            // a notification of a failed transfer would come first
            assertEquals("NOTIFIED recovered from " + INITIATOR, link.child().expect("NOTIFIED", STEP));
            if (write) {
                link.child().send("VERIFY " + ownSeed);
                assertEquals("CHECKED " + BYTES + " bytes match", link.child().expect("CHECKED", STEP));
            }
            else {
                assertEquals(-1, TcpPeerProcess.firstMismatch(link.memory(), BLOCK_BYTES, targetSeed), "first byte that differs from the target's pattern");
            }

            // stopped again, with a transfer in flight to it: close ends that transfer and returns
            link.child().pause();
            stopped = true;
            post(op, link, "cut-off");
            assertEquals(new BackendResources(1, 2, 1, 1), backend.resources());
            assertClosesToNothing();
        }
        finally {
            if (stopped) {
                link.child().resume();
            }
        }
        finish(link.child());
    }

    /** This JVM's CPU time so far, all threads. */
    private static long processCpuNanos()
    {
        long nanos = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        assertTrue(nanos > 0, "the process CPU time is not available here");
        return nanos;
    }

    /** CPU time of this side's owner thread so far, for the report. */
    private static long ownerCpuNanos()
    {
        Thread owner = Thread.getAllStackTraces().keySet().stream().filter(thread -> thread.getName().equals("kvbridge-tcp-" + INITIATOR)).findFirst()
                .orElseThrow();
        return ManagementFactory.getThreadMXBean().getThreadCpuTime(owner.threadId());
    }

    /** Posts, preparing and notifying all refuse a dead peer with PEER_UNKNOWN naming it. */
    private void assertPeerDead(Link link)
    {
        assertCode(ErrorCode.PEER_UNKNOWN, () -> post(TransferOp.WRITE, link, null), "cannot post to peer 'target'", "its connection closed");
        assertCode(ErrorCode.PEER_UNKNOWN, () -> post(TransferOp.READ, link, null), "cannot post to peer 'target'");
        assertCode(ErrorCode.PEER_UNKNOWN, () -> backend.prepareRemote(link.peer(), TcpPeerProcess.blocksOf(link.remoteAddress(), 1, BLOCK_BYTES)),
                "peer 'target' cannot be used");
        assertCode(ErrorCode.PEER_UNKNOWN, () -> backend.notify(link.peer(), new byte[] {1}), "peer 'target' cannot be used");
    }

    /** close() returns in time, holds nothing after, and its owner thread is gone. */
    private void assertClosesToNothing()
    {
        assertTrue(ownerThreadAlive(), "no owner thread before close()");
        long closing = System.nanoTime();
        backend.close();
        long closeMillis = millisSince(closing);
        assertTrue(closeMillis < CLOSE_BOUND.toMillis(), () -> "close took " + closeMillis + " ms");
        assertEquals(BackendResources.NONE, backend.resources());
        assertFalse(ownerThreadAlive(), "the owner thread outlived close()");
    }

    private static boolean ownerThreadAlive()
    {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(thread -> thread.getName().equals("kvbridge-tcp-" + INITIATOR));
    }

    /** Lets the target close and exit; it must have received no notification the test did not expect yet. */
    private static void finish(ChildJvm child) throws InterruptedException
    {
        child.send("EXIT");
        List<String> before = new ArrayList<>();
        child.expect("CLOSED", STEP, before);
        assertEquals(List.of(), before, "the target's last lines");
        assertEquals(0, child.awaitExit(STEP), child::transcript);
    }
}
