package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.Integrity;
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
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;

/**
 * WRITE or READ throughput and per-transfer latency of one transport: two instances built by
 * {@link KvBridge#builder()}, driven through the SPI directly, streaming a fixed total from one
 * registered allocation into another, one block per transfer, a window of transfers in flight.
 * Device memory (from the transport's {@code allocate()}) is filled and checked through the
 * transport's host copies; host memory directly.
 */
public final class TransportBench implements AutoCloseable
{
    /** Timed passes per block size; the fastest is reported. */
    public static final int TIMED_PASSES = 5;

    /** How long one transfer may take before the bench fails instead of waiting on. */
    private static final long TRANSFER_TIMEOUT_NANOS = 120_000_000_000L;

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

    /**
     * How a block size is measured, as nixlbench takes it: the operation, descriptors per post and
     * the untimed and timed passes.
     *
     * @param op WRITE (the initiator writes the target's buffer) or READ (the initiator reads it).
     * @param batch blocks (one descriptor each) per transfer; must divide every block count.
     * @param iterations timed passes; the fastest is the figure.
     * @param warmup untimed passes before them.
     */
    public record Passes(TransferOp op, int batch, int iterations, int warmup)
    {
        /** One block per WRITE, one untimed pass, then {@value TransportBench#TIMED_PASSES} timed. */
        public static final Passes DEFAULT = new Passes(TransferOp.WRITE, 1, TIMED_PASSES, 1);

        /** Checks the counts; a bench of no timed pass has no figure. */
        public Passes
        {
            requireNonNull(op, "op is null");
            KvBridgeException.checkArgument(batch > 0, "batch=%d is not positive", batch);
            KvBridgeException.checkArgument(iterations > 0, "iterations=%d is not positive", iterations);
            KvBridgeException.checkArgument(warmup >= 0, "warmup=%d is negative", warmup);
        }
    }

    private final String transport;
    private final long totalBytes;
    private final int window;
    private final Arena arena;
    private static final byte[] GRANT_KEY = "kvbridge bench".getBytes(java.nio.charset.StandardCharsets.UTF_8);

    private final KvBridge producerEngine;
    private final KvBridge consumerEngine;
    private final TransferBackend producer;
    private final TransferBackend consumer;
    /** The source's bytes on the host, and the host view of the destination (the memory itself, or a copy of device memory). */
    private final MemorySegment source;
    private final MemorySegment destination;
    private final MemoryKind kind;
    private final int device;
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
        this(transport, totalBytes, window, transportMemory, Map.of());
    }

    /**
     * Builds both instances as the other constructor does, with options for the transport.
     *
     * @param transport the transport name.
     * @param totalBytes bytes streamed per block size.
     * @param window transfers in flight.
     * @param transportMemory whether source and destination come from the transport's {@code allocate()}.
     * @param options the transport's options for both instances, such as {@code access=registered} for {@code ucx}.
     */
    public TransportBench(String transport, long totalBytes, int window, boolean transportMemory, Map<String, String> options)
    {
        this(transport, totalBytes, window, transportMemory, MemoryKind.HOST, 0, options);
    }

    /**
     * Builds both instances on device memory the transport allocates on one device.
     *
     * @param transport the transport name; it must report {@code DEVICE_MEMORY} and {@code TRANSPORT_ALLOCATION}.
     * @param device the device of both allocations.
     * @return the bench.
     */
    public static TransportBench onDevice(String transport, long totalBytes, int window, int device)
    {
        return new TransportBench(transport, totalBytes, window, true, MemoryKind.DEVICE, device, Map.of());
    }

    private TransportBench(String transport, long totalBytes, int window, boolean transportMemory, MemoryKind kind, int device, Map<String, String> options)
    {
        this.kind = kind;
        this.device = device;
        this.transport = requireNonNull(transport, "transport is null");
        KvBridgeException.checkArgument(totalBytes > 0, "totalBytes=%d is not positive", totalBytes);
        KvBridgeException.checkArgument(window > 0, "window=%d is not positive", window);
        this.totalBytes = totalBytes;
        this.window = window;
        this.arena = Arena.ofShared();
        KvBridge builtProducer = null;
        KvBridge builtConsumer = null;
        try {
            Map<String, String> config = new java.util.HashMap<>(options);
            if (kind == MemoryKind.DEVICE) {
                config.put("device", Integer.toString(device));
            }
            builtProducer = KvBridge.builder().transport(transport).agentName("bench-producer").transportConfig(config).build();
            builtConsumer = KvBridge.builder().transport(transport).agentName("bench-consumer").transportConfig(config).build();
            producerEngine = builtProducer;
            consumerEngine = builtConsumer;
            producer = builtProducer.transport();
            consumer = builtConsumer.transport();
            if (kind == MemoryKind.DEVICE) {
                sourceAllocation = producer.allocate(totalBytes, MemoryKind.DEVICE, device);
                destinationAllocation = consumer.allocate(totalBytes, MemoryKind.DEVICE, device);
                source = arena.allocate(totalBytes, 4096);
                destination = arena.allocate(totalBytes, 4096);
            }
            else if (transportMemory) {
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
            if (kind == MemoryKind.DEVICE) {
                producer.copyFromHost(source, sourceAllocation, 0);
            }
            grantWhole(consumer, destinationAllocation);
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
        return measure(blockBytes, Integrity.OFF);
    }

    /**
     * Measures as {@link #measure(long)} does, with or without block digests: with
     * {@link Integrity#CRC32C} each source block's CRC32C is computed before its transfer is posted and
     * the destination block's compared with it once the transfer is DONE, on the stream's thread, as
     * an engine's producer and consumer do per request; the figures include that work.
     *
     * @param blockBytes bytes per transfer; must divide the total.
     * @param integrity whether blocks are digested.
     * @return the fastest timed pass's figures.
     */
    public Result measure(long blockBytes, Integrity integrity)
    {
        return measure(blockBytes, integrity, Passes.DEFAULT);
    }

    /**
     * Measures as {@link #measure(long, Integrity)} does, with the operation, batch and pass counts
     * given. A READ posts from the same initiator (the producer instance) and reads the target's
     * buffer into its own: the pattern is put into the target's buffer and the initiator's is cleared
     * before each pass, then compared.
     *
     * @param blockBytes bytes per block; {@code batch} blocks per transfer, whose count must divide the blocks.
     * @param integrity whether transfers are digested.
     * @param passes the operation, batch and pass counts.
     * @return the fastest timed pass's figures; {@code transfers} counts posts.
     */
    public Result measure(long blockBytes, Integrity integrity, Passes passes)
    {
        KvBridgeException.check(passes.op() == TransferOp.WRITE || kind == MemoryKind.HOST, ErrorCode.UNSUPPORTED,
                "the bench READs host memory only; its %s memory is measured with WRITE", kind);
        KvBridgeException.check(integrity == Integrity.OFF || kind == MemoryKind.HOST, ErrorCode.UNSUPPORTED,
                "block digests read host memory only; the bench's %s memory is measured without them", kind);
        KvBridgeException.checkArgument(blockBytes > 0 && totalBytes % blockBytes == 0,
                "blockBytes=%d must be positive and divide totalBytes=%d", blockBytes, totalBytes);
        long blockCount = totalBytes / blockBytes;
        KvBridgeException.checkArgument(blockCount <= Integer.MAX_VALUE, "totalBytes=%d / blockBytes=%d is too many blocks", totalBytes, blockBytes);
        int blocks = (int) blockCount;
        KvBridgeException.checkArgument(blocks % passes.batch() == 0, "batch=%d does not divide the %d blocks of blockBytes=%d", passes.batch(), blocks,
                blockBytes);
        boolean read = passes.op() == TransferOp.READ;
        // what the transfers copy from and into: a READ moves the target's buffer into the initiator's
        MemorySegment from = read ? destination : source;
        MemorySegment into = read ? source : destination;
        PreparedList local = producer.prepareLocal(blocksOf(sourceAllocation, blocks, blockBytes));
        try {
            PreparedList remote = producer.prepareRemote(peer, blocksOf(destinationAllocation, blocks, blockBytes));
            try {
                TransferStream stream = new TransferStream(producer, passes.op(), blocks, passes.batch(), window, TRANSFER_TIMEOUT_NANOS, GRANT_KEY);
                if (integrity != Integrity.OFF) {
                    // consecutive blocks of one transfer are adjacent: each transfer is digested as one span
                    stream.check(new BenchDigests(transport, from, into, blockBytes * passes.batch(), stream.transfers()));
                }
                long[] bestLatencies = null;
                for (int pass = 0; pass < passes.warmup(); pass++) {
                    prepare(read);
                    stream.pass(local, remote);
                }
                long best = Long.MAX_VALUE;
                for (int pass = 0; pass < passes.iterations(); pass++) {
                    prepare(read);
                    long elapsed = stream.pass(local, remote);
                    if (kind == MemoryKind.DEVICE) {
                        consumer.copyToHost(destinationAllocation, 0, destination);
                    }
                    long mismatch = from.mismatch(into);
                    if (mismatch >= 0) {
                        throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, String.format(java.util.Locale.ROOT,
                                "transport=%s %s blockBytes=%d: destination differs from the source at byte offset=%d after every transfer reported done",
                                transport, passes.op(), blockBytes, mismatch));
                    }
                    if (elapsed < best) {
                        best = elapsed;
                        bestLatencies = stream.sortedTransferNanos();
                    }
                }
                return new Result(blockBytes, stream.transfers(), totalBytes / (best / 1e9) / 1e9,
                        TransferStream.percentile(bestLatencies, 0.50) / 1e3, TransferStream.percentile(bestLatencies, 0.99) / 1e3);
            }
            finally {
                producer.releasePrepared(remote);
            }
        }
        finally {
            producer.releasePrepared(local);
        }
    }

    /**
     * What posting one transfer of many descriptors costs: the caller's {@code post()} (checks,
     * coalescing, hand-over) and post to DONE, medians over {@value #ISSUE_ROUNDS} transfers.
     *
     * @param descriptors descriptors per transfer.
     * @param contiguous pairs adjacent on both sides (which a coalescing transport merges), or spaced
     *     apart so that none merge.
     * @param postMicros median of the {@code post()} call.
     * @param doneMicros median from post to DONE.
     * @param operations operations the transport reported for one transfer ({@code -1}: not reported).
     * @param descriptorBytes bytes per descriptor.
     */
    public record IssueCost(int descriptors, boolean contiguous, double postMicros, double doneMicros, int operations, long descriptorBytes)
    {
    }

    /** Transfers timed per issue-cost figure. */
    public static final int ISSUE_ROUNDS = 50;

    /**
     * Measures the issue cost of transfers of {@code descriptors} descriptors, or returns null when the
     * total is too small to hold them spaced apart (64 bytes each at least).
     *
     * @param descriptors descriptors per transfer.
     * @param contiguous whether the pairs are adjacent on both sides.
     * @return the figures, or null.
     */
    public IssueCost issueCost(int descriptors, boolean contiguous)
    {
        long length = Math.min(4096, totalBytes / (2L * descriptors)) & ~63L;
        if (length < 64) {
            return null;
        }
        long step = contiguous ? length : 2 * length;
        PreparedList local = producer.prepareLocal(spaced(sourceAllocation, descriptors, length, step));
        try {
            PreparedList remote = producer.prepareRemote(peer, spaced(destinationAllocation, descriptors, length, step));
            try {
                int[] indices = new int[descriptors];
                Arrays.setAll(indices, i -> i);
                long[] posts = new long[ISSUE_ROUNDS];
                long[] dones = new long[ISSUE_ROUNDS];
                TransferRequest request = new TransferRequest();
                int operations = -1;
                for (int round = -5; round < ISSUE_ROUNDS; round++) {
                    long start = System.nanoTime();
                    long handle = producer.post(request.start(TransferOp.WRITE).local(local, indices).remote(remote, indices).count(descriptors)
                            .grantKey(GRANT_KEY));
                    long posted = System.nanoTime();
                    operations = producer.operations(handle);
                    TransferStatus status;
                    while (!(status = producer.status(handle)).terminal()) {
                        Thread.onSpinWait();
                    }
                    long done = System.nanoTime();
                    KvBridgeException cause = producer.failure(handle).orElse(null);
                    producer.release(handle);
                    if (status != TransferStatus.DONE) {
                        throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, "transport=" + transport + ": a transfer of " + descriptors + " descriptors failed",
                                cause);
                    }
                    // five rounds warm the path up untimed
                    if (round >= 0) {
                        posts[round] = posted - start;
                        dones[round] = done - start;
                    }
                }
                Arrays.sort(posts);
                Arrays.sort(dones);
                return new IssueCost(descriptors, contiguous, TransferStream.percentile(posts, 0.5) / 1e3, TransferStream.percentile(dones, 0.5) / 1e3, operations, length);
            }
            finally {
                producer.releasePrepared(remote);
            }
        }
        finally {
            producer.releasePrepared(local);
        }
    }

    /**
     * Readies the buffers for one pass: for a WRITE the target's is cleared; for a READ the pattern
     * is put into the target's and the initiator's cleared (after a checked READ it holds the pattern again).
     */
    private void prepare(boolean read)
    {
        if (read) {
            destination.copyFrom(source);
            source.fill((byte) 0);
            return;
        }
        destination.fill((byte) 0);
        if (kind == MemoryKind.DEVICE) {
            consumer.copyFromHost(destination, destinationAllocation, 0);
        }
    }

    /**
     * Grants the producer the whole destination, as an engine grants a request's blocks: a transport
     * that checks grants checks every transfer of the bench against it, as it would in service.
     */
    private static void grantWhole(TransferBackend owner, Allocation allocation)
    {
        PreparedList whole = owner.prepareLocal(DescriptorList.builder(allocation.kind(), allocation.device(), 1)
                .add(allocation.address(), allocation.bytes()).build());
        owner.grant(GRANT_KEY, TransferOp.WRITE, whole, new int[] {0}, 1);
        owner.grant(GRANT_KEY, TransferOp.READ, whole, new int[] {0}, 1);
        owner.releasePrepared(whole);
    }

    private static DescriptorList spaced(Allocation allocation, int count, long length, long step)
    {
        DescriptorList.Builder list = DescriptorList.builder(allocation.kind(), allocation.device(), count);
        for (int i = 0; i < count; i++) {
            list.add(allocation.address() + i * step, length);
        }
        return list.build();
    }

    /** {@return one descriptor per block, back to back from the allocation's start} */
    static DescriptorList blocksOf(Allocation allocation, int blocks, long blockBytes)
    {
        DescriptorList.Builder list = DescriptorList.builder(allocation.kind(), allocation.device(), blocks);
        for (int b = 0; b < blocks; b++) {
            list.add(allocation.address() + b * blockBytes, blockBytes);
        }
        return list.build();
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
