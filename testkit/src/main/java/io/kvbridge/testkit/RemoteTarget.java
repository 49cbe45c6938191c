package io.kvbridge.testkit;

import io.kvbridge.testkit.RemoteTransferBackend.SharedAllocation;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A conformance suite's target in a child process ({@link RemoteTargetProcess}), and the memory it
 * shares with the test process: allocated by the target's transport and mapped here at the same
 * address ({@link SharedMappings}), so the suite builds descriptors from it, fills it and compares it
 * as it does memory of its own process.
 */
final class RemoteTarget implements AutoCloseable
{
    /** Allocations tried before giving up on memory that can be mapped here at its own address. */
    private static final int ATTEMPTS = 16;
    private static final long PAGE_BYTES = 4096;
    // the spacer kept in the child after an attempt whose collision here cannot be located, or
    // whose allocations did not lie back to back; untouched, a spacer costs address space, not memory
    private static final long SPACER_BYTES = 64L << 20;

    private final TargetProcessLink link;
    private final RemoteTransferBackend backend;
    private final List<Mapping> mappings = new ArrayList<>();

    private record Mapping(long address, long bytes)
    {
    }

    private RemoteTarget(TargetProcessLink link, RemoteTransferBackend backend)
    {
        this.link = link;
        this.backend = backend;
    }

    /**
     * Starts the child and creates the target there.
     *
     * @param testClass made in the child with its no-argument constructor, for its factory and options.
     * @param agentName the target's agent name.
     * @param deadline how long the start and each call may take.
     */
    static RemoteTarget start(Class<? extends TransferBackendConformanceFixture> testClass, String agentName, Duration deadline)
    {
        TargetProcessLink link = TargetProcessLink.start(deadline);
        try {
            return new RemoteTarget(link, RemoteTransferBackend.start(link, testClass, agentName));
        }
        catch (RuntimeException e) {
            String stopped = link.stop();
            if (!stopped.isEmpty()) {
                e.addSuppressed(new IllegalStateException(stopped));
            }
            throw e;
        }
    }

    /** {@return the target, whose calls run in the child} */
    RemoteTransferBackend backend()
    {
        return backend;
    }

    /** {@return the child's pid} */
    long pid()
    {
        return backend.pid();
    }

    /**
     * Returns host memory of {@code registrations} back-to-back allocations of the target, each its
     * own registration, mapped here at the child's addresses. Allocations whose addresses are taken
     * here, or that do not lie back to back, are kept while the next ones are tried, each followed
     * by a spacer (so the next lie elsewhere, see {@link #spacerBytes}), then given back.
     *
     * @param registrations how many registrations; at least 1.
     * @param bytesEach bytes of each; a multiple of 4096 when there are several, so that they can lie back to back.
     * @return the memory, {@code registrations * bytesEach} bytes, unmapped by {@link #close()}.
     * @throws IllegalStateException when no allocation could be mapped here within {@value #ATTEMPTS} attempts.
     */
    MemorySegment sharedMemory(int registrations, long bytesEach)
    {
        if (registrations < 1 || bytesEach < 1 || (registrations > 1 && bytesEach % PAGE_BYTES != 0)) {
            throw new IllegalArgumentException("registrations=" + registrations + " bytesEach=" + bytesEach + ": the target process allocates at least "
                    + "one registration of positive size, and several only of whole 4096-byte pages, so that they can lie back to back");
        }
        List<SharedAllocation> unused = new ArrayList<>();
        List<String> tried = new ArrayList<>();
        try {
            for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
                List<SharedAllocation> group = new ArrayList<>();
                for (int i = 0; i < registrations; i++) {
                    group.add(backend.allocateShared(bytesEach));
                }
                group.sort(Comparator.comparingLong(shared -> shared.allocation().address()));
                String refusal = backToBack(group, bytesEach) ? mapAll(group, bytesEach) : "not back to back";
                if (refusal == null) {
                    return MemorySegment.ofAddress(group.getFirst().allocation().address()).reinterpret(registrations * bytesEach);
                }
                unused.addAll(group);
                tried.add(describe(group) + ": " + refusal);
                unused.add(backend.allocateShared(spacerBytes(group, bytesEach, attempt)));
            }
        }
        finally {
            for (SharedAllocation shared : unused) {
                backend.deregister(shared.allocation());
            }
        }
        throw new IllegalStateException("no memory the target process (pid " + pid() + ") allocated could be mapped here at its own address in " + ATTEMPTS
                + " attempts: " + tried + "; the two processes' address spaces overlap there, so rerun, or give the test JVM fewer mappings");
    }

    /**
     * The child's mappings grow downwards, each in the highest hole below that has room. A spacer
     * that reaches from the group down to the start of the mapping here that it collided with makes
     * the next group lie below that mapping, when the hole under the group is that large; when it
     * is not, the spacer lands elsewhere and the next group a step lower in the same mapping, so
     * each further attempt halves the spacer until one fits the hole. A spacer of one fixed size left
     * eight attempts 1 MiB apart inside one 45 MB mapping of the test JVM.
     */
    private static long spacerBytes(List<SharedAllocation> group, long bytesEach, int attempt)
    {
        long first = group.getFirst().allocation().address();
        long span = group.getLast().allocation().address() + bytesEach - first;
        long below = (first - SharedMappings.lowestStartOverlapping(first, span)) >> Math.min(attempt, 40);
        return below > 0 ? (below + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES : SPACER_BYTES;
    }

    private static boolean backToBack(List<SharedAllocation> group, long bytesEach)
    {
        for (int i = 1; i < group.size(); i++) {
            if (group.get(i).allocation().address() != group.get(i - 1).allocation().address() + bytesEach) {
                return false;
            }
        }
        return true;
    }

    /** Maps every allocation of the group here; returns null, or why not (having unmapped what it mapped). */
    private String mapAll(List<SharedAllocation> group, long bytesEach)
    {
        List<Mapping> mapped = new ArrayList<>();
        for (SharedAllocation shared : group) {
            long address = shared.allocation().address();
            if (!SharedMappings.mapAt(pid(), shared.file(), address, bytesEach)) {
                mapped.forEach(mapping -> SharedMappings.unmap(mapping.address(), mapping.bytes()));
                return "taken here by " + SharedMappings.mappingsOverlapping(address, bytesEach);
            }
            mapped.add(new Mapping(address, bytesEach));
        }
        mappings.addAll(mapped);
        return null;
    }

    private static String describe(List<SharedAllocation> group)
    {
        return group.stream().map(shared -> String.format("0x%x", shared.allocation().address())).toList().toString();
    }

    /**
     * Unmaps the shared memory and ends the child, killing it after the deadline.
     *
     * @throws IllegalStateException when the child did not end cleanly.
     */
    @Override
    public void close()
    {
        RuntimeException failure = null;
        for (Mapping mapping : mappings) {
            try {
                SharedMappings.unmap(mapping.address(), mapping.bytes());
            }
            catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        mappings.clear();
        String stopped = link.stop();
        if (!stopped.isEmpty() && failure == null) {
            failure = new IllegalStateException(stopped);
        }
        if (failure != null) {
            throw failure;
        }
    }
}
