package io.kvbridge.core.tools;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelServer;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.wire.ConnectionKeys;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.TestingGeometries;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The exported peer holding the secret: it fetches what an engine publishes only with the engine's secret. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class AuthenticatedPeerClientTest
{
    private static final byte[] SECRET = "a secret both engines were given, 32+".getBytes(StandardCharsets.US_ASCII);
    private static final Duration TIMEOUT = Duration.ofSeconds(3);

    private static SideChannelServer serve(RankMetadata... ranks)
    {
        SideChannelSettings settings = SideChannelSettings.builder().secret(SECRET).connectTimeout(TIMEOUT).readTimeout(TIMEOUT).handshakeTimeout(TIMEOUT)
                .build();
        return SideChannelServer.start("prefill-0", List.of(ranks), settings, SideChannelClock.system());
    }

    @Test
    void fetchesTheRankItAsksForWithTheEnginesSecret()
    {
        RankMetadata first = TestingGeometries.metadata("prefill-0", TestingGeometries.perLayer(4, new Rank(0, 1, 0, 2)));
        RankMetadata second = TestingGeometries.metadata("prefill-0", TestingGeometries.perLayer(4, new Rank(0, 1, 1, 2)));
        try (SideChannelServer server = serve(first, second)) {
            AuthenticatedPeerClient.PublishedTransport published = new AuthenticatedPeerClient(SECRET, TIMEOUT).transport(server.address(), 0, 1);
            assertEquals("prefill-0", published.engineId());
            assertEquals(second.transport(), published.transport());
            assertArrayEquals(second.transportMetadata(), published.metadata());
        }
    }

    @Test
    void aWrongSecretFetchesNothing()
    {
        RankMetadata rank = TestingGeometries.metadata("prefill-0", TestingGeometries.perLayer(4, new Rank(0, 1, 0, 1)));
        byte[] wrong = SECRET.clone();
        wrong[0] ^= 1;
        try (SideChannelServer server = serve(rank)) {
            KvBridgeException refused = assertThrows(KvBridgeException.class, () -> new AuthenticatedPeerClient(wrong, TIMEOUT).transport(server.address(), 0, 0));
            assertTrue(ErrorCode.AUTHENTICATION_FAILED == refused.code() || ErrorCode.HANDSHAKE_FAILED == refused.code(),
                    "refused with " + refused.code() + ": " + refused.getMessage());
        }
    }

    @Test
    void derivesEachTransportsConnectionKeyAsAnEngineDoesAndNeedsASecret()
    {
        AuthenticatedPeerClient client = new AuthenticatedPeerClient(SECRET, TIMEOUT);
        assertArrayEquals(ConnectionKeys.derive(SECRET, "tcp").orElseThrow(), client.connectionKey("tcp"));
        assertFalse(Arrays.equals(client.connectionKey("tcp"), client.connectionKey("cuda-ipc")), "one transport's key opens another's");
        KvBridgeException empty = assertThrows(KvBridgeException.class, () -> new AuthenticatedPeerClient(new byte[0], TIMEOUT));
        assertEquals(ErrorCode.INVALID_ARGUMENT, empty.code());
    }
}
