package io.kvbridge.core.sidechannel;

import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** An engine that runs a producer and a consumer of one rank (kv_both) serves each under its role on its one side channel. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
final class ServedRolesTest
{
    private static final RankKey RANK = new RankKey(0, 0);

    @Test
    void eachRoleOfOneRankIsServedToTheClientsThatAskForIt()
    {
        RankMetadata base = SideChannelFixtures.engine("both-0", 1, 1).getFirst();
        RankMetadata producer = withTransportMetadata(base, "producer transport");
        RankMetadata consumer = withTransportMetadata(base, "consumer transport");
        SideChannelClient client = new SideChannelClient(SideChannelFixtures.fast().build(), SideChannelClock.system());
        HandshakeVerifier verifier = new HandshakeVerifier(base.geometry().model(), CompatibilityMode.STRICT, WireLimits.DEFAULT);
        try (SideChannelServer server = SideChannelServer.startEmpty("both-0", SideChannelFixtures.fast().build(), SideChannelClock.system())) {
            server.publish(producer, ServedRole.PRODUCER, null);
            server.publish(consumer, ServedRole.CONSUMER, null);
            assertEquals(Set.of(RANK), server.ranks());
            assertEquals(Set.of(ServedRole.PRODUCER, ServedRole.CONSUMER), server.roles(RANK));
            assertEquals(producer, fetch(client, verifier, server, ServedRole.PRODUCER));
            assertEquals(consumer, fetch(client, verifier, server, ServedRole.CONSUMER));
            assertError(ErrorCode.HANDSHAKE_FAILED, () -> fetch(client, verifier, server, null),
                    "engine both-0 serves both a producer and a consumer at rank pp0:tp0 (kv_both) and the request names neither");

            server.withdraw(ServedRole.CONSUMER, RANK);
            assertEquals(producer, fetch(client, verifier, server, ServedRole.PRODUCER), "withdrawing one role leaves the other");
            assertEquals(producer, fetch(client, verifier, server, null), "a rank served under one role answers a request naming none");
            assertError(ErrorCode.HANDSHAKE_FAILED, () -> fetch(client, verifier, server, ServedRole.CONSUMER),
                    "engine both-0 has no consumer rank pp0:tp0 (it serves [producer pp0:tp0])");
        }
    }

    @Test
    void aRankPublishedWithoutARoleAnswersEitherRole()
    {
        RankMetadata rank = SideChannelFixtures.engine("plain-0", 1, 1).getFirst();
        SideChannelClient client = new SideChannelClient(SideChannelFixtures.fast().build(), SideChannelClock.system());
        HandshakeVerifier verifier = new HandshakeVerifier(rank.geometry().model(), CompatibilityMode.STRICT, WireLimits.DEFAULT);
        try (SideChannelServer server = SideChannelServer.start("plain-0", List.of(rank), SideChannelFixtures.fast().build(), SideChannelClock.system())) {
            assertEquals(rank, fetch(client, verifier, server, ServedRole.PRODUCER));
            assertEquals(rank, fetch(client, verifier, server, ServedRole.CONSUMER));
            assertEquals(rank, fetch(client, verifier, server, null));
        }
    }

    private static RankMetadata fetch(SideChannelClient client, HandshakeVerifier verifier, SideChannelServer server, ServedRole role)
    {
        return verifier.verify(client.fetch(server.address(), List.of(RANK), role, null).getFirst().payload()).metadata();
    }

    private static RankMetadata withTransportMetadata(RankMetadata rank, String transportMetadata)
    {
        return new RankMetadata(rank.engineId(), rank.epoch(), rank.transport(), transportMetadata.getBytes(StandardCharsets.UTF_8), rank.capabilities(),
                rank.geometry());
    }
}
