package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.collect;
import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.spi.geometry.Rank;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A rank's links are owned by their remote engine: closing one engine's links touches no other engine's. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class PeerLinksTest
{
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(2, 16, false);

    @Test
    void closingOneRemoteEngineKeepsTheLinksOfAnEngineWhoseIdBeginsWithItsKey()
    {
        try (EngineHarness harness = new EngineHarness()) {
            ProducerRank first = harness.producer("p", harness.cache(SHAPE, Rank.single()), true, b -> b);
            // an engine id may hold any printable character, so another engine's id can begin with "<id>@<address>|"
            ProducerRank second = harness.producer("p@" + first.runtime().ownAddress() + "|x", harness.cache(SHAPE, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(SHAPE, Rank.single()), false, b -> b);
            consumer.blocksAllocated("d-1", first.prefillFinished("r-1", ids(1)), TransferMode.PULL, ids(2));
            consumer.blocksAllocated("d-2", second.prefillFinished("r-2", ids(1)), TransferMode.PULL, ids(3));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> collect(consumer, received, failed) != null && received.size() + failed.size() == 2, "both received", consumer);
            assertEquals(List.of(), failed);
            ConnectorAudit before = consumer.audit();
            assertEquals(2, before.transport().peers(), "one link to each producer");

            consumer.runtime().peers().peerFailed(new RemoteKey("p", first.runtime().ownAddress()));
            consumer.runtime().step();

            ConnectorAudit after = consumer.audit();
            assertEquals(1, after.transport().peers(), "the second producer's link stays connected");
            assertEquals(before.transport().preparedLists() / 2, after.transport().preparedLists(), "the second producer's lists stay prepared");
        }
    }
}
