package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BLOCKS;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BLOCK_BYTES;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BYTES;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.blocks;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.range;
import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * In one JVM over the fake driver: discovery, what the probe says and when, registration checks
 * against the driver's pointer attributes, mixed host/device requests, and failed copies.
 */
@Timeout(60)
final class CudaIpcFakeDriverTest
{
    private final List<TransferBackend> backends = new ArrayList<>();
    private Arena arena;

    @BeforeEach
    void setUp()
    {
        assumeTrue(FakeCuda.loaded(), "these tests steer the fake driver");
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown()
    {
        backends.forEach(TransferBackend::close);
        FakeCuda.reset();
        if (arena != null) {
            arena.close();
        }
    }

    private TransferBackend backend(Map<String, String> config)
    {
        String name = "fake-" + UUID.randomUUID();
        TransferBackend backend = new CudaIpcBackendFactory(true).create(config, () -> name);
        backends.add(backend);
        return backend;
    }

    @Test
    void discoveredByServiceLoaderWithTheDeclaredCapabilities()
    {
        TransferBackendFactory factory = ServiceLoader.load(TransferBackendFactory.class).stream().map(ServiceLoader.Provider::get)
                .filter(f -> f.name().equals("cuda-ipc")).findFirst().orElseThrow();
        Availability availability = factory.probe();
        assertTrue(availability.available(), () -> "reasons: " + availability.reasons());
        assertTrue(availability.capabilities().containsAll(List.of(Capability.DEVICE_MEMORY, Capability.HOST_MEMORY, Capability.CROSS_PROCESS,
                Capability.TRANSPORT_ALLOCATION, Capability.COALESCING)));
        assertEquals("true", availability.details().get("fake"));
    }

    @Test
    void theFakeIsRefusedUnlessAllowed()
    {
        Availability refused = new CudaIpcBackendFactory(false).probe();
        assertFalse(refused.available());
        assertTrue(refused.reasons().getFirst().contains("test fake") && refused.reasons().getFirst().contains(CudaIpcBackendFactory.ALLOW_FAKE_PROPERTY),
                () -> refused.reasons().toString());
        assertCode(ErrorCode.BACKEND_UNAVAILABLE, () -> new CudaIpcBackendFactory(false).create(Map.of(), () -> "x"));
    }

    @Test
    void probeNamesEachReasonWithItsFixAndNeverThrows()
    {
        FakeCuda.set("no_device", 1);
        Availability noDevice = new CudaIpcBackendFactory(true).probe();
        assertFalse(noDevice.available());
        assertTrue(noDevice.reasons().getFirst().contains("CUDA_ERROR_NO_DEVICE") && noDevice.reasons().getFirst().contains("GPU"), noDevice.reasons()::toString);
        FakeCuda.set("no_device", 0);
        FakeCuda.set("driver_version", 11080);
        Availability old = new CudaIpcBackendFactory(true).probe();
        assertTrue(old.reasons().getFirst().contains("11.8") && old.reasons().getFirst().contains("newer NVIDIA driver"), old.reasons()::toString);
        FakeCuda.set("driver_version", 13000);
        FakeCuda.set("ipc_supported", 0);
        Availability noIpc = new CudaIpcBackendFactory(true).probe();
        assertTrue(noIpc.reasons().getFirst().contains("IPC_EVENT_SUPPORTED=0") && noIpc.reasons().getFirst().contains("POSIX_FILE_DESCRIPTOR"),
                noIpc.reasons()::toString);
    }

    @Test
    void registrationIsCheckedAgainstTheDriver()
    {
        TransferBackend backend = backend(Map.of("allocation", "legacy"));
        MemorySegment host = arena.allocate(1 << 20, 4096);
        KvBridgeAssertionsText.assertMessage(assertCode(ErrorCode.MEMORY_KIND_UNSUPPORTED,
                () -> backend.register(new Allocation(host.address(), host.byteSize(), MemoryKind.DEVICE, 0))), "not memory the CUDA driver knows");
        TransferBackend owner = backend(Map.of("allocation", "legacy"));
        Allocation device = owner.allocate(1 << 20, MemoryKind.DEVICE, 0);
        KvBridgeAssertionsText.assertMessage(assertCode(ErrorCode.MEMORY_KIND_UNSUPPORTED,
                () -> backend.register(new Allocation(device.address(), 2L << 20, MemoryKind.DEVICE, 0))), "crosses allocations");
        KvBridgeAssertionsText.assertMessage(assertCode(ErrorCode.MEMORY_KIND_UNSUPPORTED,
                () -> backend.register(new Allocation(device.address(), device.bytes(), MemoryKind.HOST, 0))), "declare it DEVICE");
        KvBridgeAssertionsText.assertMessage(assertCode(ErrorCode.MEMORY_KIND_UNSUPPORTED,
                () -> backend.register(new Allocation(device.address(), device.bytes(), MemoryKind.DEVICE, 1))), "device=1");
        backend.register(new Allocation(device.address() + 4096, 8192, MemoryKind.DEVICE, 0));
        assertEquals(CudaIpcMetadata.Export.LEGACY_IPC, ((CudaIpcTransferBackend) backend).exportOf(new Allocation(device.address() + 4096, 8192,
                MemoryKind.DEVICE, 0)));
        TransferBackend vmm = backend(Map.of("allocation", "vmm"));
        Allocation mapped = vmm.allocate(1 << 20, MemoryKind.DEVICE, 0);
        assertEquals(CudaIpcMetadata.Export.VMM_FD, ((CudaIpcTransferBackend) vmm).exportOf(mapped), "VMM memory is detected, not configured");
    }

    private static long await(TransferBackend backend, long handle)
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (backend.status(handle) == TransferStatus.IN_PROGRESS && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        return handle;
    }

    @Test
    void aMixedHostAndDeviceRequestIsAnnouncedAfterItsLastPart() throws InterruptedException
    {
        TransferBackend initiator = backend(Map.of());
        TransferBackend target = backend(Map.of());
        Allocation host = initiator.allocate(BYTES, MemoryKind.HOST, 0);
        Allocation device = initiator.allocate(BYTES, MemoryKind.DEVICE, 0);
        Allocation targetDevice = target.allocate(BYTES, MemoryKind.DEVICE, 0);
        Allocation targetHost = target.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment hostMemory = MemorySegment.ofAddress(host.address()).reinterpret(BYTES);
        for (long o = 0; o < BYTES; o += 8) {
            hostMemory.set(ValueLayout.JAVA_LONG, o, CudaIpcPeerProcess.pattern(7, o));
        }
        Peer self = initiator.connect(initiator.localMetadata());
        CudaIpcPeerProcess.selfCopy(initiator, self, MemoryKind.HOST, host.address(), MemoryKind.DEVICE, device.address());
        Peer peer = initiator.connect(target.localMetadata());
        target.connect(initiator.localMetadata());
        PreparedList localHost = initiator.prepareLocal(blocks(MemoryKind.HOST, host.address(), 0, BLOCKS));
        PreparedList localDevice = initiator.prepareLocal(blocks(MemoryKind.DEVICE, device.address(), 0, BLOCKS));
        PreparedList remoteHost = initiator.prepareRemote(peer, blocks(MemoryKind.HOST, targetHost.address(), 0, BLOCKS));
        PreparedList remoteDevice = initiator.prepareRemote(peer, blocks(MemoryKind.DEVICE, targetDevice.address(), 0, BLOCKS));
        FakeCuda.set("copy_delay_us", 50_000);
        try {
            // host part slow (8 separate copies), device part fast, the notification on the device part
            int[] spaced = {0, 2, 4, 6, 8, 10, 12, 14};
            long hostPart = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(localHost, spaced).remote(remoteHost, spaced)
                    .count(spaced.length));
            long devicePart = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(localDevice, range(32, 4))
                    .remote(remoteDevice, range(32, 4)).count(4).notification("request-1".getBytes(StandardCharsets.UTF_8)));
            List<String> received = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (received.isEmpty() && System.nanoTime() < deadline) {
                target.drainNotifications((sender, message) -> {
                    received.add(new String(message, StandardCharsets.UTF_8));
                    // the notification may arrive only once both parts' bytes are in place
                    MemorySegment landed = MemorySegment.ofAddress(targetHost.address()).reinterpret(BYTES);
                    assertEquals(CudaIpcPeerProcess.pattern(7, 14L * BLOCK_BYTES), landed.get(ValueLayout.JAVA_LONG, 14L * BLOCK_BYTES),
                            "the host part's last block landed before the notification");
                });
                Thread.sleep(1);
            }
            assertEquals(List.of("request-1"), received);
            assertEquals(TransferStatus.DONE, initiator.status(await(initiator, hostPart)));
            assertEquals(TransferStatus.DONE, initiator.status(await(initiator, devicePart)));
        }
        finally {
            FakeCuda.set("copy_delay_us", 0);
        }
    }

    @Test
    void aFailedCopyFailsTheTransferAndSendsNothing() throws InterruptedException
    {
        TransferBackend initiator = backend(Map.of());
        TransferBackend target = backend(Map.of());
        Allocation device = initiator.allocate(BYTES, MemoryKind.DEVICE, 0);
        Allocation targetDevice = target.allocate(BYTES, MemoryKind.DEVICE, 0);
        Peer peer = initiator.connect(target.localMetadata());
        PreparedList local = initiator.prepareLocal(blocks(MemoryKind.DEVICE, device.address(), 0, BLOCKS));
        PreparedList remote = initiator.prepareRemote(peer, blocks(MemoryKind.DEVICE, targetDevice.address(), 0, BLOCKS));
        FakeCuda.set("fail_copies", 1);
        long handle = await(initiator, initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, range(0, 4))
                .remote(remote, range(0, 4)).count(4).notification("x".getBytes(StandardCharsets.UTF_8))));
        assertEquals(TransferStatus.FAILED, initiator.status(handle));
        assertTrue(initiator.failure(handle).orElseThrow().getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
        Thread.sleep(300);
        assertEquals(0, target.drainNotifications((sender, message) -> { }), "a failed transfer announces nothing");
        assertTrue(initiator.problem().orElse("").contains("unusable"), "an illegal-address error is sticky on a real driver and is reported");
    }
}
