package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BLOCKS;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BLOCK_BYTES;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BYTES;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.blocks;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.pattern;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.range;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Availability;
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
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two JVMs, each with its own instance, over the fake driver in the build (the test that steers
 * nothing also runs on a real driver, from {@code benchmarks/bin/gpu-check.sh}): device memory exported as legacy IPC
 * handles and as VMM file descriptors, shared host memory, both directions, notifications after
 * the data, mappings closed exactly once, a request of a host and a device part announced after
 * both, and a peer killed with SIGKILL while copies into its memory run.
 */
@Timeout(120)
final class CudaIpcTwoProcessTest
{
    /** What the child grants its memory under, and every post presents. */
    static final String KEY = "two-process";
    private static final byte[] KEY_BYTES = KEY.getBytes(StandardCharsets.UTF_8);
    private final List<TransferBackend> backends = new ArrayList<>();
    private Process child;
    private PrintStream commands;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

    @BeforeEach
    void usableDriver()
    {
        Availability availability = FakeCuda.factory().probe();
        assumeTrue(availability.available(), () -> "no usable CUDA driver, fake or real: " + availability.reasons());
    }

    /** The tests that steer the fake (delays, counters) run only on it; benchmarks/bin/gpu-check.sh runs the others on a GPU. */
    private static void assumeFake()
    {
        assumeTrue(FakeCuda.loaded(), "this test steers the fake driver");
    }

    @AfterEach
    void stop() throws IOException
    {
        if (FakeCuda.loaded()) {
            FakeCuda.set("copy_delay_us", 0);
        }
        backends.forEach(TransferBackend::close);
        if (child != null) {
            long pid = child.pid();
            child.destroyForcibly();
            // a killed child cannot unlink its named shared memory; the test removes what it left
            try (var leftovers = Files.newDirectoryStream(Path.of("/dev/shm"), "kvbfake-" + pid + "-*")) {
                for (Path path : leftovers) {
                    Files.deleteIfExists(path);
                }
            }
        }
    }

    private void startChild(String mode) throws IOException
    {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "--enable-native-access=ALL-UNNAMED"));
        String library = System.getProperty(CudaIpcBackendFactory.LIBRARY_PROPERTY, "");
        if (!library.isEmpty()) {
            command.add("-D" + CudaIpcBackendFactory.LIBRARY_PROPERTY + "=" + library);
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), CudaIpcPeerProcess.class.getName(), mode));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.redirectError(ProcessBuilder.Redirect.INHERIT);
        child = builder.start();
        commands = new PrintStream(child.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader reader = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
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

    private String[] expect(String word) throws InterruptedException
    {
        String line = lines.poll(30, TimeUnit.SECONDS);
        assertNotNull(line, () -> "the child said nothing within 30 s while " + word + " was expected (alive=" + child.isAlive() + ")");
        assertTrue(line.startsWith(word + " ") || line.equals(word), () -> "expected " + word + " from the child, got: " + line);
        return line.split(" ");
    }

    private TransferBackend newBackend(String mode)
    {
        TransferBackend backend = new CudaIpcBackendFactory(true).create(Map.of("allocation", mode), () -> "parent-" + UUID.randomUUID());
        backends.add(backend);
        return backend;
    }

    private static TransferStatus await(TransferBackend backend, long handle)
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (backend.status(handle) == TransferStatus.IN_PROGRESS && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        return backend.status(handle);
    }

    @ParameterizedTest
    @ValueSource(strings = {"legacy", "vmm"})
    void bothDirectionsMoveEveryByteAndNotifyAfterTheData(String mode) throws Exception
    {
        startChild(mode);
        byte[] childMetadata = HexFormat.of().parseHex(expect("META")[1]);
        String[] addresses = expect("ADDR");
        commands.println("GRANT " + KEY);
        expect("GRANTED");
        long childDevice = Long.parseLong(addresses[1]);
        long childHost = Long.parseLong(addresses[2]);
        TransferBackend parent = newBackend(mode);
        Allocation device = parent.allocate(BYTES, MemoryKind.DEVICE, 0);
        Allocation host = parent.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment hostMemory = MemorySegment.ofAddress(host.address()).reinterpret(BYTES);
        for (long o = 0; o < BYTES; o += 8) {
            hostMemory.set(ValueLayout.JAVA_LONG, o, pattern(1, o));
        }
        Peer self = parent.connect(parent.localMetadata());
        CudaIpcPeerProcess.selfCopy(parent, self, MemoryKind.HOST, host.address(), MemoryKind.DEVICE, device.address());
        Peer peer = parent.connect(childMetadata);
        commands.println("PEER " + HexFormat.of().formatHex(parent.localMetadata()));
        expect("CONNECTED");
        // the counters are the fake's: on a real driver the bytes are checked, the mappings are not counted
        boolean fake = FakeCuda.loaded();

        // device to device, into the child's upper half, with a notification
        PreparedList localDevice = parent.prepareLocal(blocks(MemoryKind.DEVICE, device.address(), 0, BLOCKS));
        PreparedList remoteDevice = parent.prepareRemote(peer, blocks(MemoryKind.DEVICE, childDevice, 0, BLOCKS));
        long write = parent.post(new TransferRequest().start(TransferOp.WRITE).local(localDevice, range(0, 32)).remote(remoteDevice, range(32, 32))
                .count(32).notification("written".getBytes(StandardCharsets.UTF_8)).grantKey(KEY_BYTES));
        assertEquals(1, parent.operations(write), "32 contiguous blocks on both sides are one copy");
        assertEquals(TransferStatus.DONE, await(parent, write), () -> "write failed: " + parent.failure(write));
        // a legacy allocation opens at connect, a VMM one (a descriptor the child passes under its grant) at the first post
        long handlesBefore = fake ? FakeCuda.stat("peer_handles") : 0;
        assertTrue(!fake || handlesBefore >= 1, "the child's device allocation is open here (its host memory is mapped by the transport itself): " + handlesBefore);
        String[] notified = expect("NOTIFIED");
        assertEquals(parent.agentName(), notified[1]);
        assertEquals("written", notified[2]);
        commands.println("CHECK device 1 32 32 0");
        assertEquals("0", expect("CHECKED")[1], "the child's device memory holds the parent's blocks 0..31");
        commands.println("CHECK device 2 0 32 0");
        assertEquals("0", expect("CHECKED")[1], "the child's lower half is untouched");

        // the child's device memory read into the parent's host memory: device to host across processes
        PreparedList localHost = parent.prepareLocal(blocks(MemoryKind.HOST, host.address(), 0, BLOCKS));
        long read = parent.post(new TransferRequest().start(TransferOp.READ).local(localHost, range(40, 8)).remote(remoteDevice, range(0, 8)).count(8)
                .grantKey(KEY_BYTES));
        assertEquals(TransferStatus.DONE, await(parent, read));
        for (long o = 0; o < 8L * BLOCK_BYTES; o += 8) {
            assertEquals(pattern(2, o), hostMemory.get(ValueLayout.JAVA_LONG, 40L * BLOCK_BYTES + o), "byte " + o + " of the read");
        }

        // host to the child's shared host memory
        PreparedList remoteHost = parent.prepareRemote(peer, blocks(MemoryKind.HOST, childHost, 0, BLOCKS));
        long hostWrite = parent.post(new TransferRequest().start(TransferOp.WRITE).local(localHost, range(0, 4)).remote(remoteHost, range(10, 4))
                .count(4).notification("host".getBytes(StandardCharsets.UTF_8)).grantKey(KEY_BYTES));
        assertEquals(TransferStatus.DONE, await(parent, hostWrite));
        assertEquals("host", expect("NOTIFIED")[2]);
        commands.println("CHECK host 1 10 4 0");
        assertEquals("0", expect("CHECKED")[1]);

        for (long handle : new long[] {write, read, hostWrite}) {
            parent.release(handle);
        }
        parent.disconnect(peer);
        if (fake) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (FakeCuda.stat("peer_handles") > handlesBefore - 1 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(handlesBefore - 1, FakeCuda.stat("peer_handles"), "disconnect closes the child's device allocation, once");
        }
        commands.println("EXIT");
        expect("BYE");
    }

    /**
     * A request split into a slow host part and a fast device part, the notification on the device
     * part, to another process: the peer hears of it only once the host part's bytes are in place too.
     */
    @ParameterizedTest
    @ValueSource(strings = {"legacy", "vmm"})
    void aMixedHostAndDeviceRequestToAnotherProcessIsAnnouncedAfterItsLastPart(String mode) throws Exception
    {
        assumeFake();
        startChild(mode);
        byte[] childMetadata = HexFormat.of().parseHex(expect("META")[1]);
        String[] addresses = expect("ADDR");
        commands.println("GRANT " + KEY);
        expect("GRANTED");
        long childDevice = Long.parseLong(addresses[1]);
        long childHost = Long.parseLong(addresses[2]);
        TransferBackend parent = newBackend(mode);
        Allocation device = parent.allocate(BYTES, MemoryKind.DEVICE, 0);
        Allocation host = parent.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment hostMemory = MemorySegment.ofAddress(host.address()).reinterpret(BYTES);
        for (long o = 0; o < BYTES; o += 8) {
            hostMemory.set(ValueLayout.JAVA_LONG, o, pattern(1, o));
        }
        parent.copyFromHost(hostMemory, device, 0);
        Peer peer = parent.connect(childMetadata);
        commands.println("PEER " + HexFormat.of().formatHex(parent.localMetadata()));
        expect("CONNECTED");
        PreparedList localHost = parent.prepareLocal(blocks(MemoryKind.HOST, host.address(), 0, BLOCKS));
        PreparedList localDevice = parent.prepareLocal(blocks(MemoryKind.DEVICE, device.address(), 0, BLOCKS));
        PreparedList remoteHost = parent.prepareRemote(peer, blocks(MemoryKind.HOST, childHost, 0, BLOCKS));
        PreparedList remoteDevice = parent.prepareRemote(peer, blocks(MemoryKind.DEVICE, childDevice, 0, BLOCKS));
        // the host part: every other block into 16 adjacent ones, 16 copies of 50 ms each on one stream;
        // the device part: one copy on the next stream, done long before
        int[] even = new int[16];
        for (int i = 0; i < 16; i++) {
            even[i] = 2 * i;
        }
        FakeCuda.set("copy_delay_us", 50_000);
        long hostPart = parent.post(new TransferRequest().start(TransferOp.WRITE).local(localHost, even).remote(remoteHost, range(0, 16)).count(16)
                .grantKey(KEY_BYTES));
        long devicePart = parent.post(new TransferRequest().start(TransferOp.WRITE).local(localDevice, range(0, 8)).remote(remoteDevice, range(40, 8))
                .count(8).notification("mixed".getBytes(StandardCharsets.UTF_8)).grantKey(KEY_BYTES));
        assertEquals(16, parent.operations(hostPart));
        assertEquals(1, parent.operations(devicePart));
        assertEquals("mixed", expect("NOTIFIED")[2]);
        commands.println("CHECK host 1 0 16 0 2");
        assertEquals("0", expect("CHECKED")[1], "when the request is announced, its host part is in the child's memory");
        commands.println("CHECK device 1 40 8 0");
        assertEquals("0", expect("CHECKED")[1], "and so is its device part");
        assertEquals(TransferStatus.DONE, await(parent, hostPart), () -> "host part: " + parent.failure(hostPart));
        assertEquals(TransferStatus.DONE, await(parent, devicePart), () -> "device part: " + parent.failure(devicePart));
        parent.release(hostPart);
        parent.release(devicePart);
        commands.println("EXIT");
        expect("BYE");
    }

    @Test
    void aPeerProcessIsProvenExitedThroughItsPidfdOnlyOnceItDied() throws Exception
    {
        startChild("legacy");
        byte[] childMetadata = HexFormat.of().parseHex(expect("META")[1]);
        expect("ADDR");
        String childAgent = CudaIpcMetadata.decode(childMetadata).agentName();
        TransferBackend parent = newBackend("legacy");
        assertNull(parent.writerExited(childAgent), "a peer never connected is not watched");
        parent.connect(childMetadata);
        assertNull(parent.writerExited(childAgent), "a live peer was proven exited");

        child.destroyForcibly();
        assertTrue(child.waitFor(30, TimeUnit.SECONDS), "the child did not die");
        assertEquals("process " + child.pid() + " of peer '" + childAgent + "' exited (its pidfd polled readable)", parent.writerExited(childAgent));
    }

    @ParameterizedTest
    @ValueSource(strings = {"legacy", "vmm"})
    void aPeerKilledMidCopyFailsTheTransferAndItsMappingsAreClosed(String mode) throws Exception
    {
        assumeFake();
        startChild(mode);
        byte[] childMetadata = HexFormat.of().parseHex(expect("META")[1]);
        long childDevice = Long.parseLong(expect("ADDR")[1]);
        commands.println("GRANT " + KEY);
        expect("GRANTED");
        TransferBackend parent = newBackend(mode);
        Allocation device = parent.allocate(BYTES, MemoryKind.DEVICE, 0);
        long handlesBefore = FakeCuda.stat("peer_handles");
        Peer peer = parent.connect(childMetadata);
        PreparedList local = parent.prepareLocal(blocks(MemoryKind.DEVICE, device.address(), 0, BLOCKS));
        PreparedList remote = parent.prepareRemote(peer, blocks(MemoryKind.DEVICE, childDevice, 0, BLOCKS));
        // every other block: 16 separate copies of 100 ms each
        int[] even = new int[16];
        for (int i = 0; i < 16; i++) {
            even[i] = 2 * i;
        }
        FakeCuda.set("copy_delay_us", 100_000);
        long handle = parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, even).remote(remote, even).count(16)
                .notification("never".getBytes(StandardCharsets.UTF_8)).grantKey(KEY_BYTES));
        assertEquals(16, parent.operations(handle));
        assertEquals(handlesBefore + 1, FakeCuda.stat("peer_handles"), "the child's device allocation is opened once (at connect or at the first post)");
        Thread.sleep(200);
        child.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        long started = System.nanoTime();
        assertEquals(TransferStatus.FAILED, await(parent, handle), "a transfer to a killed peer fails");
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(10), "within its deadline");
        assertEquals(ErrorCode.PEER_UNKNOWN, parent.failure(handle).orElseThrow().code(), () -> "failure: " + parent.failure(handle));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (FakeCuda.stat("peer_handles") > handlesBefore && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(handlesBefore, FakeCuda.stat("peer_handles"), "the dead peer's allocations are closed");
        parent.release(handle);
        assertEquals(ErrorCode.PEER_UNKNOWN, io.kvbridge.testkit.KvBridgeAssertions.assertCode(ErrorCode.PEER_UNKNOWN,
                () -> parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, even).remote(remote, even).count(1)
                        .grantKey(KEY_BYTES))).code());
    }

    /**
     * The child revokes its grants while slowed copies of the parent into its shared host memory
     * run: the revoke returns only once the parent unmapped that memory, after its last copy, so
     * nothing lands afterwards; a later post must fetch the descriptor again and is refused.
     */
    @org.junit.jupiter.api.Test
    void aRevokeReturnsOnlyOnceTheCopiesIntoTheRevokedMemoryEnded() throws Exception
    {
        assumeFake();
        startChild("legacy");
        byte[] childMetadata = HexFormat.of().parseHex(expect("META")[1]);
        long childHost = Long.parseLong(expect("ADDR")[2]);
        commands.println("GRANT " + KEY);
        expect("GRANTED");
        TransferBackend parent = newBackend("legacy");
        Allocation host = parent.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment hostMemory = MemorySegment.ofAddress(host.address()).reinterpret(BYTES);
        for (long o = 0; o < BYTES; o += 8) {
            hostMemory.set(ValueLayout.JAVA_LONG, o, pattern(1, o));
        }
        Peer peer = parent.connect(childMetadata);
        PreparedList local = parent.prepareLocal(blocks(MemoryKind.HOST, host.address(), 0, BLOCKS));
        PreparedList remote = parent.prepareRemote(peer, blocks(MemoryKind.HOST, childHost, 0, BLOCKS));
        long opening = parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, range(0, 1)).remote(remote, range(0, 1)).count(1)
                .grantKey(KEY_BYTES));
        assertEquals(TransferStatus.DONE, await(parent, opening), () -> "opening write: " + parent.failure(opening));
        // every other block: 8 separate copies of 200 ms each
        int[] even = new int[8];
        for (int i = 0; i < even.length; i++) {
            even[i] = 2 * i + 2;
        }
        FakeCuda.set("copy_delay_us", 200_000);
        long slow = parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, even).remote(remote, even).count(even.length)
                .grantKey(KEY_BYTES));
        Thread.sleep(100);
        commands.println("REVOKE");
        assertEquals("0", expect("REVOKED")[1], "bytes landed in the child's memory after its revoke returned");
        assertEquals(TransferStatus.DONE, await(parent, slow), () -> "the copies issued before the revoke: " + parent.failure(slow));
        FakeCuda.set("copy_delay_us", 0);
        io.kvbridge.testkit.KvBridgeAssertions.assertCode(ErrorCode.NOT_GRANTED,
                () -> parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, range(0, 1)).remote(remote, range(0, 1)).count(1)
                        .grantKey(KEY_BYTES)));
        commands.println("EXIT");
        expect("BYE");
    }
}
