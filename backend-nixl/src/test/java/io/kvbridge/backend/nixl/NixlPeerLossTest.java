package io.kvbridge.backend.nixl;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A peer NIXL drops after a failed transfer, in both status dialects. NIXL forgets a disconnected
 * peer's metadata by itself; 1.4.0 then answers every request to it with a bare {@code -2} from
 * {@code make_xfer_req}. The transport names the peer and reports {@code PEER_UNKNOWN} for every
 * later call, and fresh metadata makes the peer usable again.
 */
@Timeout(60)
final class NixlPeerLossTest
{
    private static final int BLOCKS = 8;
    private static final long BLOCK = 4096;
    private static final Duration DEADLINE = Duration.ofSeconds(10);

    static Stream<FakeNixl> dialects()
    {
        return Stream.of(FakeNixl.HEAD, FakeNixl.V1_4);
    }

    @ParameterizedTest
    @MethodSource("dialects")
    void everyCallAfterTheDropNamesThePeerUntilItIsConnectedAgain(FakeNixl fake)
    {
        FakeNixl.Stats before = fake.stats();
        try (Arena arena = Arena.ofShared();
                TransferBackend initiator = fake.factory().create(fake.options(), () -> "loss-initiator-" + UUID.randomUUID());
                TransferBackend target = fake.factory().create(fake.options(), () -> "loss-target-" + UUID.randomUUID())) {
            MemorySegment source = arena.allocate(BLOCKS * BLOCK, 4096);
            MemorySegment destination = arena.allocate(BLOCKS * BLOCK, 4096);
            initiator.register(Allocation.host(source));
            target.register(Allocation.host(destination));
            Peer peer = initiator.connect(target.localMetadata());
            PreparedList local = initiator.prepareLocal(blocks(source));
            PreparedList remote = initiator.prepareRemote(peer, blocks(destination));

            fake.failNth("drop_peer", 1, 0);
            long lost = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {0}).remote(remote, new int[] {0})
                    .count(1));
            assertEquals(TransferStatus.FAILED, NixlTestSupport.awaitTerminal(initiator, lost, DEADLINE));
            KvBridgeException failure = initiator.failure(lost).orElseThrow();
            assertEquals(ErrorCode.TRANSFER_FAILED, failure.code(), failure.getMessage());
            assertTrue(failure.getMessage().contains(peer.name()) && failure.getMessage().contains("dropped its metadata"), failure.getMessage());
            initiator.release(lost);

            KvBridgeException post = assertCode(ErrorCode.PEER_UNKNOWN, () -> initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {1}).remote(remote, new int[] {1}).count(1)));
            assertTrue(post.getMessage().contains(peer.name()), post.getMessage());
            assertCode(ErrorCode.PEER_UNKNOWN, () -> initiator.notify(peer, new byte[] {1}));
            assertCode(ErrorCode.PEER_UNKNOWN, () -> initiator.prepareRemote(peer, blocks(destination)));

            initiator.disconnect(peer);
            assertEquals(0, initiator.resources().peers());
            Peer again = initiator.connect(target.localMetadata());
            PreparedList fresh = initiator.prepareRemote(again, blocks(destination));
            long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {2}).remote(fresh, new int[] {2})
                    .count(1));
            assertEquals(TransferStatus.DONE, NixlTestSupport.awaitTerminal(initiator, handle, DEADLINE));
            initiator.release(handle);
            assertEquals(-1, source.asSlice(2 * BLOCK, BLOCK).mismatch(destination.asSlice(2 * BLOCK, BLOCK)), "the reconnected peer received the block");
        }
        finally {
            fake.resetFaults();
        }
        fake.assertNothingLeft(before);
    }

    @ParameterizedTest
    @MethodSource("dialects")
    void aRefusedNotificationMakesThePeerUnknownUntilItIsConnectedAgain(FakeNixl fake)
    {
        FakeNixl.Stats before = fake.stats();
        try (Arena arena = Arena.ofShared();
                TransferBackend initiator = fake.factory().create(fake.options(), () -> "notify-initiator-" + UUID.randomUUID());
                TransferBackend target = fake.factory().create(fake.options(), () -> "notify-target-" + UUID.randomUUID())) {
            MemorySegment source = arena.allocate(BLOCKS * BLOCK, 4096);
            MemorySegment destination = arena.allocate(BLOCKS * BLOCK, 4096);
            initiator.register(Allocation.host(source));
            target.register(Allocation.host(destination));
            Peer peer = initiator.connect(target.localMetadata());
            PreparedList local = initiator.prepareLocal(blocks(source));
            PreparedList remote = initiator.prepareRemote(peer, blocks(destination));

            // as NIXL 1.4.0 answers a notification to a peer that died: -2, with the peer's metadata kept
            fake.failNth("gen_notif", 1, -2);
            KvBridgeException refused = assertCode(ErrorCode.PEER_UNKNOWN, () -> initiator.notify(peer, new byte[] {1}));
            assertTrue(refused.getMessage().contains(peer.name()) && refused.getMessage().contains("nixl_capi_gen_notif returned -2"), refused.getMessage());
            KvBridgeException post = assertCode(ErrorCode.PEER_UNKNOWN, () -> initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {1}).remote(remote, new int[] {1}).count(1)));
            assertTrue(post.getMessage().contains("refused a notification"), post.getMessage());
            assertCode(ErrorCode.PEER_UNKNOWN, () -> initiator.prepareRemote(peer, blocks(destination)));

            // connecting again while NIXL still holds the old metadata makes a new, usable peer
            Peer again = initiator.connect(target.localMetadata());
            PreparedList fresh = initiator.prepareRemote(again, blocks(destination));
            long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {2}).remote(fresh, new int[] {2})
                    .count(1));
            assertEquals(TransferStatus.DONE, NixlTestSupport.awaitTerminal(initiator, handle, DEADLINE));
            initiator.release(handle);
            initiator.notify(again, new byte[] {2});
            assertEquals(1, initiator.resources().peers());
        }
        finally {
            fake.resetFaults();
        }
        fake.assertNothingLeft(before);
    }

    private static DescriptorList blocks(MemorySegment memory)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, BLOCKS);
        for (int b = 0; b < BLOCKS; b++) {
            builder.add(memory.address() + b * BLOCK, BLOCK);
        }
        return builder.build();
    }
}
