package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.PullKey;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.Rank;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A request's blocks are granted to its peers exactly while the request lives, over the real
 * {@code local} transport, which checks every transfer against the target's grants: a producer
 * grants what pulling consumers may read from the moment its parameters leave, a push consumer what
 * writers may write from its registration, and both revoke when the request ends.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class GrantLifecycleTest
{
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(3, 64, false);

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aRequestsBlocksAreGrantedWhileItLivesAndNoLonger(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            TestCache consumerCache = harness.cache(SHAPE, Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b);
            producerCache.fill(1, new int[] {4, 5});
            TransferParams params = producer.prefillFinished("req-1", ids(4, 5));
            // the producer serves both modes: its blocks are readable before its parameters reach anyone
            assertEquals(1, producer.audit().grants(), "one grant of the held blocks, in host memory");
            consumer.blocksAllocated("d-1", params, mode, ids(10, 11));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "received");
            assertEquals(List.of(), failed);
            consumerCache.check(1, new int[] {10, 11}, 2);
            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(producer, freed).size() == 1, "freed");
            assertEquals(FreeReason.COMPLETED, freed.getFirst().reason());
            await(() -> producer.audit().idle() && consumer.audit().idle(), "idle, every grant revoked");
            assertEquals(0, producer.audit().grants());
            assertEquals(0, consumer.audit().grants());
        }
    }

    @Test
    void parametersReplayedAfterTheRequestWasFreedReadNothing()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            TestCache consumerCache = harness.cache(SHAPE, Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b);
            producerCache.fill(1, new int[] {4, 5});
            TransferParams params = producer.prefillFinished("req-1", ids(4, 5));
            consumer.blocksAllocated("d-1", params, TransferMode.PULL, ids(10, 11));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() == 1, "received");
            await(() -> EngineHarness.drain(producer, new ArrayList<>()).size() == 1, "freed");
            // the engine reused the freed blocks for another user's prompt
            producerCache.fill(2, new int[] {4, 5});
            consumerCache.clear();
            consumer.blocksAllocated("d-2", params, TransferMode.PULL, ids(20, 21));
            await(() -> EngineHarness.collect(consumer, received, failed) != null && failed.size() == 1, "refused");
            ReceiveFailure failure = failed.getFirst();
            assertTrue(failure.message().contains(ErrorCode.NOT_GRANTED.id()), failure.message());
            consumerCache.checkZero(new int[] {20, 21});
            // a read under the key of a request that ended is a late peer, not a probe: refused, counted, not a health problem
            assertTrue(producer.runtime().transport().problem().isEmpty(), () -> "a late read made the producer unhealthy: " + producer.runtime().transport().problem());
        }
    }

    @Test
    void aPeerThatKnowsTheRequestIdAndTheMetadataButNotTheKeyReadsNothing()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            TestCache victimCache = harness.cache(SHAPE, Rank.single());
            TestCache attackerCache = harness.cache(SHAPE, Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            ConsumerRank victim = harness.consumer("decode", victimCache, true, b -> b);
            ConsumerRank attacker = harness.consumer("intruder", attackerCache, true, b -> b);
            producerCache.fill(1, new int[] {4, 5});
            TransferParams params = producer.prefillFinished("req-1", ids(4, 5));
            assertTrue(!params.pullKey(0).isNone(), "a producer that serves pulls hands a key on: " + params);

            // everything the producer publishes (engine id, side channel, epoch, sizes) and the request id, rebuilt without the parameters
            TransferParams guessed = new TransferParams(params.engineId(), "req-1", params.sideChannels(), params.tpSize(), params.ppSize(), params.blockIds(),
                    params.modes(), params.leaseMillis(), TransferParams.UNKNOWN_TIME, params.epochs());
            attacker.blocksAllocated("a-1", guessed, TransferMode.PULL, ids(10, 11));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(attacker, received, failed) != null && received.size() + failed.size() == 1, "refused");
            assertEquals(List.of(), received, "a peer without the key read the request");
            assertEquals(ErrorCode.NOT_GRANTED, failed.getFirst().code());
            assertTrue(failed.getFirst().message().contains("cannot pull request req-1 from producer prefill stage 0: its parameters carry no pull key"),
                    failed.getFirst().message());
            assertTrue(attackerCache.untouched(), "not a byte of the request reached the peer without the key");

            // a key of its own making is no better: the transport refuses the READ
            TransferParams forged = new TransferParams(params.engineId(), "req-1", params.sideChannels(), params.tpSize(), params.ppSize(), params.blockIds(),
                    params.modes(), params.leaseMillis(), TransferParams.UNKNOWN_TIME, params.epochs(), List.of(PullKey.of(new byte[PullKey.BYTES])));
            attacker.blocksAllocated("a-2", forged, TransferMode.PULL, ids(10, 11));
            await(() -> EngineHarness.collect(attacker, received, failed) != null && received.size() + failed.size() == 2, "refused");
            assertEquals(List.of(), received, "a peer with a made-up key read the request");
            assertTrue(failed.get(1).message().contains(ErrorCode.NOT_GRANTED.id()), failed.get(1).message());
            assertTrue(attackerCache.untouched(), "not a byte of the request reached the peer with a made-up key");

            // the decoder the router handed the parameters reads the request as ever
            victim.blocksAllocated("d-1", params, TransferMode.PULL, ids(10, 11));
            List<ReceiveFailure> victimFailed = new ArrayList<>();
            await(() -> EngineHarness.collect(victim, received, victimFailed) != null && received.size() + victimFailed.size() == 1, "received");
            assertEquals(List.of(), victimFailed);
            victimCache.check(1, new int[] {10, 11}, 2);
        }
    }

    @Test
    void pullKeysAreDrawnPerProcessAndNeverDerivedFromTheRequestId()
    {
        try (EngineHarness first = new EngineHarness(); EngineHarness second = new EngineHarness()) {
            ProducerRank one = first.producer("prefill", first.cache(SHAPE, Rank.single()), true, b -> b);
            ProducerRank other = second.producer("prefill", second.cache(SHAPE, Rank.single()), true, b -> b);
            PullKey key = one.prefillFinished("req-1", ids(4)).pullKey(0);
            assertNotEquals(key, other.prefillFinished("req-1", ids(4)).pullKey(0), "two producers under one engine id and request id share a key");
            assertNotEquals(key, one.prefillFinished("req-2", ids(5)).pullKey(0), "two requests share a key");
        }
    }
}
