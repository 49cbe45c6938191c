package io.kvbridge.benchmarks;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.kvbridge.backend.nixl.ffm.Nixl;
import io.kvbridge.backend.nixl.ffm.NixlAgent;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
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
 * 64-byte blocks, through the real FFM binding against kvbridge's fake {@code libnixl_capi.so},
 * whose "transfer" is a bounds check and a memcpy per descriptor between two agents in this JVM.
 *
 * <ul>
 *   <li>{@code binding}: the NIXL calls of one transfer (make with index arrays, post, release,
 *       destroy) made directly on the benchmark thread, the fake completing inside the post: the
 *       FFM and per-descriptor cost of the binding, no thread hand-over.</li>
 *   <li>{@code transport}: the same through the {@code TransferBackend} (checks, hand-over to the
 *       owner thread and back, polling to DONE, release). Modes: {@code nixl-fake-inline} (the fake
 *       copies inside post), {@code nixl-fake-async} (a fake worker thread copies and the owner
 *       polls, as with a network transfer), and {@code local}, the in-JVM transport, as reference.</li>
 * </ul>
 *
 * <p>Run (after {@code mvn -pl benchmarks -am package}, which also builds the fake in
 * {@code backend-nixl/target/native}):
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar NixlBindingBenchmark -prof gc \
 *     -jvmArgsAppend -Dkvbridge.nixl.library=backend-nixl/target/native/libnixl_capi.so
 * </pre>
 */
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

    /** Two agents opened on the benchmark thread, which is the only thread that may call them. */
    @State(Scope.Thread)
    public static class Agents
    {
        @Param({"1", "16", "256"})
        public int descriptors;

        private Arena arena;
        private NixlAgent initiator;
        private NixlAgent target;
        private long local;
        private long remote;
        private int[] indices;

        @Setup(Level.Trial)
        public void setUp() throws Throwable
        {
            Path library = fakeLibrary();
            selectFakeCompletion(library, "inline");
            initiator = Nixl.openAgent(library, "bench-binding-initiator-" + System.nanoTime(), true);
            target = Nixl.openAgent(library, "bench-binding-target-" + System.nanoTime(), true);
            arena = Arena.ofShared();
            MemorySegment source = arena.allocate((long) MAX_DESCRIPTORS * STRIDE_BYTES, 4096);
            MemorySegment destination = arena.allocate((long) MAX_DESCRIPTORS * STRIDE_BYTES, 4096);
            initiator.registerMemory(MemoryKind.HOST, 0, source.address(), source.byteSize());
            target.registerMemory(MemoryKind.HOST, 0, destination.address(), destination.byteSize());
            String peer = initiator.loadRemoteMetadata(target.localMetadata());
            local = initiator.prepareLocal(MemoryKind.HOST, 0, strided(source.address()), lengths(), MAX_DESCRIPTORS);
            remote = initiator.prepareRemote(peer, MemoryKind.HOST, 0, strided(destination.address()), lengths(), MAX_DESCRIPTORS);
            indices = identity(descriptors);
        }

        @TearDown(Level.Trial)
        public void tearDown()
        {
            initiator.releasePrepared(remote);
            initiator.releasePrepared(local);
            initiator.close();
            target.close();
            arena.close();
        }
    }

    /** Two transport instances of the chosen kind. */
    @State(Scope.Benchmark)
    public static class Transports
    {
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
        // refilled for every post: posting allocates nothing
        private final TransferRequest request = new TransferRequest();

        @Setup(Level.Trial)
        public void setUp() throws Throwable
        {
            Map<String, String> options = Map.of();
            String factoryName = transport;
            if (transport.startsWith("nixl-fake")) {
                Path library = fakeLibrary();
                selectFakeCompletion(library, transport.endsWith("inline") ? "inline" : "async");
                options = Map.of("library", library.toString(), "allow-fake", "true");
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
            local = initiator.prepareLocal(DescriptorList.wrap(MemoryKind.HOST, 0, strided(source.address()), lengths(), MAX_DESCRIPTORS));
            remote = initiator.prepareRemote(peer, DescriptorList.wrap(MemoryKind.HOST, 0, strided(destination.address()), lengths(), MAX_DESCRIPTORS));
            indices = identity(descriptors);
        }

        @TearDown(Level.Trial)
        public void tearDown()
        {
            initiator.close();
            target.close();
            arena.close();
        }
    }

    private static Path fakeLibrary()
    {
        String library = System.getProperty("kvbridge.nixl.library");
        if (library == null || !Files.isRegularFile(Path.of(library))) {
            throw new IllegalStateException("set -Dkvbridge.nixl.library to the fake libnixl_capi.so (backend-nixl/target/native/libnixl_capi.so, "
                    + "built by mvn -pl backend-nixl -am package); got " + library);
        }
        return Path.of(library);
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

    private static long[] strided(long base)
    {
        long[] addresses = new long[MAX_DESCRIPTORS];
        for (int i = 0; i < MAX_DESCRIPTORS; i++) {
            addresses[i] = base + (long) i * STRIDE_BYTES;
        }
        return addresses;
    }

    private static long[] lengths()
    {
        long[] lengths = new long[MAX_DESCRIPTORS];
        Arrays.fill(lengths, BLOCK_BYTES);
        return lengths;
    }

    private static int[] identity(int count)
    {
        int[] indices = new int[count];
        for (int i = 0; i < count; i++) {
            indices[i] = i;
        }
        return indices;
    }

    /** One transfer through the binding alone: make, post (done inside), release and destroy. */
    @Benchmark
    public long binding(Agents agents)
    {
        long request = agents.initiator.makeRequest(TransferOp.WRITE, agents.local, agents.indices, agents.remote, agents.indices, agents.descriptors, null);
        if (!agents.initiator.postRequest(request)) {
            while (!agents.initiator.pollRequest(request)) {
                Thread.onSpinWait();
            }
        }
        if (!agents.initiator.releaseRequest(request)) {
            throw new IllegalStateException("the fake kept a finished request");
        }
        return request;
    }

    /** One transfer through the transport: post, poll until DONE, release. */
    @Benchmark
    public long transport(Transports pair)
    {
        long handle = pair.initiator.post(pair.request.start(TransferOp.WRITE).local(pair.local, pair.indices).remote(pair.remote, pair.indices)
                .count(pair.descriptors));
        TransferStatus status;
        while ((status = pair.initiator.status(handle)) == TransferStatus.IN_PROGRESS) {
            Thread.onSpinWait();
        }
        if (status != TransferStatus.DONE) {
            throw new IllegalStateException("transfer failed: " + pair.initiator.failure(handle));
        }
        pair.initiator.release(handle);
        return handle;
    }
}
