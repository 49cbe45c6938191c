package io.kvbridge.examples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.KvBridge;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.ForwardingTransferBackend;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How the bench's poller waits, over two {@code local} instances: it parks on the transport's
 * wake-ups where the transport has them and gives them back when a pass ends, however it ends, and
 * it polls on where the transport wakes nobody; either way every block arrives.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class TransferStreamTest
{
    private static final int BLOCKS = 16;
    private static final long BLOCK_BYTES = 4096;
    private static final byte[] KEY = "transfer stream test".getBytes(StandardCharsets.UTF_8);

    private final Arena arena = Arena.ofShared();
    private KvBridge producerEngine;
    private KvBridge consumerEngine;
    private MemorySegment source;
    private MemorySegment destination;
    private PreparedList local;
    private PreparedList remote;

    @BeforeEach
    void setUp()
    {
        producerEngine = KvBridge.builder().transport("local").agentName("stream-producer").build();
        consumerEngine = KvBridge.builder().transport("local").agentName("stream-consumer").build();
        TransferBackend producer = producerEngine.transport();
        TransferBackend consumer = consumerEngine.transport();
        source = arena.allocate(BLOCKS * BLOCK_BYTES, 4096);
        destination = arena.allocate(BLOCKS * BLOCK_BYTES, 4096);
        for (long i = 0; i < source.byteSize() / Long.BYTES; i++) {
            source.setAtIndex(ValueLayout.JAVA_LONG, i, i * 31 + 7);
        }
        producer.register(Allocation.host(source));
        consumer.register(Allocation.host(destination));
        PreparedList whole = consumer.prepareLocal(DescriptorList.builder(MemoryKind.HOST, 0, 1)
                .add(destination.address(), destination.byteSize()).build());
        consumer.grant(KEY, TransferOp.WRITE, whole, new int[] {0}, 1);
        consumer.releasePrepared(whole);
        Peer peer = producer.connect(consumer.localMetadata());
        local = producer.prepareLocal(TransportBench.blocksOf(Allocation.host(source), BLOCKS, BLOCK_BYTES));
        remote = producer.prepareRemote(peer, TransportBench.blocksOf(Allocation.host(destination), BLOCKS, BLOCK_BYTES));
    }

    @AfterEach
    void tearDown()
    {
        producerEngine.close();
        consumerEngine.close();
        arena.close();
    }

    @Test
    void parksOnTheTransportsWakeUpsUntilLateTransfersEndAndGivesThemBack()
    {
        Waking transport = passOver(true, TimeUnit.MILLISECONDS.toNanos(20));

        assertEquals(List.of(Thread.currentThread().getName(), "null"), transport.waiters, "the poller asked for wake-ups, then gave them back");
        assertTrue(transport.parkedWhenWoken.get() > 0, "the poller was parked when a late transfer ended: " + transport.parkedWhenWoken);
    }

    @Test
    void givesTheWakeUpsBackWhenAPassFails()
    {
        Waking transport = new Waking(producerEngine.transport(), true, Long.MAX_VALUE);
        TransferStream stream = new TransferStream(transport, TransferOp.WRITE, BLOCKS, 1, 4, TimeUnit.MILLISECONDS.toNanos(50), KEY);

        KvBridgeException e = assertThrows(KvBridgeException.class, () -> stream.pass(local, remote));

        assertEquals(ErrorCode.DEADLINE_EXCEEDED, e.code(), e.getMessage());
        assertEquals(List.of(Thread.currentThread().getName(), "null"), transport.waiters);
    }

    @Test
    void pollsOnWhereTheTransportWakesNobody()
    {
        Waking transport = passOver(false, TimeUnit.MILLISECONDS.toNanos(5));

        assertEquals(List.of(Thread.currentThread().getName()), transport.waiters, "asked once, refused, never asked to stop");
    }

    /** Streams every block once over a {@link Waking} transport and checks that each arrived. */
    private Waking passOver(boolean wakes, long delayNanos)
    {
        Waking transport = new Waking(producerEngine.transport(), wakes, delayNanos);
        new TransferStream(transport, TransferOp.WRITE, BLOCKS, 1, 4, TimeUnit.SECONDS.toNanos(30), KEY).pass(local, remote);
        assertEquals(-1, source.mismatch(destination), "every block arrived");
        return transport;
    }

    /**
     * A transport whose transfers report done only {@code delayNanos} after the wrapped one finished
     * them, woken from a thread of its own as an owner thread would wake a waiter; it records who
     * asked for wake-ups and how often the waiter was parked when it was woken.
     */
    private static final class Waking
            extends ForwardingTransferBackend
    {
        final List<String> waiters = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger parkedWhenWoken = new AtomicInteger();
        private final boolean wakes;
        private final long delayNanos;
        private final Set<Long> done = ConcurrentHashMap.newKeySet();
        private volatile Thread waiter;

        Waking(TransferBackend delegate, boolean wakes, long delayNanos)
        {
            super(delegate);
            this.wakes = wakes;
            this.delayNanos = delayNanos;
        }

        @Override
        public boolean wakeOnProgress(Thread thread)
        {
            waiters.add(thread == null ? "null" : thread.getName());
            waiter = wakes ? thread : null;
            return wakes;
        }

        @Override
        public long post(TransferRequest request)
        {
            long handle = delegate().post(request);
            if (delayNanos != Long.MAX_VALUE) {
                Thread.ofPlatform().daemon().start(() -> {
                    while (!delegate().status(handle).terminal()) {
                        Thread.onSpinWait();
                    }
                    LockSupport.parkNanos(delayNanos);
                    done.add(handle);
                    Thread woken = waiter;
                    if (woken != null) {
                        if (woken.getState() == Thread.State.TIMED_WAITING || woken.getState() == Thread.State.WAITING) {
                            parkedWhenWoken.incrementAndGet();
                        }
                        LockSupport.unpark(woken);
                    }
                });
            }
            return handle;
        }

        @Override
        public TransferStatus status(long handle)
        {
            TransferStatus status = delegate().status(handle);
            return status == TransferStatus.DONE && !done.contains(handle) ? TransferStatus.IN_PROGRESS : status;
        }
    }
}
