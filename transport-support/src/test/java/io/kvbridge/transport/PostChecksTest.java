package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import org.junit.jupiter.api.Test;

final class PostChecksTest
{
    private static final int MAX_NOTIFICATION = 16;
    private static final int[] TWO = {0, 1};

    private static final class Peer extends TransportPeer
    {
        Peer(InstanceGuard owner)
        {
            super(owner, "peer-b");
        }
    }

    private static final class Blocks extends OwnedPreparedList
    {
        Blocks(InstanceGuard owner, TransportPeer peer)
        {
            super(owner, peer, MemoryKind.HOST, 0, new long[] {4096, 8192}, new long[] {4096, 4096}, new int[2], new Registration[0]);
        }
    }

    private static final class OtherBlocks extends OwnedPreparedList
    {
        OtherBlocks(InstanceGuard owner)
        {
            super(owner, null, MemoryKind.HOST, 0, new long[] {4096}, new long[] {4096}, new int[1], new Registration[0]);
        }
    }

    private static ErrorCode refusal(InstanceGuard guard, OwnedPreparedList local, OwnedPreparedList remote, int count, byte[] notification)
    {
        TransferRequest request = new TransferRequest().start(TransferOp.WRITE).local(local, TWO).remote(remote, TWO).count(count).notification(notification);
        return assertThrows(KvBridgeException.class, () -> PostChecks.opening(guard, Blocks.class, request, MAX_NOTIFICATION)).code();
    }

    private static KvBridgeException refused(InstanceGuard guard, TransferRequest request)
    {
        return assertThrows(KvBridgeException.class, () -> PostChecks.opening(guard, Blocks.class, request, MAX_NOTIFICATION));
    }

    @Test
    void aPostThatPassesEveryCheckGoesThrough()
    {
        InstanceGuard guard = new InstanceGuard("test", "agent-a");
        TransferRequest request = new TransferRequest();
        PostChecks.opening(guard, Blocks.class, request.start(TransferOp.READ).local(new Blocks(guard, null), TWO).remote(new Blocks(guard, new Peer(guard)), TWO)
                .count(2).notification(new byte[MAX_NOTIFICATION]).grantKey(new byte[TransferBackend.MAX_GRANT_KEY_BYTES]), MAX_NOTIFICATION);
        PostChecks.opening(guard, Blocks.class, request.start(TransferOp.READ).local(new Blocks(guard, null), TWO).remote(new Blocks(guard, new Peer(guard)), TWO)
                .count(0), MAX_NOTIFICATION);
    }

    @Test
    void eachMistakeIsRefusedWithItsCodeInTheSharedOrder()
    {
        InstanceGuard guard = new InstanceGuard("test", "agent-a");
        Blocks local = new Blocks(guard, null);
        Peer peer = new Peer(guard);
        Blocks remote = new Blocks(guard, peer);

        NullPointerException missing = assertThrows(NullPointerException.class, () -> PostChecks.opening(guard, Blocks.class, null, MAX_NOTIFICATION));
        assertEquals("request is null", missing.getMessage());
        InstanceGuard other = new InstanceGuard("test", "agent-c");
        assertEquals(ErrorCode.FOREIGN_HANDLE, refusal(guard, new Blocks(other, null), remote, 2, null));
        assertEquals(ErrorCode.FOREIGN_HANDLE, refusal(guard, new OtherBlocks(guard), remote, 2, null), "a list of another type");
        assertEquals(ErrorCode.INVALID_ARGUMENT, refusal(guard, remote, local, 2, null), "swapped sides");
        assertEquals(ErrorCode.LENGTH_MISMATCH, refusal(guard, local, remote, 3, null));
        assertEquals(ErrorCode.INVALID_ARGUMENT, refusal(guard, local, remote, 2, new byte[MAX_NOTIFICATION + 1]));
        TransferRequest request = new TransferRequest().start(TransferOp.WRITE).local(local, TWO).remote(remote, TWO).count(2);
        assertTrue(refused(guard, request.grantKey(new byte[0])).getMessage().contains("grant key of 0 bytes (expected: 1 to 64"));
        assertTrue(refused(guard, request.grantKey(new byte[TransferBackend.MAX_GRANT_KEY_BYTES + 1])).getMessage().contains("grant key of 65 bytes"));

        // the notification is checked before usability: an oversized one on a dead peer's list is still the caller's mistake
        peer.markUnusable("it was disconnected");
        assertEquals(ErrorCode.INVALID_ARGUMENT, refusal(guard, local, remote, 2, new byte[MAX_NOTIFICATION + 1]));
        assertEquals(ErrorCode.PEER_UNKNOWN, refusal(guard, local, remote, 2, null));
        local.markReleased();
        assertEquals(ErrorCode.NOT_REGISTERED, refusal(guard, local, new Blocks(guard, new Peer(guard)), 2, null));

        assertTrue(guard.close());
        assertEquals(ErrorCode.CLOSED, refusal(guard, new Blocks(other, null), remote, 2, null), "closed comes before whose the lists are");
    }

    @Test
    void anIncompleteRequestIsRefusedNamingTheCallThatCompletesIt()
    {
        InstanceGuard guard = new InstanceGuard("test", "agent-a");
        Blocks local = new Blocks(guard, null);
        Blocks remote = new Blocks(guard, new Peer(guard));
        TransferRequest request = new TransferRequest();

        assertIncomplete(refused(guard, request), "no operation", "start(TransferOp)");
        assertIncomplete(refused(guard, request.start(TransferOp.WRITE).remote(remote, TWO).count(2)), "no local list or indices", "local(list, indices)");
        assertIncomplete(refused(guard, request.start(TransferOp.WRITE).local(local, null).remote(remote, TWO).count(2)), "no local list or indices",
                "local(list, indices)");
        assertIncomplete(refused(guard, request.start(TransferOp.WRITE).local(local, TWO).count(2)), "no remote list or indices", "remote(list, indices)");
        assertIncomplete(refused(guard, request.start(TransferOp.WRITE).local(local, TWO).remote(remote, TWO)), "no count", "count(pairs)");
        // a count set for the previous transfer does not carry over into the next
        request.start(TransferOp.WRITE).local(local, TWO).remote(remote, TWO).count(2);
        PostChecks.opening(guard, Blocks.class, request, MAX_NOTIFICATION);
        assertIncomplete(refused(guard, request.start(TransferOp.READ).local(local, TWO).remote(remote, TWO)), "no count", "count(pairs)");
    }

    @Test
    void startClearsWhatThePreviousTransferSet()
    {
        InstanceGuard guard = new InstanceGuard("test", "agent-a");
        TransferRequest request = new TransferRequest().start(TransferOp.WRITE).local(new Blocks(guard, null), TWO).remote(new Blocks(guard, new Peer(guard)), TWO)
                .count(2).notification(new byte[1]).grantKey(new byte[1]);

        request.start(TransferOp.READ);

        assertEquals(TransferOp.READ, request.op());
        assertNull(request.local());
        assertNull(request.localIndices());
        assertNull(request.remote());
        assertNull(request.remoteIndices());
        assertEquals(TransferRequest.NO_COUNT, request.count());
        assertNull(request.notification(), "a notification meant for the previous transfer is not sent with the next");
        assertNull(request.grantKey(), "a key meant for the previous peer is not presented to the next");
    }

    @Test
    void aCopiedGrantKeyFillsTheTransfersBuffer()
    {
        byte[] buffer = new byte[TransferBackend.MAX_GRANT_KEY_BYTES];
        TransferRequest request = new TransferRequest().start(TransferOp.WRITE);
        assertEquals(0, PostChecks.copyGrantKey(request, buffer));
        assertEquals(3, PostChecks.copyGrantKey(request.grantKey(new byte[] {7, 8, 9}), buffer));
        assertEquals(9, buffer[2]);
    }

    private static void assertIncomplete(KvBridgeException e, String missing, String call)
    {
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains("the transfer request has " + missing + "; call " + call), e.getMessage());
    }
}
