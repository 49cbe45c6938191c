package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two JVMs, each with its own NIXL agent, moving bytes both ways: this JVM pushes blocks into a
 * child JVM's memory and pulls others out, each with a notification, and every byte on both sides
 * is checked. The child runs {@link NixlPeerProcess} with this JVM's class path.
 */
abstract class AbstractNixlTwoProcessTest
{
    static final int BLOCKS = 64;
    static final int BLOCK_BYTES = 16 * 1024;
    static final int PARENT_SEED = 1;
    static final int CHILD_SEED = 2;
    static final Duration DEADLINE = Duration.ofSeconds(30);
    // the in-flight kill: requests of 64 x 1 MiB, at most 8 of them running, the peer killed 300 ms into posting
    static final int LARGE_BLOCKS = 64;
    static final int LARGE_BLOCK_BYTES = 1 << 20;
    static final int LARGE_IN_FLIGHT = 8;
    static final Duration KILL_AFTER = Duration.ofMillis(300);
    static final Duration DETECTION_DEADLINE = Duration.ofSeconds(5);

    private final List<Child> children = new ArrayList<>();
    private final List<TransferBackend> backends = new ArrayList<>();
    Arena arena;

    /** @return the library file or directory, or null to search. */
    abstract String library();

    /** @return whether the library may be the test fake. */
    abstract boolean allowFake();

    /** @return environment variables the child JVM needs in addition to this one's. */
    Map<String, String> childEnvironment()
    {
        return Map.of();
    }

    /** Called after both directions moved their bytes, to check transport-specific facts. */
    void afterTransfers()
    {
    }

    @BeforeEach
    void openArena()
    {
        arena = Arena.ofShared();
    }

    @AfterEach
    void stopAll()
    {
        backends.forEach(TransferBackend::close);
        children.forEach(child -> child.process.destroyForcibly());
        arena.close();
    }

    TransferBackend newBackend()
    {
        String name = "parent-" + UUID.randomUUID();
        TransferBackend backend = new NixlBackendFactory(library(), allowFake()).create(Map.of(NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE, "true"), () -> name);
        backends.add(backend);
        return backend;
    }

    /** A running child JVM and its output lines. */
    static final class Child
    {
        final Process process;
        final PrintStream commands;
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

        Child(Process process)
        {
            this.process = process;
            this.commands = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
            Thread.ofPlatform().daemon().name("nixl-child-output").start(() -> {
                try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = reader.readLine()) != null) {
                        lines.add(line);
                    }
                }
                catch (IOException ignored) {
                    // the child is gone: expect() reports the missing line
                }
            });
        }

        /** Waits for the next line, which must start with the word given; returns the rest split. */
        String[] expect(String word) throws InterruptedException
        {
            String line = lines.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            assertNotNull(line, () -> "the child JVM said nothing within " + DEADLINE + " (alive=" + process.isAlive() + "); its stderr is in the test output");
            assertTrue(line.startsWith(word), () -> "expected '" + word + "' from the child, got: " + line);
            return line.split(" ");
        }

        void send(String command)
        {
            commands.println(command);
        }
    }

    Child startChild(String name) throws IOException
    {
        return startChild(name, Map.of());
    }

    Child startChild(String name, Map<String, String> extraEnvironment) throws IOException
    {
        return startChild(name, extraEnvironment, BLOCKS, BLOCK_BYTES);
    }

    Child startChild(String name, Map<String, String> extraEnvironment, int blocks, int blockBytes) throws IOException
    {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new ArrayList<>(List.of(java.toString(), "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path")));
        String property = System.getProperty(NixlBackendFactory.LIBRARY_PROPERTY);
        if (property != null) {
            command.add("-D" + NixlBackendFactory.LIBRARY_PROPERTY + "=" + property);
        }
        command.addAll(List.of(NixlPeerProcess.class.getName(), library() == null ? "" : library(), String.valueOf(allowFake()), name,
                String.valueOf(blocks), String.valueOf(blockBytes), String.valueOf(CHILD_SEED)));
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        builder.environment().putAll(childEnvironment());
        builder.environment().putAll(extraEnvironment);
        Child child = new Child(builder.start());
        children.add(child);
        return child;
    }

    static DescriptorList blocks(long base)
    {
        return blocks(base, BLOCKS, BLOCK_BYTES);
    }

    static DescriptorList blocks(long base, int blocks, int blockBytes)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, blocks);
        for (int b = 0; b < blocks; b++) {
            builder.add(base + (long) b * blockBytes, blockBytes);
        }
        return builder.build();
    }

    TransferStatus awaitTerminal(TransferBackend backend, long handle)
    {
        return NixlTestSupport.awaitTerminal(backend, handle, DEADLINE);
    }

    private static String csv(int[] blocks)
    {
        StringBuilder text = new StringBuilder();
        for (int block : blocks) {
            text.append(text.isEmpty() ? "" : ",").append(block);
        }
        return text.toString();
    }

    @Test
    void pushAndPullBetweenTwoJvmsMoveEveryByte() throws Exception
    {
        TransferBackend parent = newBackend();
        MemorySegment memory = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        Patterns.fill(memory, PARENT_SEED);
        MemorySegment expected = arena.allocate(memory.byteSize(), 8).copyFrom(memory);
        parent.register(Allocation.host(memory));

        String childName = "child-" + UUID.randomUUID();
        Child child = startChild(childName);
        String[] ready = child.expect("READY");
        Peer peer = parent.connect(Base64.getDecoder().decode(ready[1]));
        assertEquals(childName, peer.name());
        long childBase = Long.parseLong(ready[2]);
        child.send("CONNECT " + Base64.getEncoder().encodeToString(parent.localMetadata()));
        assertEquals(parent.agentName(), child.expect("CONNECTED")[1]);

        PreparedList local = parent.prepareLocal(blocks(memory.address()));
        PreparedList remote = parent.prepareRemote(peer, blocks(childBase));

        // push: parent block b lands in child block b, then the child checks all of its memory
        int[] pushed = {3, 0, 63, 17, 18};
        long write = parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, pushed).remote(remote, pushed).count(pushed.length)
                .notification("req-1".getBytes(StandardCharsets.UTF_8)));
        assertEquals(TransferStatus.DONE, awaitTerminal(parent, write), () -> String.valueOf(parent.failure(write)));
        parent.release(write);
        child.send("AWAIT req-1 " + PARENT_SEED + " " + csv(pushed));
        assertEquals(List.of("RECEIVED", parent.agentName(), "intact"), List.of(child.expect("RECEIVED")));

        // pull: child blocks come into the parent; the child learns of it only after the data
        int[] pulled = {5, 6, 60, 61};
        long read = parent.post(new TransferRequest().start(TransferOp.READ).local(local, pulled).remote(remote, pulled).count(pulled.length)
                .notification("pulled".getBytes(StandardCharsets.UTF_8)));
        assertEquals(TransferStatus.DONE, awaitTerminal(parent, read), () -> String.valueOf(parent.failure(read)));
        parent.release(read);
        for (int block : pulled) {
            long offset = (long) block * BLOCK_BYTES;
            Patterns.fill(expected, offset, offset + BLOCK_BYTES, CHILD_SEED);
        }
        assertEquals(-1, memory.mismatch(expected), "the parent's memory after the pull");
        child.send("AWAIT pulled " + CHILD_SEED + " -");
        assertEquals(List.of("RECEIVED", parent.agentName(), "intact"), List.of(child.expect("RECEIVED")));

        // a notification without data, the other way
        child.send("NOTIFY ack-pulled");
        child.expect("NOTIFIED");
        List<String> received = new ArrayList<>();
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (received.isEmpty() && System.nanoTime() < deadline) {
            parent.drainNotifications((sender, message) -> received.add(sender + ":" + new String(message, StandardCharsets.UTF_8)));
        }
        assertEquals(List.of(childName + ":ack-pulled"), received);
        afterTransfers();

        child.send("EXIT");
        child.expect("CLOSED");
        assertTrue(child.process.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS), "the child JVM exits");
        assertEquals(0, child.process.exitValue());
    }

    @Test
    void peerKilledBetweenTransfersIsNamedByEveryLaterCall() throws Exception
    {
        killBetweenTransfers((parent, peer, local, remote) -> {
            long handle = parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {1}).remote(remote, new int[] {1})
                    .count(1));
            assertEquals(TransferStatus.FAILED, awaitTerminal(parent, handle));
            KvBridgeException failure = parent.failure(handle).orElseThrow();
            parent.release(handle);
            throw failure;
        });
    }

    @Test
    void peerKilledBetweenTransfersFailsTheFirstNotificationNamingIt() throws Exception
    {
        killBetweenTransfers((parent, peer, local, remote) -> parent.notify(peer, "after-death".getBytes(StandardCharsets.UTF_8)));
    }

    /** The first call after a peer's death, which must fail naming the peer (by throwing). */
    @FunctionalInterface
    interface FirstCall
    {
        void run(TransferBackend parent, Peer peer, PreparedList local, PreparedList remote) throws KvBridgeException;
    }

    /** Kills the peer after one transfer, repeats the first call until it fails, then checks every later call. */
    private void killBetweenTransfers(FirstCall firstCall) throws Exception
    {
        TransferBackend parent = newBackend();
        MemorySegment memory = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        parent.register(Allocation.host(memory));
        Child child = startChild("child-" + UUID.randomUUID());
        String[] ready = child.expect("READY");
        Peer peer = parent.connect(Base64.getDecoder().decode(ready[1]));
        PreparedList local = parent.prepareLocal(blocks(memory.address()));
        PreparedList remote = parent.prepareRemote(peer, blocks(Long.parseLong(ready[2])));
        long first = parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {0}).remote(remote, new int[] {0}).count(1));
        assertEquals(TransferStatus.DONE, awaitTerminal(parent, first), () -> String.valueOf(parent.failure(first)));
        parent.release(first);

        child.process.destroyForcibly();
        assertTrue(child.process.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS));
        long killed = System.nanoTime();
        // the first call after the death fails, at once or after some that NIXL still accepted; NIXL then drops the peer
        KvBridgeException failure = null;
        int accepted = 0;
        while (failure == null && System.nanoTime() - killed < DETECTION_DEADLINE.toNanos()) {
            try {
                firstCall.run(parent, peer, local, remote);
                accepted++;
            }
            catch (KvBridgeException e) {
                failure = e;
            }
        }
        long detectedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
        System.out.printf("%s: peer killed between transfers, %d call(s) accepted, then one failed after %d ms: %s%n", getClass().getSimpleName(), accepted,
                detectedMillis, failure);
        assertNotNull(failure, "no call failed within " + DETECTION_DEADLINE + " of the peer's death (" + accepted + " accepted)");
        assertNamesThePeer(failure, peer);
        assertPeerUnknownToEveryLaterCall(parent, peer, local, remote, blocks(Long.parseLong(ready[2])), 2);
    }

    @ParameterizedTest
    @EnumSource(TransferOp.class)
    void peerKilledMidTransferFailsItWithinTheDeadlineAndIsNamedByEveryLaterCall(TransferOp op) throws Exception
    {
        TransferBackend parent = newBackend();
        MemorySegment memory = arena.allocate((long) LARGE_BLOCKS * LARGE_BLOCK_BYTES, 4096);
        parent.register(Allocation.host(memory));
        Child child = startChild("child-" + UUID.randomUUID(), Map.of(), LARGE_BLOCKS, LARGE_BLOCK_BYTES);
        String[] ready = child.expect("READY");
        Peer peer = parent.connect(Base64.getDecoder().decode(ready[1]));
        PreparedList local = parent.prepareLocal(blocks(memory.address(), LARGE_BLOCKS, LARGE_BLOCK_BYTES));
        PreparedList remote = parent.prepareRemote(peer, blocks(Long.parseLong(ready[2]), LARGE_BLOCKS, LARGE_BLOCK_BYTES));
        int[] all = new int[LARGE_BLOCKS];
        for (int b = 0; b < all.length; b++) {
            all[b] = b;
        }

        // requests of 64 MiB are posted without pause while another thread kills the peer: over UCX's cma the bytes move inside
        // the post, over TCP or the fake's socket afterwards, so the kill lands inside a post or a running request either way
        AtomicLong killedAt = new AtomicLong();
        Thread killer = Thread.ofPlatform().name("nixl-peer-killer").start(() -> {
            try {
                Thread.sleep(KILL_AFTER.toMillis());
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            killedAt.set(System.nanoTime());
            child.process.destroyForcibly();
        });
        List<Long> handles = new ArrayList<>();
        KvBridgeException refused = null;
        long end = System.nanoTime() + DEADLINE.toNanos();
        int posted = 0;
        while (refused == null && System.nanoTime() < end && !anyFailed(parent, handles)) {
            TransferStatus oldest = handles.size() < LARGE_IN_FLIGHT ? null : parent.status(handles.getFirst());
            if (oldest == TransferStatus.DONE) {
                parent.release(handles.removeFirst());
            }
            else if (oldest != null) {
                Thread.onSpinWait();
            }
            else {
                try {
                    handles.add(parent.post(new TransferRequest().start(op).local(local, all).remote(remote, all).count(all.length)
                            .notification(("large-" + posted++).getBytes(StandardCharsets.UTF_8))));
                }
                catch (KvBridgeException e) {
                    refused = e;
                }
            }
        }
        long firstFailure = System.nanoTime();
        long killed = killedAt.get();
        assertTrue(killed != 0 && firstFailure > killed, "a transfer failed before the peer was killed");
        killer.join();
        int failed = 0;
        KvBridgeException running = null;
        for (long handle : handles) {
            if (awaitTerminal(parent, handle) == TransferStatus.FAILED) {
                KvBridgeException failure = parent.failure(handle).orElseThrow();
                running = running == null ? failure : running;
                assertNamesThePeer(failure, peer);
                failed++;
            }
            parent.release(handle);
        }
        long allMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
        long detectedMillis = TimeUnit.NANOSECONDS.toMillis(firstFailure - killed);
        System.out.printf("%s: peer killed during %s after %d posts of 64 MiB: %s, %d running request(s) failed; failure seen %d ms after SIGKILL, all ended after %d ms%n  refused: %s%n  running: %s%n",
                getClass().getSimpleName(), op, posted, refused == null ? "no post refused" : "a post refused", failed, detectedMillis, allMillis, refused, running);
        assertTrue(refused != null || running != null, "the peer was killed, yet no post was refused and no request failed");
        if (refused != null) {
            assertNamesThePeer(refused, peer);
        }
        assertTrue(allMillis < DETECTION_DEADLINE.toMillis(), () -> "the requests in flight ended " + allMillis + " ms after the peer's death");
        assertPeerUnknownToEveryLaterCall(parent, peer, local, remote, blocks(Long.parseLong(ready[2])), 0);
    }

    private static boolean anyFailed(TransferBackend backend, List<Long> handles)
    {
        for (long handle : handles) {
            if (backend.status(handle) == TransferStatus.FAILED) {
                return true;
            }
        }
        return false;
    }

    private static void assertNamesThePeer(KvBridgeException failure, Peer peer)
    {
        assertTrue(failure.code() == ErrorCode.TRANSFER_FAILED || failure.code() == ErrorCode.PEER_UNKNOWN, failure::toString);
        assertTrue(failure.getMessage().contains(peer.name()), () -> "the failure names the peer: " + failure.getMessage());
    }

    /** After a dead peer was found out, every call about it names it as unknown before NIXL is asked; disconnect forgets it. */
    static void assertPeerUnknownToEveryLaterCall(TransferBackend parent, Peer peer, PreparedList local, PreparedList remote, DescriptorList remoteBlocks,
            int block)
    {
        int[] pair = {block};
        KvBridgeException later = NixlTestSupport.assertFails(ErrorCode.PEER_UNKNOWN, peer.name(),
                () -> parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, pair).remote(remote, pair).count(1)));
        assertTrue(later.getMessage().contains("connect again"), later.getMessage());
        NixlTestSupport.assertFails(ErrorCode.PEER_UNKNOWN, peer.name(), () -> parent.post(new TransferRequest().start(TransferOp.READ).local(local, pair).remote(remote, pair).count(1)));
        NixlTestSupport.assertFails(ErrorCode.PEER_UNKNOWN, peer.name(), () -> parent.notify(peer, new byte[] {1}));
        NixlTestSupport.assertFails(ErrorCode.PEER_UNKNOWN, peer.name(), () -> parent.prepareRemote(peer, remoteBlocks));
        parent.disconnect(peer);
        assertEquals(0, parent.resources().peers());
    }
}
