package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.QuarantinedBlocks;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.FaultInjectingBackendFactory;
import io.kvbridge.testkit.FaultPlan;
import io.kvbridge.transport.PeerProcesses;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * No write after free: a writer stalled mid-transfer past the consumer's deadline, the engine reusing
 * what the failure hands back and writing a sentinel into it, then the writer resumed. The sentinel
 * survives because the transport proved the write stopped (the {@code local} transport refuses a
 * write under a revoked grant), or because the blocks were quarantined until the writer proved it
 * stopped, and only then reused. Over the real {@code local} transport, with
 * {@link StallingBackendFactory} holding one post on the wire.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class LateWriterTest
{
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(3, 64, false);
    private static final int[] CONSUMER_BLOCKS = {10, 11};
    private static final int SENTINEL = 9;
    // long enough for a first handshake on a loaded machine, so the writer is asked before the request fails
    private static final Duration DEADLINE = Duration.ofMillis(1500);

    @Test
    void aPushWriterLateAfterTheRevokeIsRefused()
    {
        StallingBackendFactory factory = new StallingBackendFactory(new LocalBackendFactory(), "-producer-", TransferOp.WRITE, null);
        Outcome outcome = run(factory, TransferMode.PUSH);
        assertEquals(List.of(), outcome.quarantined(), "the local transport's revoke proves the writes stopped: nothing to quarantine");
        assertEquals(ErrorCode.NOT_GRANTED, outcome.landed().failure(), "the late write was not refused by the revoked grant: " + outcome.landed());
    }

    @Test
    void aPushWriterATransportCannotStopKeepsTheBlocksQuarantinedUntilItsCompletion()
    {
        // the consumer's grants outlive their revoke, as on a transport with one-sided writes (nixl, ucx access=registered)
        StallingBackendFactory factory = new StallingBackendFactory(new LocalBackendFactory(), "-producer-", TransferOp.WRITE, "-consumer-");
        Outcome outcome = run(factory, TransferMode.PUSH);
        assertEquals(TransferStatus.DONE, outcome.landed().status(), "the late write landed: quarantining was needed");
        assertEquals(List.of(new QuarantinedBlocks("d-1", ids(CONSUMER_BLOCKS), outcome.quarantined().getFirst().reason())), outcome.quarantined());
        assertTrue(outcome.quarantined().getFirst().reason().contains("-producer-"), outcome.quarantined().getFirst().reason());
    }

    @Test
    void aPullReadTheTransportCannotCancelKeepsTheBlocksQuarantinedUntilItEnds()
    {
        // the stalled READ is on the wire, where a release does not stop it (as with ucx, nixl, cuda-ipc): it lingers until it ends
        StallingBackendFactory factory = new StallingBackendFactory(new LocalBackendFactory(), "-consumer-", TransferOp.READ, null);
        Outcome outcome = run(factory, TransferMode.PULL);
        assertEquals(TransferStatus.DONE, outcome.landed().status(), "the late READ landed: quarantining was needed");
        assertEquals(1, outcome.quarantined().size(), "the lingering READ's blocks were not quarantined");
        assertEquals(ids(CONSUMER_BLOCKS), outcome.quarantined().getFirst().blocks());
    }

    @Test
    void aWriterThatReportedItsFailureIsNotQuarantined()
    {
        // every post fails at once, so the producer reports the failed write: that message proves the writer stopped
        FaultInjectingBackendFactory failing = new FaultInjectingBackendFactory(new LocalBackendFactory(), FaultPlan.none(3).withFailedPosts(1.0));
        StallingBackendFactory factory = new StallingBackendFactory(failing, "-nobody-", TransferOp.WRITE, "-consumer-");
        try (EngineHarness harness = new EngineHarness(factory, SideChannelClock.system())) {
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            TestCache consumerCache = harness.cache(SHAPE, Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b.registrationTimeout(Duration.ofSeconds(20)));
            TransferParams params = producer.prefillFinished("req-1", ids(4, 5));
            consumer.blocksAllocated("d-1", params, TransferMode.PUSH, ids(CONSUMER_BLOCKS));
            List<ReceiveFailure> failed = new ArrayList<>();
            List<QuarantinedBlocks> quarantined = new ArrayList<>();
            List<QuarantinedBlocks> released = new ArrayList<>();
            await(() -> collect(consumer, failed, quarantined, released) && !failed.isEmpty(), "the producer's failure reported");
            assertTrue(failed.getFirst().message().contains("cannot write request"), failed.getFirst().message());
            assertEquals(List.of(), quarantined, "the writer that said its write failed was kept as unproven");
            assertEquals(0, consumer.audit().quarantinedRequests());
        }
    }

    private record Outcome(ReceiveFailure failure, List<QuarantinedBlocks> quarantined, StallingBackendFactory.Landed landed)
    {
    }

    @Test
    void aQuarantineIsReleasedWhenItsWriterProcessDiesProvenByItsPidfdAndKeptWhileItLives() throws Exception
    {
        // the grants outlive their revoke and the writer never answers: only its process's end can prove it stopped.
        // The stalled producer instance stands for a writer in a child process, which the consumer's transport watches.
        StallingBackendFactory factory = new StallingBackendFactory(new LocalBackendFactory(), "-producer-", TransferOp.WRITE, "-consumer-");
        Process writer = new ProcessBuilder("sleep", "300").start();
        try (PeerProcesses processes = new PeerProcesses(); EngineHarness harness = new EngineHarness(factory, SideChannelClock.system())) {
            factory.proveExitsWith(processes);
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            TestCache consumerCache = harness.cache(SHAPE, Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b.leaseDuration(Duration.ofSeconds(30)));
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b.registrationTimeout(DEADLINE).transferTimeout(DEADLINE));
            String writerAgent = factory.agents().stream().filter(agent -> agent.contains("-producer-")).findFirst().orElseThrow();
            processes.watch(writerAgent, (int) writer.pid());
            producerCache.fill(1, new int[] {4, 5});
            consumer.blocksAllocated("d-1", producer.prefillFinished("req-1", ids(4, 5)), TransferMode.PUSH, ids(CONSUMER_BLOCKS));
            await(() -> factory.stalled() == 1, "the writer stalled on the wire");

            List<ReceiveFailure> failed = new ArrayList<>();
            List<QuarantinedBlocks> quarantined = new ArrayList<>();
            List<QuarantinedBlocks> released = new ArrayList<>();
            await(() -> collect(consumer, failed, quarantined, released) && !failed.isEmpty(), "the request failed at the consumer's deadline");
            assertEquals(1, quarantined.size(), "the unproven writer's blocks were not quarantined: " + failed);
            // a live writer keeps them: several of the consumer's scans (every 100 ms) pass without a release
            long liveUntil = System.nanoTime() + 600_000_000L;
            while (System.nanoTime() - liveUntil < 0) {
                collect(consumer, failed, quarantined, released);
                Thread.sleep(20);
            }
            assertEquals(List.of(), released, "released while the writer's process still runs");
            assertEquals(1, consumer.audit().quarantinedRequests());

            writer.destroyForcibly();
            assertTrue(writer.waitFor(10, TimeUnit.SECONDS), "the writer process did not die");
            await(() -> collect(consumer, failed, quarantined, released) && !released.isEmpty(), "the quarantine released on the writer's death");
            QuarantinedBlocks release = released.getFirst();
            assertEquals("d-1", release.requestId());
            assertEquals(quarantined.getFirst().blocks(), release.blocks());
            assertTrue(release.reason().contains("process " + writer.pid() + " of peer '" + writerAgent + "' exited (its pidfd polled readable)"),
                    release.reason());
            assertEquals(0, consumer.audit().quarantinedRequests());
        }
        finally {
            writer.destroyForcibly();
        }
    }

    /**
     * The scenario: the request fails at the consumer's deadline while its writer is stalled; the
     * engine reuses what it is free to reuse (at once, or once a quarantine is released) and writes
     * a sentinel; the writer is resumed before or during that; the sentinel must survive.
     */
    private static Outcome run(StallingBackendFactory factory, TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness(factory, SideChannelClock.system())) {
            TestCache producerCache = harness.cache(SHAPE, Rank.single());
            TestCache consumerCache = harness.cache(SHAPE, Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b.leaseDuration(Duration.ofSeconds(30)));
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true,
                    b -> b.registrationTimeout(DEADLINE).transferTimeout(DEADLINE));
            producerCache.fill(1, new int[] {4, 5});
            TransferParams params = producer.prefillFinished("req-1", ids(4, 5));
            consumer.blocksAllocated("d-1", params, mode, ids(CONSUMER_BLOCKS));
            await(() -> factory.stalled() == 1, "the writer stalled on the wire");

            List<ReceiveFailure> failed = new ArrayList<>();
            List<QuarantinedBlocks> quarantined = new ArrayList<>();
            List<QuarantinedBlocks> released = new ArrayList<>();
            await(() -> collect(consumer, failed, quarantined, released) && !failed.isEmpty(), "the request failed at the consumer's deadline");
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, failed.getFirst().code(), failed.getFirst().message());
            assertEquals(quarantined.size(), consumer.audit().quarantinedRequests(), "the audit counts the quarantine");
            if (quarantined.isEmpty()) {
                // the engine reuses the blocks the failure handed back
                consumerCache.fill(SENTINEL, CONSUMER_BLOCKS);
            }
            List<StallingBackendFactory.Landed> landed = factory.resume();
            assertEquals(1, landed.size());
            if (!quarantined.isEmpty()) {
                assertTrue(released.isEmpty(), "released before the writer proved it stopped: " + released);
                await(() -> collect(consumer, failed, quarantined, released) && !released.isEmpty(), "the quarantine released on proof");
                assertEquals(quarantined.stream().map(q -> q.requestId() + " " + q.blocks()).toList(),
                        released.stream().map(r -> r.requestId() + " " + r.blocks()).toList(), "released other blocks than were quarantined");
                assertTrue(released.getFirst().reason().contains("completion or failure message"), "the release names no proof: " + released);
                assertEquals(0, consumer.audit().quarantinedRequests());
                consumerCache.fill(SENTINEL, CONSUMER_BLOCKS);
            }
            // the producer keeps its blocks until its lease: a failed push is never acknowledged
            await(() -> consumer.audit().idle(), "the consumer idle");
            consumerCache.check(SENTINEL, CONSUMER_BLOCKS, CONSUMER_BLOCKS.length);
            return new Outcome(failed.getFirst(), quarantined, landed.getFirst());
        }
    }

    private static boolean collect(ConsumerRank consumer, List<ReceiveFailure> failed, List<QuarantinedBlocks> quarantined, List<QuarantinedBlocks> released)
    {
        ReceiveBatch batch = consumer.poll();
        assertEquals(List.of(), batch.received(), "a request whose writer stalled was reported received");
        failed.addAll(batch.failed());
        quarantined.addAll(batch.quarantined());
        released.addAll(batch.released());
        return true;
    }
}
