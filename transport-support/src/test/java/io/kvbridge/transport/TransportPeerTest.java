package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

class TransportPeerTest
{
    private static final class Peer extends TransportPeer
    {
        Peer(InstanceGuard owner)
        {
            super(owner, "decode-0");
        }
    }

    @Test
    void aPeerThatBecameUnusableIsRefusedWithTheFirstReasonAndTheRemedy()
    {
        Peer peer = new Peer(new InstanceGuard("example", "prefill-0"));
        peer.checkUsable("connect() again");
        peer.markUnusable("it was disconnected");
        peer.markUnusable("this transport was closed");
        KvBridgeException refused = assertThrows(KvBridgeException.class, () -> peer.checkUsable("connect() again"));
        assertEquals(ErrorCode.PEER_UNKNOWN, refused.code());
        assertEquals("KVB/PeerUnknown: peer 'decode-0' cannot be used: it was disconnected; connect() again", refused.getMessage());
    }
}
