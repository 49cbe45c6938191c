package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static io.kvbridge.core.wire.Trees.assertError;
import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.ManualClock;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.wire.NotificationSeal;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.Rank;
import io.micrometer.core.instrument.Counter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Completions, heartbeats and push messages forged by processes that are not peers, replayed by
 * others, or sent by a peer without the shared secret: none is accepted, every one is counted by
 * reason, and the requests end exactly as they would without them.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class ForgedNotificationsTest
{
    private static final byte[] SECRET = "a-shared-secret-of-32-bytes-long".getBytes(US_ASCII);

    private final ManualClock clock = new ManualClock();

    private static double rejected(EngineHarness harness, PeerSessions.Rejection reason)
    {
        Counter counter = harness.registry.find("kvbridge.notifications.rejected").tag("reason", reason.tag).counter();
        return counter == null ? 0 : counter.count();
    }

    private static void steps(ConnectorRank rank, int count)
    {
        for (int i = 0; i < count; i++) {
            rank.runtime().step();
        }
    }

    private static List<byte[]> everyStateChange(String requestId, long epoch)
    {
        return List.of(Messages.completion(requestId, 1, epoch), Messages.heartbeat(epoch, List.of(requestId)),
                Messages.registration(new Messages.Registration("d-" + requestId, requestId, "d", "127.0.0.1", 1, 0, 0, 1, false, ids(2), epoch, epoch, new byte[0])),
                Messages.pushDone("d-" + requestId, requestId, epoch), Messages.pushFailed("d-" + requestId, requestId, ErrorCode.TRANSFER_FAILED, "forged", epoch));
    }

    @Test
    void nothingANonPeerSendsIsAcceptedAndEveryMessageIsCounted()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            producer.prefillFinished("req-1", ids(1));
            producer.prefillFinished("req-2", ids(2));
            stepUntil(() -> producer.audit().leasesHeld() == 2, "held", producer);
            EngineHarness.RawPeer stranger = harness.strangerTo(producer);
            // a completion, a heartbeat, a registration that would free the blocks (write=false), push done and failed
            List<byte[]> forged = everyStateChange("req-1", producer.epoch);
            for (byte[] message : forged) {
                stranger.send(message);
            }
            // sealed, but with a session it made up: nobody opened it here
            SessionKey madeUp = SessionKey.derive(new byte[0], SessionKey.newNonce(), SessionKey.newNonce(), stranger.transport().agentName(), "p", 0, 0);
            stranger.sendRaw(new NotificationSeal(madeUp).seal(Messages.completion("req-1", 1, producer.epoch)));
            steps(producer, 20);
            assertEquals(List.of(), producer.poll(), "a forged completion or registration freed a held request");
            assertEquals(forged.size(), rejected(harness, PeerSessions.Rejection.UNSEALED));
            assertEquals(1, rejected(harness, PeerSessions.Rejection.UNKNOWN_SESSION));
            // a forged heartbeat does not hold the lease: 25 s in, it would extend it to 45 s
            clock.advance(Duration.ofSeconds(25));
            stranger.send(Messages.heartbeat(producer.epoch, List.of("req-1", "req-2")));
            steps(producer, 5);
            clock.advance(Duration.ofSeconds(6));
            EngineHarness.RawPeer consumer = harness.rawPeerTo(producer);
            consumer.send(Messages.completion("req-2", 1, producer.epoch));
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 2, "both end", producer);
            assertEquals(List.of(new FreedRequest("req-2", FreeReason.COMPLETED), new FreedRequest("req-1", FreeReason.EXPIRED)),
                    freed.stream().sorted((a, b) -> b.requestId().compareTo(a.requestId())).toList());
            assertEquals(forged.size() + 1, rejected(harness, PeerSessions.Rejection.UNSEALED));
            assertEquals(1, harness.registry.get("kvbridge.lease.expired").counter().count());
        }
    }

    @Test
    void aPeersNotificationCannotBeReplayedRedirectedOrAltered()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            producer.prefillFinished("r0", ids(1));
            stepUntil(() -> producer.audit().leasesHeld() == 1, "held", producer);
            EngineHarness.RawPeer first = harness.rawPeerTo(producer);
            EngineHarness.RawPeer second = harness.rawPeerTo(producer);
            EngineHarness.RawPeer stranger = harness.strangerTo(producer);
            // r0 waits for two consumers; the first one's completion is captured on its way
            byte[] captured = first.sealed(Messages.completion("r0", 2, producer.epoch));
            first.sendRaw(captured);
            first.sendRaw(captured);
            // from another sender it would count as the second consumer on a transport that trusts the sender's name
            stranger.sendRaw(captured);
            second.sendRaw(captured);
            byte[] altered = first.sealed(Messages.completion("r0", 2, producer.epoch));
            altered[NotificationSeal.HEADER_BYTES] ^= 1;
            first.sendRaw(altered);
            steps(producer, 20);
            assertEquals(List.of(), producer.poll(), "one real completion of two completed the request");
            assertEquals(1, rejected(harness, PeerSessions.Rejection.REPLAYED));
            assertEquals(2, rejected(harness, PeerSessions.Rejection.WRONG_SENDER));
            assertEquals(1, rejected(harness, PeerSessions.Rejection.BAD_MAC));
            second.send(Messages.completion("r0", 2, producer.epoch));
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "completed", producer);
            assertEquals(List.of(new FreedRequest("r0", FreeReason.COMPLETED)), freed);
        }
    }

    @Test
    void withASecretAPeerWithoutItOpensNoSessionAndForgesNothingWhileRealPeersTransfer()
    {
        SideChannelSettings withSecret = SideChannelSettings.builder().secret(SECRET).build();
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), SideChannelClock.system(), withSecret)) {
            TestCache producerCache = harness.cache(TestCache.Shape.of(2, 32, false), Rank.single());
            TestCache consumerCache = harness.cache(TestCache.Shape.of(2, 32, false), Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b);
            // the attacker knows the address and the rank, not the secret: its handshake is refused, so no session opens
            EngineHarness.RawPeer attacker = harness.strangerTo(producer);
            SideChannelClient withoutSecret = new SideChannelClient(SideChannelSettings.builder().build(), SideChannelClock.system());
            SideChannelClient wrongSecret = new SideChannelClient(SideChannelSettings.builder().secret("another-secret-of-32-bytes-long!".getBytes(US_ASCII))
                    .build(), SideChannelClock.system());
            for (SideChannelClient client : List.of(withoutSecret, wrongSecret)) {
                assertError(ErrorCode.AUTHENTICATION_FAILED, () -> client.fetch(RankRuntime.socketAddress(producer.runtime().ownAddress()), List.of(new RankKey(0, 0)),
                        new SideChannelClient.SessionRequest(attacker.transport().agentName(), SessionKey.newNonce())));
            }
            assertEquals(0, producer.runtime().services().sideChannel("prefill").sessionsOpened(), "a refused handshake opened a session");
            for (int request = 0; request < 4; request++) {
                int[] blocks = {request * 2, request * 2 + 1};
                producerCache.fill(request, blocks);
                TransferParams params = producer.prefillFinished("req-" + request, ids(blocks));
                // forged while the real request is held: a completion, and everything else that changes state
                for (byte[] message : everyStateChange("req-" + request, producer.epoch)) {
                    attacker.send(message);
                }
                // sealed with a key from the wrong secret over nonces of its own
                SessionKey guessed = SessionKey.derive("another-secret-of-32-bytes-long!".getBytes(US_ASCII), SessionKey.newNonce(),
                        SessionKey.newNonce(), attacker.transport().agentName(), "prefill", 0, 0);
                attacker.sendRaw(new NotificationSeal(guessed).seal(Messages.completion("req-" + request, 1, producer.epoch)));
                consumer.blocksAllocated("d-" + request, params, request % 2 == 0 ? TransferMode.PULL : TransferMode.PUSH, ids(20 + request * 2,
                        21 + request * 2));
                List<String> received = new ArrayList<>();
                List<ReceiveFailure> failed = new ArrayList<>();
                await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "received");
                assertEquals(List.of(), failed);
                consumerCache.check(request, new int[] {20 + request * 2, 21 + request * 2}, 2);
            }
            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(producer, freed).size() == 4, "producer frees");
            assertEquals(4, freed.stream().filter(f -> f.reason() == FreeReason.COMPLETED).count(), freed.toString());
            await(() -> rejected(harness, PeerSessions.Rejection.UNSEALED) == 20 && rejected(harness, PeerSessions.Rejection.UNKNOWN_SESSION) == 4,
                    "every forged message counted");
            assertEquals(0, rejected(harness, PeerSessions.Rejection.BAD_MAC) + rejected(harness, PeerSessions.Rejection.REPLAYED)
                    + rejected(harness, PeerSessions.Rejection.WRONG_SENDER), "nothing the real peers sent was dropped");
        }
    }

    @Test
    void aConsumerWaitingForPushTakesNoPushResultFromANonPeer()
    {
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            ProducerRank producer = harness.producer("p", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(TestCache.Shape.of(1, 16, false), Rank.single()), false, b -> b);
            TransferParams params = producer.prefillFinished("r", ids(1));
            consumer.blocksAllocated("d-r", params, TransferMode.PUSH, ids(3));
            stepUntil(() -> consumer.registered("d-r"), "registered", consumer);
            EngineHarness.RawPeer stranger = harness.strangerTo(consumer);
            stranger.send(Messages.pushFailed("d-r", "r", ErrorCode.TRANSFER_FAILED, "forged failure", consumer.epoch));
            stranger.send(Messages.pushDone("d-r", "r", consumer.epoch));
            steps(consumer, 20);
            assertEquals(List.of(), consumer.poll().failed(), "a forged push failure failed the request");
            assertEquals(1, consumer.audit().requests());
            assertEquals(2, rejected(harness, PeerSessions.Rejection.UNSEALED));
            // the real producer's write still completes it
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "received", consumer,
                    producer);
            assertEquals(List.of("d-r"), received);
        }
    }
}
