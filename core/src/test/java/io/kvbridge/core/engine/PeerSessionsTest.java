package io.kvbridge.core.engine;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.transfer.Peer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/** Sealing towards a peer that was connected again under the session it already used. */
final class PeerSessionsTest
{
    private static final SessionKey KEY = SessionKey.derive(new byte[0], new byte[16], new byte[16], "consumer", "p", 0, 0);

    private record NamedPeer(String name) implements Peer
    {
    }

    @Test
    void aPeerConnectedAgainUnderItsSessionGoesOnWithItsSequenceNumbers()
    {
        PeerSessions consumer = new PeerSessions("consumer", new TransferMetrics(new SimpleMeterRegistry()));
        PeerSessions producer = new PeerSessions("producer", new TransferMetrics(new SimpleMeterRegistry()));
        producer.established(KEY);
        byte[] body = "m1:1".getBytes(US_ASCII);
        Peer first = new NamedPeer("p-agent");
        consumer.bind(first, KEY);
        assertArrayEquals(body, producer.open("consumer", consumer.seal(first, body)));
        assertArrayEquals(body, producer.open("consumer", consumer.seal(first, body)));
        // a failed transfer dropped the transport peer; the handshake, and so the session, is the cached one
        consumer.unbind(first);
        Peer again = new NamedPeer("p-agent");
        consumer.bind(again, KEY);
        assertArrayEquals(body, producer.open("consumer", consumer.seal(again, body)), "the third notification read as a replay");
        assertEquals(0, producer.rejected(PeerSessions.Rejection.REPLAYED));
    }
}
