package io.kvbridge.testkit;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;

/**
 * The pair every conformance test runs on: two instances of the transport under test, the
 * initiator and the target, connected both ways, each with one registered host allocation filled
 * with a pattern of its own, and the target's memory granted under {@link #GRANT_KEY}; with the
 * helpers the tests share to wait, compare and collect. {@link AbstractTransferBackendConformanceTest}
 * holds the tests.
 *
 * <p>The target runs in the test's process unless the subclass asks, with
 * {@link #targetInChildProcess()}, for it to run in a child JVM: then {@link #target} forwards its
 * calls there, and the target's test memory is memory the target's transport allocated
 * ({@code allocate(bytes, HOST, 0)}), mapped in the test's process at the child's address, so the
 * tests read and write it as their own while the transport moves it between two processes.
 */
@Timeout(120)
public abstract class TransferBackendConformanceFixture
{
    /** Blocks in each test allocation. */
    protected static final int BLOCKS = 64;
    /** Bytes per block. */
    protected static final int BLOCK_BYTES = 16 * 1024;
    /** The key under which the target grants its test memory. */
    protected static final byte[] GRANT_KEY = "conformance".getBytes(StandardCharsets.UTF_8);

    Arena arena;
    final List<TransferBackend> backends = new ArrayList<>();
    /** The child process the target runs in, where the subclass asks for one; else null. */
    private RemoteTarget remoteTarget;

    /** The initiating instance. */
    protected TransferBackend initiator;
    /** The target instance. */
    protected TransferBackend target;
    /** Host memory registered with the initiator. */
    protected MemorySegment initiatorMemory;
    /** Host memory registered with the target. */
    protected MemorySegment targetMemory;
    /** The target, as the initiator sees it. */
    protected Peer targetPeer;
    /** The initiator, as the target sees it. */
    protected Peer initiatorPeer;

    /**
     * Returns the factory of the transport under test.
     *
     * @return a new factory.
     */
    protected abstract TransferBackendFactory newFactory();

    /** For the conformance suites. */
    protected TransferBackendConformanceFixture()
    {
    }

    /**
     * Returns the options every instance is created with.
     *
     * @return transport options; empty by default.
     */
    protected Map<String, String> config()
    {
        return Map.of();
    }

    /**
     * Returns how long a transfer or notification may take before a test fails.
     *
     * @return the deadline; 30 s by default.
     */
    protected Duration deadline()
    {
        return Duration.ofSeconds(30);
    }

    /**
     * Creates a transport instance the suite closes after the test.
     *
     * @param role a word naming the instance's role.
     * @return the instance.
     */
    protected TransferBackend newBackend(String role)
    {
        TransferBackendFactory factory = newFactory();
        String agentName = role + "-" + UUID.randomUUID();
        TransferBackend backend = factory.create(config(), () -> agentName);
        backends.add(backend);
        return backend;
    }

    /**
     * Tells whether the target runs in a child JVM rather than in the test's process. The child is
     * started for each test with this JVM's class path, options and {@code kvbridge.*} properties; an
     * instance of the test class, made there with its no-argument constructor, supplies
     * {@link #newFactory()} and {@link #config()}. The transport must allocate host memory
     * ({@code allocate(bytes, HOST, 0)}) in a file it keeps a descriptor of, such as a memfd, and the
     * test process must be allowed to open the child's descriptors through {@code /proc} (Linux).
     *
     * @return false by default: both instances in the test's process.
     */
    protected boolean targetInChildProcess()
    {
        return false;
    }

    /**
     * Returns the pid of the process the target runs in.
     *
     * @return the child's pid where {@link #targetInChildProcess()}, else this process's.
     */
    protected long targetProcessId()
    {
        return remoteTarget == null ? ProcessHandle.current().pid() : remoteTarget.pid();
    }

    @BeforeEach
    void setUpPair()
    {
        Availability availability = newFactory().probe();
        assertTrue(availability.available(), () -> "transport under test is unavailable: " + availability.reasons());
        arena = Arena.ofShared();
        initiator = newBackend("initiator");
        if (targetInChildProcess()) {
            assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")), "a target in a child process shares memory through /proc, which this system lacks");
            remoteTarget = RemoteTarget.start(getClass(), "target-" + UUID.randomUUID(), deadline());
            target = remoteTarget.backend();
            backends.add(target);
        }
        else {
            target = newBackend("target");
        }
        initiatorMemory = allocate(BLOCKS * (long) BLOCK_BYTES, 1);
        initiator.register(Allocation.host(initiatorMemory));
        targetMemory = registeredAtTarget(BLOCKS * (long) BLOCK_BYTES, 2);
        grantAll(targetMemory);
        targetPeer = initiator.connect(target.localMetadata());
        initiatorPeer = target.connect(initiator.localMetadata());
    }

    /** Grants every block of target memory, for reading and writing, under {@link #GRANT_KEY}. */
    void grantAll(MemorySegment memory)
    {
        int blocks = (int) (memory.byteSize() / BLOCK_BYTES);
        PreparedList all = target.prepareLocal(blocksOf(memory, blocks, BLOCK_BYTES));
        int[] indices = new int[blocks];
        Arrays.setAll(indices, i -> i);
        target.grant(GRANT_KEY, TransferOp.READ, all, indices, blocks);
        target.grant(GRANT_KEY, TransferOp.WRITE, all, indices, blocks);
        target.releasePrepared(all);
    }

    /** Posts from the initiator, presenting the target's grant key. */
    long post(TransferRequest request)
    {
        return initiator.post(request.grantKey(GRANT_KEY));
    }

    @AfterEach
    void tearDownPair()
    {
        try {
            for (TransferBackend backend : backends) {
                backend.close();
            }
            backends.clear();
        }
        finally {
            if (remoteTarget != null) {
                RemoteTarget ending = remoteTarget;
                remoteTarget = null;
                ending.close();
            }
        }
        // null where setUpPair skipped the test before allocating (the transport's fake not built)
        if (arena != null) {
            arena.close();
        }
    }

    /**
     * Allocates host memory filled with a pattern derived from {@code seed}.
     *
     * @param bytes size.
     * @param seed pattern seed.
     * @return the segment, freed after the test.
     */
    protected MemorySegment allocate(long bytes, int seed)
    {
        MemorySegment segment = arena.allocate(bytes, 4096);
        fill(segment, seed);
        return segment;
    }

    /**
     * Returns host memory registered with the target, filled with a pattern derived from
     * {@code seed}, that the test reads and writes directly: memory of the test's process, or, for a
     * target in a child process, memory the target allocated there and mapped here at the same address.
     *
     * @param bytes size.
     * @param seed pattern seed.
     * @return the memory, freed after the test.
     */
    protected MemorySegment registeredAtTarget(long bytes, int seed)
    {
        return registeredAtTarget(1, bytes, seed);
    }

    /**
     * Returns host memory of {@code registrations} registrations with the target back to back in
     * memory, each {@code bytesEach} bytes, filled with a pattern derived from {@code seed}, as
     * {@link #registeredAtTarget(long, int)} does.
     *
     * @param registrations how many registrations.
     * @param bytesEach bytes of each; whole 4096-byte pages when there are several and the target runs in a child process.
     * @param seed pattern seed.
     * @return the memory, {@code registrations * bytesEach} bytes, freed after the test.
     */
    protected MemorySegment registeredAtTarget(int registrations, long bytesEach, int seed)
    {
        if (remoteTarget != null) {
            MemorySegment shared = remoteTarget.sharedMemory(registrations, bytesEach);
            fill(shared, seed);
            return shared;
        }
        MemorySegment segment = allocate(registrations * bytesEach, seed);
        for (int i = 0; i < registrations; i++) {
            target.register(Allocation.host(segment.asSlice(i * bytesEach, bytesEach)));
        }
        return segment;
    }

    static void fill(MemorySegment segment, int seed)
    {
        for (long i = 0; i < segment.byteSize(); i += 8) {
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, i, pattern(seed, i));
        }
    }

    static long pattern(int seed, long offset)
    {
        long x = seed * 0x9E3779B97F4A7C15L + offset;
        x ^= x >>> 31;
        x *= 0xBF58476D1CE4E5B9L;
        return x ^ (x >>> 29);
    }

    /**
     * Lists every block of a segment as descriptors.
     *
     * @param segment memory.
     * @param blocks blocks.
     * @param blockBytes bytes per block.
     * @return one descriptor per block, in order.
     */
    protected static DescriptorList blocksOf(MemorySegment segment, int blocks, int blockBytes)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, blocks);
        for (int b = 0; b < blocks; b++) {
            builder.add(segment.address() + (long) b * blockBytes, blockBytes);
        }
        return builder.build();
    }

    /**
     * Polls a transfer until it stops moving data.
     *
     * @param backend the initiator.
     * @param handle the transfer.
     * @return the terminal status.
     */
    protected TransferStatus awaitTerminal(TransferBackend backend, long handle)
    {
        long deadline = System.nanoTime() + deadline().toNanos();
        while (System.nanoTime() < deadline) {
            TransferStatus status = backend.status(handle);
            if (status.terminal()) {
                return status;
            }
            Thread.onSpinWait();
        }
        return fail("transfer still in progress after " + deadline());
    }

    /**
     * Drains notifications until one arrives, checking the condition the moment it is received.
     *
     * @param backend receiver.
     * @param onArrival called on arrival with sender and message, before anything else happens.
     * @return the first notification received.
     */
    protected Received awaitNotification(TransferBackend backend, OnArrival onArrival)
    {
        long deadline = System.nanoTime() + deadline().toNanos();
        List<Received> received = new ArrayList<>();
        while (received.isEmpty() && System.nanoTime() < deadline) {
            backend.drainNotifications((sender, message) -> {
                onArrival.check(sender, message);
                received.add(new Received(sender, message));
            });
            Thread.onSpinWait();
        }
        if (received.isEmpty()) {
            fail("no notification within " + deadline());
        }
        return received.getFirst();
    }

    /** A check run the moment a notification arrives. */
    @FunctionalInterface
    protected interface OnArrival
    {
        /**
         * Checks the state at arrival.
         *
         * @param sender agent name of the sender.
         * @param message the bytes.
         */
        void check(String sender, byte[] message);
    }

    /**
     * A received notification.
     *
     * @param sender agent name of the sender.
     * @param message the bytes.
     */
    protected record Received(String sender, byte[] message)
    {
    }

    static int[] indices(int... values)
    {
        return values;
    }

    /**
     * Asserts that a block of one segment equals a block of another, {@link #BLOCK_BYTES} each.
     *
     * @param actual the segment checked.
     * @param actualBlock its block.
     * @param expected the segment it should equal.
     * @param expectedBlock that segment's block.
     * @param what the transfer, for the message.
     */
    protected static void assertBlock(MemorySegment actual, int actualBlock, MemorySegment expected, int expectedBlock, String what)
    {
        long mismatch = MemorySegment.mismatch(actual, (long) actualBlock * BLOCK_BYTES, (long) (actualBlock + 1) * BLOCK_BYTES,
                expected, (long) expectedBlock * BLOCK_BYTES, (long) (expectedBlock + 1) * BLOCK_BYTES);
        assertEquals(-1, mismatch, () -> what + ": block " + actualBlock + " differs from block " + expectedBlock + " at byte " + mismatch);
    }

    MemorySegment snapshot(MemorySegment segment)
    {
        return arena.allocate(segment.byteSize(), 8).copyFrom(segment);
    }

    /** Collects notifications from a sink, for subclasses' own tests. */
    protected static final class Inbox
    {
        private final ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();

        /** Creates an empty inbox. */
        public Inbox()
        {
        }

        /**
         * Drains a backend into this inbox.
         *
         * @param backend receiver.
         * @return the number drained.
         */
        public int drain(TransferBackend backend)
        {
            return backend.drainNotifications((sender, message) -> received.add(new Received(sender, message)));
        }

        /** {@return what was received so far} */
        public List<Received> received()
        {
            return List.copyOf(received);
        }
    }
}
