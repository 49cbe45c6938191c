package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BLOCKS;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BLOCK_BYTES;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BYTES;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.blocks;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.pattern;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.range;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcSockets;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The control socket against hostile peers, over the fake driver: a process of another user and a
 * process of the same user without the connection key obtain no descriptor; an authenticated peer
 * obtains none outside its grants; thousands of silent connections, and a process out of
 * descriptors, leave a legitimate peer served and the instance alive without spinning; a flood of
 * notifications stays bounded.
 *
 * <p>A peer in this JVM is made to act as one in another process by changing the process token of
 * the metadata it connects with: it then fetches and maps descriptors as a foreign process does.
 */
@Timeout(180)
final class CudaIpcControlSocketSecurityTest
{
    private static final byte[] CONNECTION_KEY = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.UTF_8);
    private static final byte[] OTHER_KEY = "fedcba9876543210fedcba9876543210".getBytes(StandardCharsets.UTF_8);
    private static final byte[] GRANT_KEY = "conformance".getBytes(StandardCharsets.UTF_8);

    private final List<TransferBackend> backends = new ArrayList<>();
    private final List<Process> children = new ArrayList<>();
    private Path classes;

    @BeforeEach
    void usableDriver()
    {
        Availability availability = FakeCuda.factory().probe();
        assumeTrue(availability.available() && FakeCuda.loaded(), () -> "these tests need the fake driver: " + availability.reasons());
    }

    @AfterEach
    void stop() throws IOException
    {
        backends.forEach(TransferBackend::close);
        for (Process child : children) {
            child.destroyForcibly();
            try (var leftovers = Files.newDirectoryStream(Path.of("/dev/shm"), "kvbfake-" + child.pid() + "-*")) {
                for (Path path : leftovers) {
                    Files.deleteIfExists(path);
                }
            }
        }
        if (classes != null) {
            try (Stream<Path> walk = Files.walk(classes)) {
                walk.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
        }
    }

    private TransferBackend instance(byte[] connectionKey, Map<String, String> options)
    {
        String name = "sec-" + UUID.randomUUID();
        BackendContext context = new BackendContext()
        {
            @Override
            public String agentName()
            {
                return name;
            }

            @Override
            public Optional<byte[]> connectionKey()
            {
                return Optional.ofNullable(connectionKey).map(byte[]::clone);
            }
        };
        TransferBackend backend = new CudaIpcBackendFactory(true).create(options, context);
        backends.add(backend);
        return backend;
    }

    /** The metadata as a peer in another process sees it: another process token. */
    private static byte[] asForeign(byte[] metadata)
    {
        CudaIpcMetadata decoded = CudaIpcMetadata.decode(metadata);
        return new CudaIpcMetadata(decoded.agentName(), decoded.pid(), decoded.processToken() ^ 0x5A5A, decoded.socketName(), decoded.regions()).encode();
    }

    private static MemorySegment filled(Allocation allocation, int seed)
    {
        MemorySegment memory = MemorySegment.ofAddress(allocation.address()).reinterpret(allocation.bytes());
        for (long o = 0; o + 8 <= allocation.bytes(); o += 8) {
            memory.set(ValueLayout.JAVA_LONG, o, pattern(seed, o));
        }
        return memory;
    }

    private static long wrongWords(MemorySegment memory, int seed)
    {
        long wrong = 0;
        for (long o = 0; o + 8 <= memory.byteSize(); o += 8) {
            wrong += memory.get(ValueLayout.JAVA_LONG, o) == pattern(seed, o) ? 0 : 1;
        }
        return wrong;
    }

    private static void grantAll(TransferBackend backend, byte[] key, Allocation allocation)
    {
        PreparedList all = backend.prepareLocal(blocks(MemoryKind.HOST, allocation.address(), 0, BLOCKS));
        backend.grant(key, TransferOp.WRITE, all, range(0, BLOCKS), BLOCKS);
        backend.grant(key, TransferOp.READ, all, range(0, BLOCKS), BLOCKS);
        backend.releasePrepared(all);
    }

    private static TransferStatus await(TransferBackend backend, long handle)
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (backend.status(handle) == TransferStatus.IN_PROGRESS && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        return backend.status(handle);
    }

    /**
     * Writes blocks of the peer's allocation from local memory filled with a seed.
     *
     * @return the failure, or empty when the write was done.
     */
    private static Optional<KvBridgeException> write(TransferBackend initiator, byte[] peerMetadata, long remoteBase, byte[] grantKey)
    {
        Allocation source = initiator.allocate(BYTES, MemoryKind.HOST, 0);
        filled(source, 7);
        try {
            Peer peer = initiator.connect(peerMetadata);
            PreparedList local = initiator.prepareLocal(blocks(MemoryKind.HOST, source.address(), 0, BLOCKS));
            PreparedList remote = initiator.prepareRemote(peer, blocks(MemoryKind.HOST, remoteBase, 0, BLOCKS));
            long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, range(0, BLOCKS)).remote(remote, range(0, BLOCKS))
                    .count(BLOCKS).grantKey(grantKey));
            TransferStatus status = await(initiator, handle);
            Optional<KvBridgeException> failure = status == TransferStatus.DONE ? Optional.empty() : initiator.failure(handle);
            assertTrue(status == TransferStatus.DONE || failure.isPresent(), "status " + status);
            return failure;
        }
        catch (KvBridgeException refused) {
            return Optional.of(refused);
        }
    }

    private static String socketOf(TransferBackend backend)
    {
        return CudaIpcMetadata.decode(backend.localMetadata()).socketName();
    }

    /** A child JVM running a main class of this module, started through a prefix (setpriv, a shell with a limit). */
    private final class Child
    {
        final Process process;
        final PrintStream commands;
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

        Child(List<String> prefix, String classPath, Class<?> main, String... args) throws IOException
        {
            List<String> command = new ArrayList<>(prefix);
            command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "--enable-native-access=ALL-UNNAMED",
                    "-XX:+UseSerialGC", "-Xshare:auto"));
            String library = System.getProperty(CudaIpcBackendFactory.LIBRARY_PROPERTY, "");
            if (!library.isEmpty()) {
                command.add("-D" + CudaIpcBackendFactory.LIBRARY_PROPERTY + "=" + library);
            }
            command.addAll(List.of("-cp", classPath, main.getName()));
            command.addAll(List.of(args));
            ProcessBuilder builder = new ProcessBuilder(command);
            builder.redirectError(ProcessBuilder.Redirect.INHERIT);
            process = builder.start();
            children.add(process);
            commands = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
            Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = reader.readLine()) != null) {
                        lines.add(line);
                    }
                }
                catch (IOException ignored) {
                    // the child is gone: expect() names the missing line
                }
            });
        }

        String[] expect(String word, int seconds) throws InterruptedException
        {
            String line = lines.poll(seconds, TimeUnit.SECONDS);
            assertNotNull(line, () -> "the child said nothing within " + seconds + " s while " + word + " was expected (alive=" + process.isAlive() + ")");
            assertTrue(line.startsWith(word + " ") || line.equals(word), () -> "expected " + word + " from the child, got: " + line);
            return line.split(" ");
        }
    }

    /**
     * The test's class path, directories and jars, copied where any user may read them (the build's
     * own may lie under a private home).
     */
    private String readableClassPath() throws IOException
    {
        classes = Files.createTempDirectory("kvbridge-hostile", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        List<String> entries = new ArrayList<>();
        int index = 0;
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path source = Path.of(entry);
            Path target = classes.resolve(String.valueOf(index++));
            if (Files.isRegularFile(source)) {
                // a jar: what a reactor build that packaged the other modules puts on the class path
                Files.createDirectories(target);
                Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxr-xr-x"));
                Path jar = target.resolve(source.getFileName().toString());
                Files.copy(source, jar);
                Files.setPosixFilePermissions(jar, PosixFilePermissions.fromString("rw-r--r--"));
                entries.add(jar.toString());
                continue;
            }
            if (!Files.isDirectory(source)) {
                continue;
            }
            try (Stream<Path> walk = Files.walk(source)) {
                for (Path path : (Iterable<Path>) walk::iterator) {
                    Path copy = target.resolve(source.relativize(path).toString());
                    if (Files.isDirectory(path)) {
                        Files.createDirectories(copy);
                        Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rwxr-xr-x"));
                    }
                    else {
                        Files.copy(path, copy);
                        Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rw-r--r--"));
                    }
                }
            }
            entries.add(target.toString());
        }
        return String.join(java.io.File.pathSeparator, entries);
    }

    private void assertStealsNothing(List<String> prefix, String who) throws Exception
    {
        TransferBackend victim = instance(CONNECTION_KEY, Map.of());
        Allocation memory = victim.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment bytes = filled(memory, 3);
        // even the grant key the intruder guesses is live: without authentication it must not matter
        grantAll(victim, GRANT_KEY, memory);
        Child intruder = new Child(prefix, readableClassPath(), HostileControlClient.class, "steal", socketOf(victim), "8");
        assertEquals("0", intruder.expect("FDS", 60)[1], who + " obtained descriptors of the victim's memory");
        assertEquals("0", intruder.expect("ANSWERED", 10)[1], who + " was answered before it authenticated");
        assertEquals(0, wrongWords(bytes, 3), "the victim's memory is untouched");
        assertTrue(peerReport(victim).orElse("").contains("refused"), () -> "the refusals are reported: " + peerReport(victim));
        assertTrue(victim.problem().isEmpty(), () -> "what intruders did turned the victim's health: " + victim.problem());
    }

    @Test
    void aProcessOfAnotherUserObtainsNoDescriptor() throws Exception
    {
        int uid = (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        assumeTrue(uid == 0, "starting a process as another user (setpriv --reuid=65534) needs root; this runs as uid " + uid);
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "setpriv (util-linux) is not installed");
        assertStealsNothing(List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"), "a process of uid 65534");
    }

    @Test
    void aProcessOfTheSameUserWithoutTheKeyObtainsNoDescriptor() throws Exception
    {
        assertStealsNothing(List.of(), "a process of the same user without the key");
    }

    @Test
    void anInstanceWithoutTheKeyOrWithAnotherOneIsRefusedAndWritesNothing()
    {
        TransferBackend victim = instance(CONNECTION_KEY, Map.of());
        Allocation memory = victim.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment bytes = filled(memory, 3);
        grantAll(victim, GRANT_KEY, memory);
        byte[] metadata = asForeign(victim.localMetadata());
        for (byte[] key : new byte[][] {null, OTHER_KEY}) {
            Optional<KvBridgeException> failure = write(instance(key, Map.of()), metadata, memory.address(), GRANT_KEY);
            assertTrue(failure.isPresent(), "an instance " + (key == null ? "without a key" : "with another key") + " wrote into the victim");
            assertEquals(ErrorCode.PEER_UNKNOWN, failure.get().code(), () -> "failure: " + failure.get());
            assertTrue(failure.get().getMessage().contains("shared secret"), () -> "the error names the fix: " + failure.get().getMessage());
        }
        assertEquals(0, wrongWords(bytes, 3), "the victim's memory is untouched");
        // the same key passes, and the grant decides
        assertEquals(Optional.empty(), write(instance(CONNECTION_KEY, Map.of()), metadata, memory.address(), GRANT_KEY));
        assertEquals(0, wrongWords(bytes, 7), "an authenticated peer under a live grant wrote");
    }

    @Test
    void anAuthenticatedPeerObtainsNoDescriptorOutsideItsGrants()
    {
        TransferBackend victim = instance(CONNECTION_KEY, Map.of());
        Allocation granted = victim.allocate(BYTES, MemoryKind.HOST, 0);
        Allocation other = victim.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment grantedBytes = filled(granted, 3);
        MemorySegment otherBytes = filled(other, 4);
        grantAll(victim, GRANT_KEY, granted);
        byte[] metadata = asForeign(victim.localMetadata());

        Optional<KvBridgeException> ungranted = write(instance(CONNECTION_KEY, Map.of()), metadata, other.address(), GRANT_KEY);
        assertEquals(ErrorCode.NOT_GRANTED, ungranted.map(KvBridgeException::code).orElse(null), "an allocation no grant lies in: " + ungranted);
        Optional<KvBridgeException> wrongKey = write(instance(CONNECTION_KEY, Map.of()), metadata, granted.address(), "guessed".getBytes(StandardCharsets.UTF_8));
        assertEquals(ErrorCode.NOT_GRANTED, wrongKey.map(KvBridgeException::code).orElse(null), "a key no grant is under: " + wrongKey);
        Optional<KvBridgeException> noKey = write(instance(CONNECTION_KEY, Map.of()), metadata, granted.address(), null);
        assertEquals(ErrorCode.NOT_GRANTED, noKey.map(KvBridgeException::code).orElse(null), "no key: " + noKey);
        assertEquals(0, wrongWords(otherBytes, 4), "the ungranted allocation is untouched");
        assertEquals(0, wrongWords(grantedBytes, 3), "the granted one too, under the wrong key");
        assertTrue(peerReport(victim).orElse("").contains("refused 3 descriptor requests"), () -> "the refusals are counted: " + peerReport(victim));
        assertTrue(victim.problem().isEmpty(), () -> "refused requests turned the victim's health: " + victim.problem());

        // a revoked grant passes nothing more
        PreparedList all = victim.prepareLocal(blocks(MemoryKind.HOST, other.address(), 0, BLOCKS));
        long grant = victim.grant(GRANT_KEY, TransferOp.WRITE, all, range(0, BLOCKS), BLOCKS);
        victim.revoke(grant);
        victim.releasePrepared(all);
        Optional<KvBridgeException> revoked = write(instance(CONNECTION_KEY, Map.of()), metadata, other.address(), GRANT_KEY);
        assertEquals(ErrorCode.NOT_GRANTED, revoked.map(KvBridgeException::code).orElse(null), "a revoked grant: " + revoked);
        assertEquals(0, wrongWords(otherBytes, 4));
    }

    /** A victim in a child JVM (no key, this user), its host memory granted under {@link #GRANT_KEY}; its metadata and host address. */
    private record Victim(Child child, byte[] metadata, long host)
    {
    }

    private Victim victimChild(String limit) throws Exception
    {
        List<String> prefix = limit == null ? List.of() : List.of("/bin/sh", "-c", "ulimit -n " + limit + " && exec \"$0\" \"$@\"");
        Child child = new Child(prefix, System.getProperty("java.class.path"), CudaIpcPeerProcess.class, "legacy");
        byte[] metadata = HexFormat.of().parseHex(child.expect("META", 60)[1]);
        long host = Long.parseLong(child.expect("ADDR", 10)[2]);
        child.commands.println("GRANT " + new String(GRANT_KEY, StandardCharsets.UTF_8));
        child.expect("GRANTED", 10);
        return new Victim(child, metadata, host);
    }

    /** Writes into the child's host memory from a fresh instance here and checks every byte there. */
    private void legitimateWrite(Victim victim, int firstBlock) throws Exception
    {
        TransferBackend parent = instance(null, Map.of());
        Allocation source = parent.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment sourceBytes = MemorySegment.ofAddress(source.address()).reinterpret(BYTES);
        for (long o = 0; o < BYTES; o += 8) {
            sourceBytes.set(ValueLayout.JAVA_LONG, o, pattern(1, o));
        }
        Peer peer = parent.connect(victim.metadata());
        PreparedList local = parent.prepareLocal(blocks(MemoryKind.HOST, source.address(), 0, BLOCKS));
        PreparedList remote = parent.prepareRemote(peer, blocks(MemoryKind.HOST, victim.host(), 0, BLOCKS));
        long handle = parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, range(0, 4)).remote(remote, range(firstBlock, 4))
                .count(4).grantKey(GRANT_KEY));
        assertEquals(TransferStatus.DONE, await(parent, handle), () -> "the legitimate write failed: " + parent.failure(handle));
        victim.child().commands.println("CHECK host 1 " + firstBlock + " 4 0");
        assertEquals("0", victim.child().expect("CHECKED", 30)[1], "the legitimate peer's bytes are in the victim's memory");
    }

    @Test
    void thousandsOfSilentConnectionsLeaveALegitimatePeerServedAndTheInstanceAlive() throws Exception
    {
        // the victim may hold 1024 descriptors: a flood it kept would exhaust them
        Victim victim = victimChild("1024");
        String socket = CudaIpcMetadata.decode(victim.metadata()).socketName();
        Child flood = new Child(List.of(), System.getProperty("java.class.path"), HostileControlClient.class, "flood", socket, "3000", "30");
        int held = Integer.parseInt(flood.expect("HELD", 60)[1]);
        assertEquals(3000, held, "the flood's connections were all accepted (none left waiting in a full backlog)");
        // while the flood holds its connections
        legitimateWrite(victim, 8);
        victim.child().commands.println("HEALTH");
        assertEquals("ok", victim.child().expect("HEALTH", 10)[1], "silent connections are shed, not reported as failures");
        flood.process.getOutputStream().close();
        assertTrue(flood.process.waitFor(30, TimeUnit.SECONDS));
        legitimateWrite(victim, 16);
        assertTrue(victim.child().process.isAlive(), "the victim is alive");
    }

    @Test
    void aProcessOutOfDescriptorsBacksOffInsteadOfSpinningAndServesPeersAgain() throws Exception
    {
        Victim victim = victimChild("256");
        victim.child().commands.println("EXHAUST");
        assertTrue(Integer.parseInt(victim.child().expect("EXHAUSTED", 30)[1]) > 0);
        // connections the victim cannot accept wait in its backlog, its listener readable all along
        Wire wire = new Wire();
        String socket = CudaIpcMetadata.decode(victim.metadata()).socketName();
        List<Integer> waiting = new ArrayList<>();
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment address = arena.allocate(LibcSockets.SOCKADDR_UN_BYTES);
            int length = LibcSockets.abstractAddress(address, socket.getBytes(StandardCharsets.UTF_8));
            for (int i = 0; i < 4; i++) {
                int fd = LibcSockets.socket(LibcSockets.AF_UNIX, LibcSockets.SOCK_SEQPACKET | LibcSockets.SOCK_NONBLOCK | LibcSockets.SOCK_CLOEXEC, 0, wire.errno);
                assertTrue(fd >= 0 && LibcSockets.connect(fd, address, length, wire.errno) == 0, "connecting to the victim's backlog");
                waiting.add(fd);
            }
        }
        // settled: what the start and the exhausting loop left to compile is done
        Thread.sleep(1000);
        long before = cpuTicks(victim.child().process.pid());
        Thread.sleep(2000);
        long used = cpuTicks(victim.child().process.pid()) - before;
        // 100 ticks a second: a loop retrying accept() would burn most of the 200
        assertTrue(used < 40, "the victim used " + used + " ticks of CPU in 2 s while out of descriptors; it must back off, not spin");
        victim.child().commands.println("RELEASE");
        victim.child().expect("RELEASED", 30);
        legitimateWrite(victim, 8);
        for (int fd : waiting) {
            Libc.close(fd, wire.errno);
        }
    }

    /** @return user and system time of a process, in clock ticks. */
    private static long cpuTicks(long pid) throws IOException
    {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    }

    @Test
    void aNotificationFloodStaysBoundedAndTheDropsAreCounted() throws Exception
    {
        TransferBackend receiver = instance(null, Map.of("max-queued-notifications", "100"));
        TransferBackend sender = instance(null, Map.of());
        Peer peer = sender.connect(receiver.localMetadata());
        byte[] message = new byte[1024];
        for (int i = 0; i < 1000; i++) {
            sender.notify(peer, message);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!peerReport(receiver).orElse("").contains("900 notifications were dropped") && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(peerReport(receiver).orElse("").contains("900 notifications were dropped"), () -> "the drops are counted: " + peerReport(receiver));
        assertTrue(receiver.problem().isEmpty(), () -> "a flood turned the receiver's health: " + receiver.problem());
        int[] drained = new int[1];
        assertEquals(100, receiver.drainNotifications((from, bytes) -> drained[0]++), "at most 100 were queued");
        // drained, the bound has room again
        sender.notify(peer, message);
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        int later = 0;
        while (later == 0 && System.nanoTime() < deadline) {
            later = receiver.drainNotifications((from, bytes) -> { });
            Thread.sleep(5);
        }
        assertEquals(1, later);
    }

    private static Optional<String> peerReport(TransferBackend instance)
    {
        return ((CudaIpcTransferBackend) instance).peerReport();
    }
}
