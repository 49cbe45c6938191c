package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

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
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * WRITE throughput and per-transfer latency of one transport: two instances built by
 * {@link KvBridge#builder()}, driven through the SPI directly, streaming a fixed total from one
 * registered allocation into another, one block per transfer, a window of transfers in flight.
 */
public final class TransportBench implements AutoCloseable
{
    /** Timed passes per block size; the fastest is reported. */
    public static final int TIMED_PASSES = 5;

    // a parked poller wakes no sooner than the kernel's timer slack (50 us by default), which would
    // be what a small block measures; yielding gives the core to a copy or owner thread that needs it
    // and otherwise polls again at once

    /**
     * One measured block size.
     *
     * @param blockBytes bytes per transfer.
     * @param transfers transfers in the stream.
     * @param gigabytesPerSecond total bytes over the wall time from first post to last completion.
     * @param p50Micros median post-to-completion time of one transfer.
     * @param p99Micros 99th percentile of the same.
     */
    public record Result(long blockBytes, int transfers, double gigabytesPerSecond, double p50Micros, double p99Micros)
    {
    }

    private final String transport;
    private final long totalBytes;
    private final int window;
    private final Arena arena;
    private final KvBridge producerEngine;
    private final KvBridge consumerEngine;
    private final TransferBackend producer;
    private final TransferBackend consumer;
    private final MemorySegment source;
    private final MemorySegment destination;
    private final Allocation sourceAllocation;
    private final Allocation destinationAllocation;
    private final Peer peer;

    /**
     * Builds both instances, registers a source and a destination of {@code totalBytes} each and
     * connects the producer to the consumer.
     *
     * @param transport the transport name.
     * @param totalBytes bytes streamed per block size.
     * @param window transfers in flight.
     * @param transportMemory whether source and destination come from the transport's {@code allocate()}
     *     (what a transport with {@code TRANSPORT_ALLOCATION} moves fastest) instead of this process's heap.
     */
    public TransportBench(String transport, long totalBytes, int window, boolean transportMemory)
    {
        this.transport = requireNonNull(transport, "transport is null");
        KvBridgeException.checkArgument(totalBytes > 0, "totalBytes=%d is not positive", totalBytes);
        KvBridgeException.checkArgument(window > 0, "window=%d is not positive", window);
        this.totalBytes = totalBytes;
        this.window = window;
        this.arena = Arena.ofShared();
        KvBridge builtProducer = null;
        KvBridge builtConsumer = null;
        try {
            builtProducer = KvBridge.builder().transport(transport).agentName("bench-producer").build();
            builtConsumer = KvBridge.builder().transport(transport).agentName("bench-consumer").build();
            producerEngine = builtProducer;
            consumerEngine = builtConsumer;
            producer = builtProducer.transport();
            consumer = builtConsumer.transport();
            if (transportMemory) {
                sourceAllocation = producer.allocate(totalBytes, MemoryKind.HOST, 0);
                destinationAllocation = consumer.allocate(totalBytes, MemoryKind.HOST, 0);
                source = MemorySegment.ofAddress(sourceAllocation.address()).reinterpret(totalBytes);
                destination = MemorySegment.ofAddress(destinationAllocation.address()).reinterpret(totalBytes);
            }
            else {
                source = arena.allocate(totalBytes, 4096);
                destination = arena.allocate(totalBytes, 4096);
                sourceAllocation = Allocation.host(source);
                destinationAllocation = Allocation.host(destination);
                producer.register(sourceAllocation);
                consumer.register(destinationAllocation);
            }
            // every long differs from its neighbours, so a misplaced block shows in the final check
            for (long i = 0; i < totalBytes / Long.BYTES; i++) {
                source.setAtIndex(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L + 1);
            }
            peer = producer.connect(consumer.localMetadata());
        }
        catch (RuntimeException e) {
            closeQuietly(builtProducer, e);
            closeQuietly(builtConsumer, e);
            arena.close();
            throw e;
        }
    }

    private static void closeQuietly(KvBridge engine, RuntimeException failure)
    {
        if (engine != null) {
            try {
                engine.close();
            }
            catch (RuntimeException e) {
                failure.addSuppressed(e);
            }
        }
    }

    /**
     * Streams the total once untimed (warm-up), then {@value #TIMED_PASSES} times timed, checking
     * after each that the destination holds exactly the source; the fastest pass is the figure, as
     * for the baselines it is compared with.
     *
     * @param blockBytes bytes per transfer; must divide the total.
     * @return the fastest timed pass's figures.
     */
    public Result measure(long blockBytes)
    {
        KvBridgeException.checkArgument(blockBytes > 0 && totalBytes % blockBytes == 0,
                "blockBytes=%d must be positive and divide totalBytes=%d", blockBytes, totalBytes);
        long blockCount = totalBytes / blockBytes;
        KvBridgeException.checkArgument(blockCount <= Integer.MAX_VALUE, "totalBytes=%d / blockBytes=%d is too many blocks", totalBytes, blockBytes);
        int blocks = (int) blockCount;
        PreparedList local = producer.prepareLocal(blocksOf(source, blocks, blockBytes));
        try {
            PreparedList remote = producer.prepareRemote(peer, blocksOf(destination, blocks, blockBytes));
            try {
                long[] latencies = new long[blocks];
                long[] bestLatencies = new long[blocks];
                stream(local, remote, blocks, latencies);
                long best = Long.MAX_VALUE;
                for (int pass = 0; pass < TIMED_PASSES; pass++) {
                    destination.fill((byte) 0);
                    long start = System.nanoTime();
                    stream(local, remote, blocks, latencies);
                    long elapsed = System.nanoTime() - start;
                    long mismatch = source.mismatch(destination);
                    if (mismatch >= 0) {
                        throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, String.format(java.util.Locale.ROOT,
                                "transport=%s blockBytes=%d: destination differs from the source at byte offset=%d after every transfer reported done",
                                transport, blockBytes, mismatch));
                    }
                    if (elapsed < best) {
                        best = elapsed;
                        System.arraycopy(latencies, 0, bestLatencies, 0, blocks);
                    }
                }
                Arrays.sort(bestLatencies);
                return new Result(blockBytes, blocks, totalBytes / (best / 1e9) / 1e9,
                        percentile(bestLatencies, 0.50) / 1e3, percentile(bestLatencies, 0.99) / 1e3);
            }
            finally {
                producer.releasePrepared(remote);
            }
        }
        finally {
            producer.releasePrepared(local);
        }
    }

    private static DescriptorList blocksOf(MemorySegment segment, int blocks, long blockBytes)
    {
        DescriptorList.Builder list = DescriptorList.builder(MemoryKind.HOST, 0, blocks);
        for (int b = 0; b < blocks; b++) {
            list.add(segment.address() + b * blockBytes, blockBytes);
        }
        return list.build();
    }

    private static long percentile(long[] sorted, double fraction)
    {
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(fraction * sorted.length) - 1)];
    }

    /** One block per transfer, up to {@code window} in flight; records each transfer's post-to-done nanoseconds. */
    private void stream(PreparedList local, PreparedList remote, int blocks, long[] latencies)
    {
        // one index array per window slot, reused only once its transfer is released
        int[][] slotIndices = new int[window][1];
        long[] slotHandles = new long[window];
        int[] slotBlocks = new int[window];
        long[] slotPosted = new long[window];
        boolean[] busy = new boolean[window];
        int posted = 0;
        int completed = 0;
        while (completed < blocks) {
            for (int slot = 0; slot < window && posted < blocks; slot++) {
                if (!busy[slot]) {
                    slotIndices[slot][0] = posted;
                    slotBlocks[slot] = posted;
                    slotPosted[slot] = System.nanoTime();
                    slotHandles[slot] = producer.post(TransferOp.WRITE, local, slotIndices[slot], remote, slotIndices[slot], 1, null);
                    busy[slot] = true;
                    posted++;
                }
            }
            boolean progressed = false;
            for (int slot = 0; slot < window; slot++) {
                if (busy[slot]) {
                    TransferStatus status = producer.status(slotHandles[slot]);
                    if (status.terminal()) {
                        latencies[slotBlocks[slot]] = System.nanoTime() - slotPosted[slot];
                        if (status != TransferStatus.DONE) {
                            KvBridgeException cause = producer.failure(slotHandles[slot]).orElse(null);
                            producer.release(slotHandles[slot]);
                            throw new KvBridgeException(ErrorCode.TRANSFER_FAILED,
                                    "transport=" + transport + " block=" + slotBlocks[slot] + ": transfer failed", cause);
                        }
                        producer.release(slotHandles[slot]);
                        busy[slot] = false;
                        completed++;
                        progressed = true;
                    }
                }
            }
            if (!progressed) {
                Thread.yield();
            }
        }
    }

    @Override
    public void close()
    {
        RuntimeException failure = null;
        try {
            producer.disconnect(peer);
            producer.deregister(sourceAllocation);
            consumer.deregister(destinationAllocation);
        }
        catch (RuntimeException e) {
            failure = e;
        }
        try {
            producerEngine.close();
            consumerEngine.close();
        }
        finally {
            arena.close();
        }
        if (failure != null) {
            throw failure;
        }
    }
}
