package io.kvbridge.benchmarks;

import io.kvbridge.backend.ucx.UcxBackendFactory;
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
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Cost per descriptor pair through the UCX transport: one operation posts a WRITE of {@value #PUTS}
 * pairs of {@code putBytes} each and waits for DONE (every put issued, one flush), so the score is
 * post + issue + flush per pair, in nanoseconds (64 bytes: the issue cost; 4096 bytes: the same
 * loop streaming 256 MiB, copy included). Two instances in one JVM, like the jucx figure it is
 * compared with (164 ns per 64-byte {@code putNonBlockingImplicit}). {@code ucx} memory is
 * allocated by UCX (a put is a copy into shared memory); {@code own} memory is registered arena
 * memory (a put is an active message the target's owner thread applies).
 *
 * <p>{@code pairing}: {@code swapped} pairs local block {@code i} with remote block {@code i ^ 1},
 * so no two consecutive pairs are contiguous on the remote side and every pair is one put (the
 * transport before coalescing); {@code contiguous} pairs {@code i} with {@code i}, so the transport
 * coalesces the whole transfer into one put. Setup checks the operation count the transport reports.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@OperationsPerInvocation(UcxPutIssueBenchmark.PUTS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class UcxPutIssueBenchmark
{
    static final int PUTS = 65536;
    private static final long POLL_NANOS = 10_000;

    @Param({"64", "4096"})
    public int putBytes;

    @Param({"ucx", "own"})
    public String memory;

    @Param({"sm"})
    public String tls;

    @Param({"swapped", "contiguous"})
    public String pairing;

    private Arena arena;
    private TransferBackend initiator;
    // refilled for every post: posting allocates nothing
    private final TransferRequest request = new TransferRequest();
    private TransferBackend target;
    private PreparedList local;
    private PreparedList remote;
    private int[] indices;
    private int[] remoteIndices;

    @Setup(Level.Trial)
    public void setUp()
    {
        arena = Arena.ofShared();
        Map<String, String> config = tls.equals("tcp") ? Map.of("tls", "tcp", "net-devices", "lo", "allow-unchecked-tcp-lane", "true") : Map.of("tls", tls);
        initiator = new UcxBackendFactory().create(config, () -> "issue-initiator");
        target = new UcxBackendFactory().create(config, () -> "issue-target");
        long bytes = (long) PUTS * putBytes;
        long source = region(initiator, bytes);
        long destination = region(target, bytes);
        Peer peer = initiator.connect(target.localMetadata());
        local = initiator.prepareLocal(blocks(source));
        remote = initiator.prepareRemote(peer, blocks(destination));
        indices = new int[PUTS];
        remoteIndices = new int[PUTS];
        boolean contiguous = pairing.equals("contiguous");
        for (int i = 0; i < PUTS; i++) {
            indices[i] = i;
            remoteIndices[i] = contiguous ? i : i ^ 1;
        }
        long handle = initiator.post(request.start(TransferOp.WRITE).local(local, indices).remote(remote, remoteIndices).count(PUTS));
        int operations = initiator.operations(handle);
        await(handle);
        int expected = contiguous ? 1 : PUTS;
        if (operations != expected) {
            throw new IllegalStateException("pairing=" + pairing + " issued operations=" + operations + ", expected " + expected);
        }
    }

    private long region(TransferBackend backend, long bytes)
    {
        if (memory.equals("ucx")) {
            return backend.allocate(bytes, MemoryKind.HOST, 0).address();
        }
        MemorySegment segment = arena.allocate(bytes, 4096).fill((byte) 1);
        backend.register(Allocation.host(segment));
        return segment.address();
    }

    private DescriptorList blocks(long address)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, PUTS);
        for (int i = 0; i < PUTS; i++) {
            builder.add(address + (long) i * putBytes, putBytes);
        }
        return builder.build();
    }

    @TearDown(Level.Trial)
    public void tearDown()
    {
        initiator.close();
        target.close();
        arena.close();
    }

    @Benchmark
    public TransferStatus putSmallBlocks()
    {
        return await(initiator.post(request.start(TransferOp.WRITE).local(local, indices).remote(remote, remoteIndices).count(PUTS)));
    }

    private TransferStatus await(long handle)
    {
        TransferStatus status;
        while (!(status = initiator.status(handle)).terminal()) {
            // poll gently: a spinning caller would take the CPU the two owner threads need
            LockSupport.parkNanos(POLL_NANOS);
        }
        if (status != TransferStatus.DONE) {
            throw new IllegalStateException("put failed: " + initiator.failure(handle).map(Throwable::getMessage).orElse("?"));
        }
        initiator.release(handle);
        return status;
    }
}
