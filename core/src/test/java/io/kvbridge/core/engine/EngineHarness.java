package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;

/** Real connectors over the real {@code local} transport and real loopback side channels, for one test. */
final class EngineHarness implements AutoCloseable
{
    final Arena arena = Arena.ofShared();
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final EngineServices services;
    final TransferBackendFactory factory;
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private int raw;

    EngineHarness(TransferBackendFactory factory, SideChannelClock clock)
    {
        this.factory = factory;
        RankTransports transports = new RankTransports(factory, Map.of("simulate-device", "true"), "test-" + ProcessHandle.current().pid() + "-"
                + System.identityHashCode(this));
        this.services = new EngineServices(transports, clock, SideChannelSettings.builder().build(), registry, SummarySchedule.onOwnThread(Duration.ZERO));
    }

    EngineHarness()
    {
        this(new LocalBackendFactory(), SideChannelClock.system());
    }

    ConnectorSettings.Builder settings(String engineId, TestCache cache)
    {
        return ConnectorSettings.builder(engineId, cache.geometry);
    }

    TestCache cache(TestCache.Shape shape, Rank rank)
    {
        return new TestCache(arena, shape, rank);
    }

    ProducerRank producer(String engineId, TestCache cache, boolean startWorker, UnaryOperator<ConnectorSettings.Builder> tweak)
    {
        ProducerRank producer = new ProducerRank(services, tweak.apply(settings(engineId, cache)).build(), startWorker);
        closeables.add(producer);
        return producer;
    }

    ConsumerRank consumer(String engineId, TestCache cache, boolean startWorker, UnaryOperator<ConnectorSettings.Builder> tweak)
    {
        ConsumerRank consumer = new ConsumerRank(services, tweak.apply(settings(engineId, cache)).build(), startWorker);
        closeables.add(consumer);
        return consumer;
    }

    /** Closes the rank with the harness. */
    void own(AutoCloseable rank)
    {
        closeables.add(rank);
    }

    /** A bare transport of the same kind, for sending hand-made notifications to a rank. */
    RawPeer rawPeerTo(RankWorker target)
    {
        TransferBackend transport = new LocalBackendFactory().create(Map.of(), () -> "raw-" + System.identityHashCode(this) + "-" + raw++);
        closeables.add(transport);
        return new RawPeer(transport, transport.connect(target.transport.localMetadata()));
    }

    record RawPeer(TransferBackend transport, Peer peer)
    {
        void send(byte[] message)
        {
            transport.notify(peer, message);
        }
    }

    static void await(BooleanSupplier condition, String what)
    {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
            Thread.onSpinWait();
            try {
                Thread.sleep(1);
            }
            catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** Steps hand-driven ranks until the condition holds. */
    static void stepUntil(BooleanSupplier condition, String what, RankWorker... ranks)
    {
        await(() -> {
            for (RankWorker rank : ranks) {
                rank.step();
            }
            return condition.getAsBoolean();
        }, what);
    }

    static List<FreedRequest> drain(ProducerRank producer, List<FreedRequest> into)
    {
        into.addAll(producer.poll());
        return into;
    }

    static ReceiveBatch collect(ConsumerRank consumer, List<String> received, List<io.kvbridge.api.ReceiveFailure> failed)
    {
        ReceiveBatch batch = consumer.poll();
        received.addAll(batch.received());
        failed.addAll(batch.failed());
        return batch;
    }

    @Override
    public void close()
    {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            try {
                closeables.get(i).close();
            }
            catch (Exception e) {
                throw new AssertionError(e);
            }
        }
        services.close();
        arena.close();
    }
}
