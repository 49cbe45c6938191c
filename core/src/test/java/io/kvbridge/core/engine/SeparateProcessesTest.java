package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.geometry.Rank;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Producer stages and the decoder as separate processes would run them: each stage has services of
 * its own and serves only its own rank on its own side channel; the transfer parameters carry both
 * stages' addresses, and the consumer shakes hands with each.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class SeparateProcessesTest
{
    private static int freePort()
            throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void stagesOnTheirOwnSideChannelsServeOneConsumer(TransferMode mode)
            throws IOException
    {
        List<SideChannelAddress> stageAddresses = List.of(new SideChannelAddress("127.0.0.1", freePort()),
                new SideChannelAddress("127.0.0.1", freePort()));
        TestCache.Shape shape = TestCache.Shape.of(4, 16, false).stages(2, 2);
        try (EngineHarness stage0 = new EngineHarness(); EngineHarness stage1 = new EngineHarness(); EngineHarness decoder = new EngineHarness()) {
            List<ProducerRank> stages = new ArrayList<>();
            List<EngineHarness> processes = List.of(stage0, stage1);
            for (int pp = 0; pp < 2; pp++) {
                TestCache cache = processes.get(pp).cache(shape, new Rank(pp, 2, 0, 1));
                cache.fill(21, new int[] {7, 8, 9});
                int port = stageAddresses.get(pp).port();
                stages.add(processes.get(pp).producer("split-engine", cache, true, b -> b.sideChannel("127.0.0.1", port).stageSideChannels(stageAddresses)));
            }
            TestCache consumerCache = decoder.cache(TestCache.Shape.of(4, 16, false), Rank.single());
            ConsumerRank consumer = decoder.consumer("decoder", consumerCache, true, b -> b);
            // each process knows its own stage's epoch and pull key: the router merges every stage's parameters
            TransferParams params = stages.get(0).prefillFinished("req", ids(7, 8, 9)).withEpochsOf(stages.get(1).prefillFinished("req", ids(7, 8, 9)));
            assertEquals(stageAddresses, params.sideChannels());
            assertNotEquals(params.sideChannels().get(0), params.sideChannels().get(1));
            consumer.blocksAllocated("d", params, mode, ids(1, 2, 3));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "received");
            assertEquals(List.of(), failed);
            consumerCache.check(21, new int[] {1, 2, 3}, 3);
            for (ProducerRank stage : stages) {
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(stage, freed).size() == 1, "freed");
                assertEquals(new FreedRequest("req", FreeReason.COMPLETED), freed.getFirst());
            }
        }
    }
}
