package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The operation count the transport reports when a post returns is the number of descriptors NIXL
 * makes of the request, checked against the fake's own merge (written in C, read back through
 * NIXL's telemetry) over lists of several shapes and random index patterns.
 */
@Timeout(60)
final class NixlMergeCountTest
{
    private static final int BLOCKS = 64;
    private static final long BLOCK = 4096;
    private static final Duration DEADLINE = Duration.ofSeconds(10);

    private final FakeNixl fake = FakeNixl.HEAD;
    private Arena arena;
    private TransferBackend initiator;
    private TransferBackend target;
    private Peer peer;
    private MemorySegment source;
    private MemorySegment destination;

    @BeforeEach
    void connect()
    {
        arena = Arena.ofShared();
        Map<String, String> options = new HashMap<>(fake.options());
        options.put("telemetry", "true");
        initiator = fake.factory().create(options, () -> "merge-initiator-" + UUID.randomUUID());
        target = fake.factory().create(fake.options(), () -> "merge-target-" + UUID.randomUUID());
        source = arena.allocate(BLOCKS * BLOCK, 4096);
        destination = arena.allocate(BLOCKS * BLOCK, 4096);
        // two registrations per side, back to back: runs end where a registration ends
        long half = BLOCKS / 2 * BLOCK;
        initiator.register(Allocation.host(source.asSlice(0, half)));
        initiator.register(Allocation.host(source.asSlice(half, half)));
        target.register(Allocation.host(destination.asSlice(0, half)));
        target.register(Allocation.host(destination.asSlice(half, half)));
        peer = initiator.connect(target.localMetadata());
    }

    @AfterEach
    void close()
    {
        fake.option("merge", "runs");
        initiator.close();
        target.close();
        arena.close();
    }

    @Test
    void reportedOperationsAreTheDescriptorsNixlMakes()
    {
        Random random = new Random(20261201L);
        // dense and irregular lists have dense runs; a reversed list has runs of one, a strided one never merges
        long[][] shapes = {blocks(0, BLOCKS, 1), irregular(random), blocks(BLOCKS - 1, BLOCKS, -1), blocks(0, BLOCKS / 2, 2)};
        for (int l = 0; l < shapes.length; l++) {
            for (int r = 0; r < shapes.length; r++) {
                long[] localShape = shapes[l];
                long[] remoteShape = shapes[r];
                int merged = 0;
                PreparedList local = initiator.prepareLocal(list(source, localShape));
                PreparedList remote = initiator.prepareRemote(peer, list(destination, remoteShape));
                for (int round = 0; round < 8; round++) {
                    int count = 1 + random.nextInt(24);
                    int[] localIndices = new int[count];
                    int[] remoteIndices = new int[count];
                    pattern(random, localIndices, localShape.length, remoteIndices, remoteShape.length);
                    long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, localIndices)
                            .remote(remote, remoteIndices).count(count));
                    int operations = initiator.operations(handle);
                    assertEquals(TransferStatus.DONE, NixlTestSupport.awaitTerminal(initiator, handle, DEADLINE));
                    initiator.release(handle);
                    assertTrue(operations >= 1 && operations <= count, () -> "operations=" + operations + " for " + count + " pairs");
                    merged += operations < count ? 1 : 0;
                }
                initiator.releasePrepared(local);
                initiator.releasePrepared(remote);
                boolean mergeable = l < 2 && r < 2;
                assertEquals(mergeable, merged > 0, "shapes " + l + " and " + r + ": " + merged + " of 8 transfers merged pairs");
            }
        }
        assertEquals(Optional.empty(), initiator.problem(), "NIXL's telemetry counted other descriptors than the transport reported");
    }

    @Test
    void aLibraryThatMergesByAnotherRuleIsReported()
    {
        // NIXL up to 1.3 merged by address: blocks 0, 3, 4 are two of NIXL 1.4's runs, but 3 and 4 are adjacent
        fake.option("merge", "address");
        PreparedList local = initiator.prepareLocal(list(source, new long[] {0, 3, 4}));
        PreparedList remote = initiator.prepareRemote(peer, list(destination, blocks(0, 4, 1)));
        long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {1, 2}).remote(remote, new int[] {0, 1})
                .count(2));
        assertEquals(2, initiator.operations(handle), "1.4.0's rule: the two pairs stay two descriptors");
        assertEquals(TransferStatus.DONE, NixlTestSupport.awaitTerminal(initiator, handle, DEADLINE));
        initiator.release(handle);
        Optional<String> problem = initiator.problem();
        assertTrue(problem.isPresent() && problem.get().contains("NIXL made 1 descriptors of a transfer reported as 2 operations"),
                () -> "expected the difference in problem(), got " + problem);
    }

    /** Block positions start, start + step, ... (count of them). */
    private static long[] blocks(int start, int count, int step)
    {
        long[] positions = new long[count];
        for (int i = 0; i < count; i++) {
            positions[i] = start + (long) i * step;
        }
        return positions;
    }

    /** Increasing block positions with gaps of 1 to 3 blocks now and then, so runs and strides change. */
    private static long[] irregular(Random random)
    {
        long[] positions = new long[40];
        long position = 0;
        for (int i = 0; i < positions.length; i++) {
            positions[i] = position;
            position += random.nextInt(4) == 0 ? 1 + random.nextInt(3) : 1;
        }
        return positions;
    }

    /** Runs of consecutive indices of one random length on both sides, at random starts on each. */
    private static void pattern(Random random, int[] local, int localSize, int[] remote, int remoteSize)
    {
        int i = 0;
        while (i < local.length) {
            int run = Math.min(local.length - i, 1 + random.nextInt(8));
            int localStart = random.nextInt(localSize - run + 1);
            int remoteStart = random.nextInt(remoteSize - run + 1);
            for (int k = 0; k < run; k++, i++) {
                local[i] = localStart + k;
                remote[i] = remoteStart + k;
            }
        }
    }

    private static DescriptorList list(MemorySegment memory, long[] blockPositions)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, blockPositions.length);
        for (long position : blockPositions) {
            builder.add(memory.address() + position * BLOCK, BLOCK);
        }
        return builder.build();
    }
}
