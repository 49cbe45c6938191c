package io.kvbridge.benchmarks;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Binding overhead of the {@code nixl} transport, NOT NIXL's speed: one WRITE of {@code descriptors}
 * 64-byte blocks posted, polled to DONE and released, through the real FFM binding against
 * kvbridge's fake {@code libnixl_capi.so}, whose "transfer" is a memcpy between two agents in this
 * JVM. What it measures is the Java side: checks, the hand-over to the owner thread, index copies,
 * the NIXL calls (make, post, status, release, destroy) and their FFM cost. The {@code local}
 * transport runs the same loop as the in-JVM reference.
 *
 * <p>Modes: {@code nixl-fake-inline} (the fake copies inside post, so each transfer is one round
 * trip to the owner thread), {@code nixl-fake-async} (a fake worker thread copies and the owner
 * polls, as with a real network transfer), {@code local}.
 *
 * <p>Run (after {@code mvn -pl benchmarks -am package}, which also builds the fake in
 * {@code backend-nixl/target/native}):
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar NixlBindingBenchmark \
 *     -jvmArgsAppend -Dkvbridge.nixl.library=backend-nixl/target/native/libnixl_capi.so
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class NixlBindingBenchmark
{
    private static final int BLOCK_BYTES = 64;
    // blocks are spaced out so the fake cannot merge neighbours into one copy
    private static final int STRIDE_BYTES = 128;
    private static final int MAX_DESCRIPTORS = 256;

    @Param({"nixl-fake-inline", "nixl-fake-async", "local"})
    public String transport;

    @Param({"1", "16", "256"})
    public int descriptors;

    private Arena arena;
    private TransferBackend initiator;
    private TransferBackend target;
    private PreparedList local;
    private PreparedList remote;
    private int[] indices;

    @Setup(Level.Trial)
    public void setUp() throws Throwable
    {
        Map<String, String> options = Map.of();
        String factoryName = transport;
        if (transport.startsWith("nixl-fake")) {
            String library = System.getProperty("kvbridge.nixl.library");
            if (library == null || !Files.isRegularFile(Path.of(library))) {
                throw new IllegalStateException("set -Dkvbridge.nixl.library to the fake libnixl_capi.so (backend-nixl/target/native/libnixl_capi.so, "
                        + "built by mvn -pl backend-nixl -am package); got " + library);
            }
            selectFakeCompletion(Path.of(library), transport.endsWith("inline") ? "inline" : "async");
            options = Map.of("library", library, "allow-fake", "true");
            factoryName = "nixl";
        }
        TransferBackendFactory factory = factory(factoryName);
        initiator = factory.create(options, () -> "bench-initiator-" + System.nanoTime());
        target = factory.create(options, () -> "bench-target-" + System.nanoTime());
        arena = Arena.ofShared();
        MemorySegment source = arena.allocate((long) MAX_DESCRIPTORS * STRIDE_BYTES, 4096);
        MemorySegment destination = arena.allocate((long) MAX_DESCRIPTORS * STRIDE_BYTES, 4096);
        initiator.register(Allocation.host(source));
        target.register(Allocation.host(destination));
        Peer peer = initiator.connect(target.localMetadata());
        local = initiator.prepareLocal(blocks(source));
        remote = initiator.prepareRemote(peer, blocks(destination));
        indices = new int[descriptors];
        for (int i = 0; i < descriptors; i++) {
            indices[i] = i;
        }
    }

    private static TransferBackendFactory factory(String name)
    {
        return ServiceLoader.load(TransferBackendFactory.class).stream().map(ServiceLoader.Provider::get).filter(f -> f.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalStateException("no transport named " + name + " on the class path"));
    }

    /** The fake's completion mode is process-wide; it is set through the fake's own test symbol. */
    private static void selectFakeCompletion(Path library, String mode) throws Throwable
    {
        SymbolLookup fake = SymbolLookup.libraryLookup(library, Arena.global());
        MemorySegment symbol = fake.find("nixl_fake_set_option")
                .orElseThrow(() -> new IllegalStateException(library + " is not kvbridge's fake NIXL; this benchmark measures the binding against the fake"));
        try (Arena call = Arena.ofConfined()) {
            int rc = (int) Linker.nativeLinker().downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS))
                    .invokeExact(call.allocateFrom("completion"), call.allocateFrom(mode));
            if (rc != 0) {
                throw new IllegalStateException("the fake refused completion=" + mode);
            }
        }
    }

    private static DescriptorList blocks(MemorySegment segment)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, MAX_DESCRIPTORS);
        for (int i = 0; i < MAX_DESCRIPTORS; i++) {
            builder.add(segment.address() + (long) i * STRIDE_BYTES, BLOCK_BYTES);
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

    /** One transfer: post, poll until DONE, release. */
    @Benchmark
    public long transfer()
    {
        long handle = initiator.post(TransferOp.WRITE, local, indices, remote, indices, descriptors, null);
        TransferStatus status;
        while ((status = initiator.status(handle)) == TransferStatus.IN_PROGRESS) {
            Thread.onSpinWait();
        }
        if (status != TransferStatus.DONE) {
            throw new IllegalStateException("transfer failed: " + initiator.failure(handle));
        }
        initiator.release(handle);
        return handle;
    }
}
