package io.kvbridge.backend.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.ChildJvm;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A target out of file descriptors: its limit is lowered (prlimit) to a few dozen above what it
 * holds, and hundreds of silent sockets wait in its listener's backlog. Accepting fails with
 * EMFILE; the owner thread must not spin on a listener the selector reports ready round after
 * round (the old loop took a whole core), and a legitimate peer is still accepted and served once
 * the oldest silent sockets are shed.
 */
@Timeout(120)
final class TcpDescriptorExhaustionTest
{
    private static final String TARGET = "fd-target";
    private static final int BLOCKS = 4;
    private static final int BLOCK_BYTES = 64 * 1024;
    private static final int FLOOD = 600;
    private static final int HEADROOM = 40;
    private static final Duration STEP = Duration.ofSeconds(30);
    // the child's watch on this JVM reads /proc, which fails without descriptors: ChildJvm.close() ends the child instead
    private static final List<String> CHILD_OPTIONS = List.of("--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1", "-Dkvbridge.test.noParentWatch=true");
    /** Of one core, what the owner may use while accepting keeps failing: it sleeps between tries (2.5-3 %; the old loop 43 % on two shared cores). */
    private static final double MAX_CORE_SHARE = 0.15;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private ChildJvm child;

    @AfterEach
    void closeAll() throws InterruptedException
    {
        for (int i = opened.size() - 1; i >= 0; i--) {
            try {
                opened.get(i).close();
            }
            catch (Exception e) {
                // closing what a test left open: nothing to check
            }
        }
        if (child != null) {
            child.close();
        }
    }

    @Test
    void anOwnerOutOfDescriptorsBacksOffAndStillServesALegitimatePeer() throws Exception
    {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")) && Files.isExecutable(Path.of("/usr/bin/prlimit")), "needs Linux /proc and prlimit");
        child = ChildJvm.start(TARGET, CHILD_OPTIONS, TcpPeerProcess.class, TARGET, Integer.toString(BLOCKS), Integer.toString(BLOCK_BYTES), "7",
                "connect-timeout-ms=3000");
        byte[] metadata = Base64.getDecoder().decode(child.expect("METADATA", STEP).substring("METADATA ".length()));
        long remoteAddress = Long.parseLong(child.expect("REGION", STEP).split(" ")[1]);
        long pid = child.pid();
        long held;
        try (Stream<Path> fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            held = fds.count();
        }
        long limit = held + HEADROOM;
        Process prlimit = new ProcessBuilder("/usr/bin/prlimit", "--pid", Long.toString(pid), "--nofile=" + limit + ":" + limit).inheritIO().start();
        assertTrue(prlimit.waitFor(10, TimeUnit.SECONDS) && prlimit.exitValue() == 0, "prlimit could not lower the target's descriptor limit");

        int port = TcpMetadata.decode(metadata).port();
        for (int i = 0; i < FLOOD; i++) {
            SocketChannel channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
            opened.add(channel);
        }
        Path owner;
        try {
            owner = ownerThread(pid);
        }
        catch (AssertionError e) {
            child.send("PING");
            throw new AssertionError(e.getMessage() + "; target: " + child.expect("PONG", STEP), e);
        }
        // accepting fails now; let the owner settle into its backoff, then measure it
        Thread.sleep(500);
        long ticksBefore = cpuTicks(owner);
        long started = System.nanoTime();
        Thread.sleep(2_000);
        long ticksAfter;
        try {
            ticksAfter = cpuTicks(owner);
        }
        catch (IOException e) {
            child.send("PING");
            throw new AssertionError("the target's owner thread ended: " + child.expect("PONG", STEP), e);
        }
        double share = (ticksAfter - ticksBefore) / 100.0 / ((System.nanoTime() - started) / 1e9);
        assertTrue(share < MAX_CORE_SHARE, () -> String.format("the owner used %.0f %% of a core while accepting kept failing", share * 100));

        // a legitimate peer is accepted once the oldest silent sockets are shed, and served
        TransferBackend legitimate = new TcpBackendFactory().create(Map.of("host", "127.0.0.1"), () -> "legitimate");
        opened.add(legitimate);
        Arena arena = Arena.ofShared();
        opened.add(arena);
        MemorySegment memory = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        legitimate.register(Allocation.host(memory));
        Peer peer;
        try {
            peer = legitimate.connect(metadata);
        }
        catch (RuntimeException e) {
            child.send("PING");
            throw new AssertionError("the target: " + child.expect("PONG", STEP), e);
        }
        PreparedList local = legitimate.prepareLocal(TcpPeerProcess.blocksOf(memory.address(), BLOCKS, BLOCK_BYTES));
        PreparedList remote = legitimate.prepareRemote(peer, TcpPeerProcess.blocksOf(remoteAddress, BLOCKS, BLOCK_BYTES));
        int[] all = {0, 1, 2, 3};
        long handle = legitimate.post(new TransferRequest().start(TransferOp.READ).local(local, all).remote(remote, all).count(BLOCKS)
                .grantKey(TcpPeerProcess.KEY));
        long deadline = System.nanoTime() + STEP.toNanos();
        while (!legitimate.status(handle).terminal() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(1_000_000);
        }
        assertEquals(TransferStatus.DONE, legitimate.status(handle), () -> "READ: " + legitimate.failure(handle));
        legitimate.release(handle);
        MemorySegment expected = arena.allocate(memory.byteSize(), 4096);
        TcpPeerProcess.fill(expected, BLOCK_BYTES, 7);
        assertEquals(-1, memory.mismatch(expected), "the blocks read from the target");
        child.send("PING");
        assertEquals("PONG no problem", child.expect("PONG", STEP), "the target's health");
    }

    /** {@return the stat file of the target's owner thread, named kvbridge-tcp-NAME (cut to 15 characters by the kernel)} */
    private static Path ownerThread(long pid) throws IOException
    {
        String comm = ("kvbridge-tcp-" + TARGET).substring(0, 15);
        try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            for (Path task : tasks.toList()) {
                try {
                    if (Files.readString(task.resolve("comm"), StandardCharsets.UTF_8).strip().equals(comm)) {
                        return task.resolve("stat");
                    }
                }
                catch (IOException e) {
                    // the thread ended meanwhile
                }
            }
        }
        List<String> names = new ArrayList<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            for (Path task : tasks.toList()) {
                names.add(Files.readString(task.resolve("comm"), StandardCharsets.UTF_8).strip());
            }
        }
        throw new AssertionError("no thread " + comm + " in process " + pid + ", only " + names);
    }

    /** {@return user and system time of a thread, in clock ticks (100 a second)} */
    private static long cpuTicks(Path stat) throws IOException
    {
        String line = Files.readString(stat, StandardCharsets.UTF_8);
        String[] fields = line.substring(line.lastIndexOf(')') + 2).split(" ");
        // after the name: state is field 3, utime field 14, stime field 15
        return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    }
}
