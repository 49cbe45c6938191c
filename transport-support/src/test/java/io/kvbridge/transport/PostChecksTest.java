package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.TransferOp;
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
        return assertThrows(KvBridgeException.class, () -> PostChecks.opening(guard, Blocks.class, TransferOp.WRITE, local, TWO, remote, TWO, count,
                notification, MAX_NOTIFICATION)).code();
    }

    @Test
    void aPostThatPassesEveryCheckGoesThrough()
    {
        InstanceGuard guard = new InstanceGuard("test", "agent-a");
        PostChecks.opening(guard, Blocks.class, TransferOp.READ, new Blocks(guard, null), TWO, new Blocks(guard, new Peer(guard)), TWO, 2,
                new byte[MAX_NOTIFICATION], MAX_NOTIFICATION);
        PostChecks.opening(guard, Blocks.class, TransferOp.READ, new Blocks(guard, null), TWO, new Blocks(guard, new Peer(guard)), TWO, 0, null,
                MAX_NOTIFICATION);
    }

    @Test
    void eachMistakeIsRefusedWithItsCodeInTheSharedOrder()
    {
        InstanceGuard guard = new InstanceGuard("test", "agent-a");
        Blocks local = new Blocks(guard, null);
        Peer peer = new Peer(guard);
        Blocks remote = new Blocks(guard, peer);

        NullPointerException missing = assertThrows(NullPointerException.class, () -> PostChecks.opening(guard, Blocks.class, null, local, TWO, remote,
                TWO, 2, null, MAX_NOTIFICATION));
        assertEquals("op is null", missing.getMessage());
        InstanceGuard other = new InstanceGuard("test", "agent-c");
        assertEquals(ErrorCode.FOREIGN_HANDLE, refusal(guard, new Blocks(other, null), remote, 2, null));
        assertEquals(ErrorCode.FOREIGN_HANDLE, refusal(guard, new OtherBlocks(guard), remote, 2, null), "a list of another type");
        assertEquals(ErrorCode.INVALID_ARGUMENT, refusal(guard, remote, local, 2, null), "swapped sides");
        assertEquals(ErrorCode.LENGTH_MISMATCH, refusal(guard, local, remote, 3, null));
        assertEquals(ErrorCode.INVALID_ARGUMENT, refusal(guard, local, remote, 2, new byte[MAX_NOTIFICATION + 1]));

        // the notification is checked before usability: an oversized one on a dead peer's list is still the caller's mistake
        peer.markUnusable("it was disconnected");
        assertEquals(ErrorCode.INVALID_ARGUMENT, refusal(guard, local, remote, 2, new byte[MAX_NOTIFICATION + 1]));
        assertEquals(ErrorCode.PEER_UNKNOWN, refusal(guard, local, remote, 2, null));
        local.markReleased();
        assertEquals(ErrorCode.NOT_REGISTERED, refusal(guard, local, new Blocks(guard, new Peer(guard)), 2, null));

        assertTrue(guard.close());
        assertEquals(ErrorCode.CLOSED, refusal(guard, new Blocks(other, null), remote, 2, null), "closed comes before whose the lists are");
    }
}
