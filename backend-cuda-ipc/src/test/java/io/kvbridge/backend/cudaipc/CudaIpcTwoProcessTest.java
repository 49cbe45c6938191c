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
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
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
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two JVMs over the fake driver, each with its own instance: device memory exported as legacy IPC
 * handles and as VMM file descriptors, shared host memory, both directions, notifications after
 * the data, mappings closed exactly once, and a peer killed with SIGKILL while copies into its
 * memory run.
 */
@Timeout(120)
final class CudaIpcTwoProcessTest
{
    private final List<TransferBackend> backends = new ArrayList<>();
    private Process child;
    private PrintStream commands;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

    @BeforeEach
    void fakeOnly()
    {
        assumeTrue(FakeCuda.loaded(), "these tests steer the fake driver; -Preal-cuda runs CudaIpcRealDriverTest instead");
    }

    @AfterEach
    void stop() throws IOException
    {
        FakeCuda.set("copy_delay_us", 0);
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
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED",
                "-D" + CudaIpcBackendFactory.LIBRARY_PROPERTY + "=" + System.getProperty(CudaIpcBackendFactory.LIBRARY_PROPERTY),
                "-cp", System.getProperty("java.class.path"), CudaIpcPeerProcess.class.getName(), mode);
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
        long handlesBefore = FakeCuda.stat("peer_handles");
        assertTrue(handlesBefore >= 1, "the child's device allocation is open here (its host memory is mapped by the transport itself): " + handlesBefore);

        // device to device, into the child's upper half, with a notification
        PreparedList localDevice = parent.prepareLocal(blocks(MemoryKind.DEVICE, device.address(), 0, BLOCKS));
        PreparedList remoteDevice = parent.prepareRemote(peer, blocks(MemoryKind.DEVICE, childDevice, 0, BLOCKS));
        long write = parent.post(TransferOp.WRITE, localDevice, range(0, 32), remoteDevice, range(32, 32), 32, "written".getBytes(StandardCharsets.UTF_8));
        assertEquals(1, parent.operations(write), "32 contiguous blocks on both sides are one copy");
        assertEquals(TransferStatus.DONE, await(parent, write), () -> "write failed: " + parent.failure(write));
        String[] notified = expect("NOTIFIED");
        assertEquals(parent.agentName(), notified[1]);
        assertEquals("written", notified[2]);
        commands.println("CHECK device 1 32 32 0");
        assertEquals("0", expect("CHECKED")[1], "the child's device memory holds the parent's blocks 0..31");
        commands.println("CHECK device 2 0 32 0");
        assertEquals("0", expect("CHECKED")[1], "the child's lower half is untouched");

        // the child's device memory read into the parent's host memory: device to host across processes
        PreparedList localHost = parent.prepareLocal(blocks(MemoryKind.HOST, host.address(), 0, BLOCKS));
        long read = parent.post(TransferOp.READ, localHost, range(40, 8), remoteDevice, range(0, 8), 8, null);
        assertEquals(TransferStatus.DONE, await(parent, read));
        for (long o = 0; o < 8L * BLOCK_BYTES; o += 8) {
            assertEquals(pattern(2, o), hostMemory.get(ValueLayout.JAVA_LONG, 40L * BLOCK_BYTES + o), "byte " + o + " of the read");
        }

        // host to the child's shared host memory
        PreparedList remoteHost = parent.prepareRemote(peer, blocks(MemoryKind.HOST, childHost, 0, BLOCKS));
        long hostWrite = parent.post(TransferOp.WRITE, localHost, range(0, 4), remoteHost, range(10, 4), 4, "host".getBytes(StandardCharsets.UTF_8));
        assertEquals(TransferStatus.DONE, await(parent, hostWrite));
        assertEquals("host", expect("NOTIFIED")[2]);
        commands.println("CHECK host 1 10 4 0");
        assertEquals("0", expect("CHECKED")[1]);

        for (long handle : new long[] {write, read, hostWrite}) {
            parent.release(handle);
        }
        parent.disconnect(peer);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (FakeCuda.stat("peer_handles") > handlesBefore - 1 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(handlesBefore - 1, FakeCuda.stat("peer_handles"), "disconnect closes the child's device allocation, once");
        commands.println("EXIT");
        expect("BYE");
    }

    @ParameterizedTest
    @ValueSource(strings = {"legacy", "vmm"})
    void aPeerKilledMidCopyFailsTheTransferAndItsMappingsAreClosed(String mode) throws Exception
    {
        startChild(mode);
        byte[] childMetadata = HexFormat.of().parseHex(expect("META")[1]);
        long childDevice = Long.parseLong(expect("ADDR")[1]);
        TransferBackend parent = newBackend(mode);
        Allocation device = parent.allocate(BYTES, MemoryKind.DEVICE, 0);
        long handlesBefore = FakeCuda.stat("peer_handles");
        Peer peer = parent.connect(childMetadata);
        assertEquals(handlesBefore + 1, FakeCuda.stat("peer_handles"), "the child's device allocation is opened once");
        PreparedList local = parent.prepareLocal(blocks(MemoryKind.DEVICE, device.address(), 0, BLOCKS));
        PreparedList remote = parent.prepareRemote(peer, blocks(MemoryKind.DEVICE, childDevice, 0, BLOCKS));
        // every other block: 16 separate copies of 100 ms each
        int[] even = new int[16];
        for (int i = 0; i < 16; i++) {
            even[i] = 2 * i;
        }
        FakeCuda.set("copy_delay_us", 100_000);
        long handle = parent.post(TransferOp.WRITE, local, even, remote, even, 16, "never".getBytes(StandardCharsets.UTF_8));
        assertEquals(16, parent.operations(handle));
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
                () -> parent.post(TransferOp.WRITE, local, even, remote, even, 1, null)).code());
    }
}
