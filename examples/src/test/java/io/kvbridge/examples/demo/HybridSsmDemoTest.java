package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.Integrity;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The demo on the hybrid-ssm model: every KV and Mamba state byte derived from the request arrives,
 * across pipeline and tensor-parallel sizes, in every mode; a state byte changed after prefill is
 * counted by the parity check.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
final class HybridSsmDemoTest
{
    @SuppressWarnings("unchecked")
    @ParameterizedTest(name = "{0} {1} {2} PP{3} TP{4} -> PP{5} TP{6}")
    @CsvSource({
            "local, push, hma, 2, 1, 1, 1",
            "local, pull, hma, 1, 2, 1, 1",
            "local, push, hma, 1, 1, 1, 2",
            "local, mixed, per-layer, 2, 2, 1, 1",
            "tcp, pull, hma, 2, 1, 1, 2"})
    void everyStateAndKvByteArrives(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp)
    {
        Map<String, Object> audit = new DemoRun(options(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, 0), done -> {
        }).run();
        assertEquals(true, audit.get("ok"), audit.toString());
        assertEquals("demo/hybrid-ssm-36", audit.get("model"));
        assertEquals(12L, audit.get("requestsCompleted"));
        assertEquals(0L, audit.get("parityErrors"));
        assertEquals(List.of(), audit.get("problems"));
        // each engine lends Mamba states from a free list of their own: one per request, at most one per request in flight
        for (String engine : List.of("producer", "decoder")) {
            Map<String, Object> states = (Map<String, Object>) ((Map<String, Object>) ((Map<String, Object>) audit.get("blocks")).get(engine)).get("stateBlocks");
            Map<String, Object> group = (Map<String, Object>) states.get("group1");
            assertEquals(12L, states.get("statesTaken"), engine + ": " + states);
            assertEquals(5, group.get("capacity"), "concurrency 4, plus one");
            assertTrue((int) group.get("peakHeld") >= 1 && (int) group.get("peakHeld") <= 4, engine + ": " + states);
            assertEquals(5, group.get("free"), engine + ": every state came back");
        }
    }

    @Test
    void aStateByteChangedAfterPrefillIsCaughtByTheParityCheck()
    {
        Map<String, Object> audit = new DemoRun(options("local", "pull", "hma", 2, 1, 1, 2, 4), done -> {
        }).run();
        assertEquals(false, audit.get("ok"), "the changed state bytes arrived as data");
        assertEquals(12L, audit.get("requestsCompleted"));
        assertEquals(3L, audit.get("parityErrors"), "one changed state byte per corrupted request");
    }

    @Test
    void digestsRefuseTheRequestsWhoseStateChanged()
    {
        DemoOptions options = options("local", "push", "hma", 1, 1, 1, 1, 4);
        Map<String, Object> audit = new DemoRun(new DemoOptions(options.backend(), options.mode(), options.layout(), 1, 1, 1, 1, options.requests(),
                options.concurrency(), options.maxTokens(), options.seed(), options.idleMillis(), false, options.leaseMillis(), options.producerCache(),
                options.consumerCache(), options.cacheDevice(), options.discovery(), false, options.transportOptions(), Integrity.CRC32C, 4,
                DemoModel.HYBRID_SSM), done -> {
                }).run();
        assertEquals(true, audit.get("ok"), audit.toString());
        assertEquals(Map.of("fault", "corrupt:4", "requestsCorrupted", 3, "refusedByDigest", 3L), audit.get("corruption"));
        assertEquals(9L, audit.get("requestsCompleted"));
        assertEquals(0L, audit.get("parityErrors"));
    }

    @Test
    void runsWithEveryEngineInAProcessOfItsOwn()
    {
        Ucx.assumeAvailable();
        DemoOptions options = options("ucx", "mixed", "hma", 2, 1, 1, 2, 0);
        Map<String, Object> audit = new DemoRun(new DemoOptions(options.backend(), options.mode(), options.layout(), 2, 1, 1, 2, 6, 3,
                options.maxTokens(), options.seed(), options.idleMillis(), true, options.leaseMillis(), options.producerCache(), options.consumerCache(),
                options.cacheDevice(), options.discovery(), false, options.transportOptions(), Integrity.OFF, 0, DemoModel.HYBRID_SSM), done -> {
                }).run();
        assertEquals(true, audit.get("ok"), audit.toString());
        assertEquals(6L, audit.get("requestsCompleted"));
        assertEquals(0L, audit.get("parityErrors"));
    }

    @Test
    void theHybridModelHoldsOneStatePerMambaLayerAndRequest()
    {
        DemoModel model = DemoModel.of(DemoModel.HYBRID_SSM, "hma");
        assertTrue(model.stateful());
        assertEquals(36, model.layers().size());
        assertEquals(9, model.layers().stream().filter(layer -> layer.groupId() == 0).count());
        assertEquals(9728L, model.groups().get(1).stateBytes(1));
        assertEquals(1, model.heldBlocks(1, 40, DemoModel.BLOCK_TOKENS), "one state per request");
    }

    private static DemoOptions options(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp,
            int corruptEvery)
    {
        DemoOptions plain = new DemoOptions(backend, mode, layout, producerPp, producerTp, consumerPp, consumerTp, 12, 4, 300, 7, 0, false, 30_000);
        return new DemoOptions(plain.backend(), plain.mode(), plain.layout(), producerPp, producerTp, consumerPp, consumerTp, plain.requests(),
                plain.concurrency(), plain.maxTokens(), plain.seed(), plain.idleMillis(), false, plain.leaseMillis(), plain.producerCache(),
                plain.consumerCache(), plain.cacheDevice(), plain.discovery(), false, plain.transportOptions(), Integrity.OFF, corruptEvery,
                DemoModel.HYBRID_SSM);
    }
}
