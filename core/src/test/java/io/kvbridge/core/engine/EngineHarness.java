package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.wire.NotificationSeal;
import io.kvbridge.core.wire.SessionKey;
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
        this(factory, clock, SideChannelSettings.builder().build());
    }

    EngineHarness(TransferBackendFactory factory, SideChannelClock clock, SideChannelSettings sideChannel)
    {
        this.factory = factory;
        RankTransports transports = new RankTransports(factory, Map.of("simulate-device", "true"), "test-" + ProcessHandle.current().pid() + "-"
                + System.identityHashCode(this), sideChannel.secret());
        this.services = new EngineServices(transports, clock, sideChannel, registry, SummarySchedule.onOwnThread(Duration.ZERO));
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

    /**
     * A bare transport of the same kind that shook hands with a rank's side channel as a peer does,
     * for sending hand-made notifications sealed with the session that opened.
     */
    RawPeer rawPeerTo(ConnectorRank target)
    {
        TransferBackend transport = rawTransport();
        RankKey rank = RankKey.of(target.runtime().settings().geometry().rank());
        SideChannelClient.SessionRequest session = new SideChannelClient.SessionRequest(transport.agentName(), SessionKey.newNonce());
        SideChannelClient.Fetched fetched = services.client().fetch(RankRuntime.socketAddress(target.runtime().ownAddress()), List.of(rank), session).getFirst();
        SessionKey key = SessionKey.derive(services.sideChannelSettings().secret(), session.nonce(), fetched.sessionNonce(), transport.agentName(),
                target.runtime().settings().engineId(), rank.ppRank(), rank.tpRank());
        return new RawPeer(transport, transport.connect(target.runtime().transport().localMetadata()), new NotificationSeal(key));
    }

    /** A bare transport that never shook hands with the rank: what it sends is not sealed. */
    RawPeer strangerTo(ConnectorRank target)
    {
        TransferBackend transport = rawTransport();
        return new RawPeer(transport, transport.connect(target.runtime().transport().localMetadata()), null);
    }

    private TransferBackend rawTransport()
    {
        TransferBackend transport = new LocalBackendFactory().create(Map.of(), () -> "raw-" + System.identityHashCode(this) + "-" + raw++);
        closeables.add(transport);
        return transport;
    }

    /** @param seal seals what {@link #send} sends; null to send it as it is. */
    record RawPeer(TransferBackend transport, Peer peer, NotificationSeal seal)
    {
        void send(byte[] message)
        {
            transport.notify(peer, seal == null ? message : seal.seal(message));
        }

        /** Sends bytes exactly as given, sealed or not. */
        void sendRaw(byte[] bytes)
        {
            transport.notify(peer, bytes);
        }

        /** @return the sealed bytes {@link #send} would send next, without sending them. */
        byte[] sealed(byte[] message)
        {
            return seal.seal(message);
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
    static void stepUntil(BooleanSupplier condition, String what, ConnectorRank... ranks)
    {
        await(() -> {
            for (ConnectorRank rank : ranks) {
                rank.runtime().step();
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
