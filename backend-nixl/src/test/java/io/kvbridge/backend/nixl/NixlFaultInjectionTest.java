package io.kvbridge.backend.nixl;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

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
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Failures NIXL reports, injected into the fake, reach the caller as typed errors through the real
 * binding: a refused post, a failing status, a peer gone mid-transfer, a request NIXL cannot cancel.
 */
@Timeout(60)
final class NixlFaultInjectionTest
{
    private static final int BLOCKS = 16;
    private static final int BLOCK_BYTES = 4096;
    private static final Duration DEADLINE = Duration.ofSeconds(10);

    @RegisterExtension
    final FakeLeakCheck leakCheck = new FakeLeakCheck(FakeNixl.HEAD);

    private final FakeNixl fake = FakeNixl.HEAD;
    private final List<TransferBackend> backends = new ArrayList<>();
    private Arena arena;
    private TransferBackend initiator;
    private TransferBackend target;
    private MemorySegment source;
    private MemorySegment destination;
    private Peer targetPeer;
    private PreparedList local;
    private PreparedList remote;

    @BeforeEach
    void connectPair()
    {
        fake.option("completion", "async");
        arena = Arena.ofShared();
        initiator = newBackend("initiator");
        target = newBackend("target");
        source = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        destination = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        Patterns.fill(source, 1);
        Patterns.fill(destination, 2);
        initiator.register(Allocation.host(source));
        target.register(Allocation.host(destination));
        targetPeer = initiator.connect(target.localMetadata());
        target.connect(initiator.localMetadata());
        local = initiator.prepareLocal(blocks(source));
        remote = initiator.prepareRemote(targetPeer, blocks(destination));
    }

    @AfterEach
    void closeAll()
    {
        fake.resetFaults();
        fake.option("completion", "async");
        backends.forEach(TransferBackend::close);
        arena.close();
    }

    private TransferBackend newBackend(String role)
    {
        String name = role + "-" + UUID.randomUUID();
        TransferBackend backend = fake.factory().create(fake.options(), () -> name);
        backends.add(backend);
        return backend;
    }

    private static DescriptorList blocks(MemorySegment segment)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, BLOCKS);
        for (int b = 0; b < BLOCKS; b++) {
            builder.add(segment.address() + (long) b * BLOCK_BYTES, BLOCK_BYTES);
        }
        return builder.build();
    }

    private long write(int block, String notification)
    {
        return initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {block}).remote(remote, new int[] {block}).count(1)
                .notification(notification == null ? null : notification.getBytes(StandardCharsets.UTF_8)));
    }

    private TransferStatus awaitTerminal(long handle)
    {
        return NixlTestSupport.awaitTerminal(initiator, handle, DEADLINE);
    }

    private MemorySegment snapshot(MemorySegment segment)
    {
        return arena.allocate(segment.byteSize(), 8).copyFrom(segment);
    }


    private void assertNoNotificationFor(Duration wait)
    {
        long deadline = System.nanoTime() + wait.toNanos();
        while (System.nanoTime() < deadline) {
            assertEquals(0, target.drainNotifications((sender, message) -> fail("unexpected notification " + new String(message, StandardCharsets.UTF_8))));
        }
    }

    @Test
    void refusedPostIsATypedErrorAndHoldsNothing()
    {
        MemorySegment before = snapshot(destination);
        fake.failNth("post_xfer_req", 1, -2);
        KvBridgeException e = assertCode(ErrorCode.TRANSFER_FAILED, () -> write(3, "req-1"));
        assertTrue(e.getMessage().contains("nixl_capi_post_xfer_req returned -2 (ERROR_BACKEND)"), e.getMessage());
        assertEquals(0, initiator.resources().transfers());
        assertEquals(0, fake.stats().liveRequests(), "the request of a refused post is released and destroyed");
        assertNoNotificationFor(Duration.ofMillis(100));
        assertEquals(-1, destination.mismatch(before));
        long handle = write(3, null);
        assertEquals(TransferStatus.DONE, awaitTerminal(handle), "the next post works");
        initiator.release(handle);
    }

    @Test
    void refusedRequestIsATypedError()
    {
        fake.failNth("make_xfer_req", 1, -6);
        KvBridgeException e = assertCode(ErrorCode.PEER_UNKNOWN, () -> write(0, null));
        assertTrue(e.getMessage().contains("nixl_capi_make_xfer_req returned -6 (ERROR_NOT_FOUND)"), e.getMessage());
        assertEquals(0, initiator.resources().transfers());
    }

    @Test
    void errorStatusFailsTheTransferWithItsReason()
    {
        fake.option("completion", "polls:3");
        fake.failNth("get_xfer_status", 2, -2);
        long handle = write(5, "never");
        assertEquals(TransferStatus.FAILED, awaitTerminal(handle));
        KvBridgeException failure = initiator.failure(handle).orElseThrow();
        assertEquals(ErrorCode.TRANSFER_FAILED, failure.code());
        assertTrue(failure.getMessage().contains("nixl_capi_get_xfer_status returned -2"), failure.getMessage());
        initiator.release(handle);
        assertNoNotificationFor(Duration.ofMillis(100));
    }

    @Test
    void notFoundStatusIsAnUnknownPeer()
    {
        fake.option("completion", "polls:3");
        fake.failNth("get_xfer_status", 1, -6);
        long handle = write(5, null);
        assertEquals(TransferStatus.FAILED, awaitTerminal(handle));
        assertEquals(ErrorCode.PEER_UNKNOWN, initiator.failure(handle).orElseThrow().code());
        initiator.release(handle);
    }

    @Test
    void droppedPeerFailsWithinTheDeadlineAndRefusesMore()
    {
        fake.failNth("drop_peer", 1, 0);
        long started = System.nanoTime();
        long handle = write(7, "lost");
        assertEquals(TransferStatus.FAILED, awaitTerminal(handle));
        assertTrue(System.nanoTime() - started < DEADLINE.toNanos());
        assertEquals(ErrorCode.TRANSFER_FAILED, initiator.failure(handle).orElseThrow().code());
        initiator.release(handle);
        assertNoNotificationFor(Duration.ofMillis(100));
        // NIXL drops a disconnected peer's metadata, so the next request is refused until it is reloaded
        KvBridgeException again = assertCode(ErrorCode.PEER_UNKNOWN, () -> write(8, null));
        assertTrue(again.getMessage().contains(targetPeer.name()) && again.getMessage().contains("dropped its metadata"), again.getMessage());
    }

    @Test
    void requestNixlCannotCancelIsReleasedLater()
    {
        // the transfer never completes on its own: only the cancel can end it
        fake.option("completion", "polls:2000000000");
        fake.failNth("release_xfer_req", 1, -2);
        long handle = write(2, "cancelled");
        initiator.release(handle);
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> initiator.status(handle));
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (fake.stats().liveRequests() > 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(0, fake.stats().liveRequests(), "the owner retries the release until NIXL lets go of the request");
        assertEquals(0, initiator.resources().transfers());
        assertNoNotificationFor(Duration.ofMillis(100));
    }

    @Test
    void failedNotificationNamesTheCall()
    {
        fake.failNth("gen_notif", 1, -6);
        KvBridgeException e = assertCode(ErrorCode.PEER_UNKNOWN, () -> initiator.notify(targetPeer, new byte[] {1}));
        assertTrue(e.getMessage().contains("nixl_capi_gen_notif returned -6"), e.getMessage());
    }

    @Test
    void corruptMetadataIsAProtocolError()
    {
        assertCode(ErrorCode.PROTOCOL_ERROR, () -> initiator.connect(new byte[] {1, 2, 3}));
        byte[] metadata = target.localMetadata();
        metadata[metadata.length - 1] ^= 0x5a;
        KvBridgeException e = assertCode(ErrorCode.PROTOCOL_ERROR, () -> newBackend("fresh").connect(metadata));
        assertTrue(e.getMessage().contains("nixl_capi_load_remote_md returned -2"), e.getMessage());
    }

    @Test
    void deviceMemoryNeedsADeviceCapableBackend()
    {
        MemorySegment device = arena.allocate(BLOCK_BYTES, 4096);
        Allocation allocation = new Allocation(device.address(), device.byteSize(), MemoryKind.DEVICE, 1);
        KvBridgeException e = assertCode(ErrorCode.MEMORY_KIND_UNSUPPORTED, () -> initiator.register(allocation));
        assertTrue(e.getMessage().contains("nixl_capi_register_mem returned -2"), e.getMessage());
        assertEquals(1, initiator.resources().registrations());
    }

    @Test
    void deviceDescriptorsCarryTheirKindAndDevice()
    {
        fake.option("vram_as_host", "1");
        try {
            MemorySegment deviceSource = arena.allocate(BLOCK_BYTES * 4L, 4096);
            MemorySegment deviceTarget = arena.allocate(BLOCK_BYTES * 4L, 4096);
            Patterns.fill(deviceSource, 9);
            initiator.register(new Allocation(deviceSource.address(), deviceSource.byteSize(), MemoryKind.DEVICE, 1));
            target.register(new Allocation(deviceTarget.address(), deviceTarget.byteSize(), MemoryKind.DEVICE, 3));
            Peer refreshed = initiator.connect(target.localMetadata());
            PreparedList deviceLocal = initiator.prepareLocal(DescriptorList.builder(MemoryKind.DEVICE, 1, 1).add(deviceSource.address(), 4 * BLOCK_BYTES).build());
            DescriptorList wrongDevice = DescriptorList.builder(MemoryKind.DEVICE, 1, 1).add(deviceTarget.address(), 4 * BLOCK_BYTES).build();
            assertCode(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, () -> initiator.prepareRemote(refreshed, wrongDevice));
            PreparedList deviceRemote = initiator.prepareRemote(refreshed,
                    DescriptorList.builder(MemoryKind.DEVICE, 3, 1).add(deviceTarget.address(), 4 * BLOCK_BYTES).build());
            long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(deviceLocal, new int[] {0})
                    .remote(deviceRemote, new int[] {0}).count(1));
            assertEquals(TransferStatus.DONE, awaitTerminal(handle));
            initiator.release(handle);
            assertEquals(-1, deviceTarget.mismatch(deviceSource));
        }
        finally {
            fake.option("vram_as_host", "0");
        }
    }

    @Test
    void handlesAreNeverReusedAcrossManyTransfers()
    {
        long postedBefore = fake.stats().transfersPosted();
        long previous = 0;
        for (int i = 0; i < 200; i++) {
            long handle = write(i % BLOCKS, null);
            assertNotEquals(previous, handle);
            assertEquals(TransferStatus.DONE, awaitTerminal(handle));
            initiator.release(handle);
            previous = handle;
        }
        assertEquals(200, fake.stats().transfersPosted() - postedBefore, "one NIXL post per transfer");
    }
}
