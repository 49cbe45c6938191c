package io.kvbridge.core.local;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Transfers over 1 MiB are shared among the copy threads by bytes, so part boundaries fall inside
 * copies: every byte must still land exactly once, whether the pairs merged into one long copy or
 * stayed many odd-sized ones.
 */
@Timeout(60)
final class LocalByteSplitTest
{
    // odd, so part boundaries fall at arbitrary offsets inside blocks
    private static final int BLOCK_BYTES = 12_345;
    private static final int BLOCKS = 400;
    private static final byte[] KEY = {1, 2, 3};

    @Test
    void partsSplitInsideCopiesMoveEveryByteOnce()
    {
        try (Arena arena = Arena.ofShared();
                TransferBackend initiator = new LocalBackendFactory().create(Map.of("copy-threads", "3"), () -> "split-initiator");
                TransferBackend target = new LocalBackendFactory().create(Map.of(), () -> "split-target")) {
            MemorySegment source = arena.allocate((long) BLOCKS * BLOCK_BYTES, 64);
            MemorySegment destination = arena.allocate((long) BLOCKS * BLOCK_BYTES, 64);
            for (long i = 0; i < source.byteSize(); i++) {
                source.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + i / 7));
            }
            initiator.register(Allocation.host(source));
            target.register(Allocation.host(destination));
            PreparedList local = initiator.prepareLocal(blocksOf(source));
            PreparedList remote = initiator.prepareRemote(initiator.connect(target.localMetadata()), blocksOf(destination));
            int[] forward = new int[BLOCKS];
            int[] reversed = new int[BLOCKS];
            for (int b = 0; b < BLOCKS; b++) {
                forward[b] = b;
                reversed[b] = BLOCKS - 1 - b;
            }
            target.grant(KEY, TransferOp.WRITE, target.prepareLocal(blocksOf(destination)), forward, BLOCKS);
            // one copy of 4.9 MB, split in three
            assertEquals(1, move(initiator, local, forward, remote, forward));
            assertEquals(-1, destination.mismatch(source));
            destination.fill((byte) 0);
            // 400 copies, nothing merges; the parts split three of them
            assertEquals(BLOCKS, move(initiator, local, forward, remote, reversed));
            for (int b = 0; b < BLOCKS; b++) {
                long sourceOffset = (long) b * BLOCK_BYTES;
                long destinationOffset = (long) (BLOCKS - 1 - b) * BLOCK_BYTES;
                assertEquals(-1, MemorySegment.mismatch(source, sourceOffset, sourceOffset + BLOCK_BYTES, destination, destinationOffset,
                        destinationOffset + BLOCK_BYTES), "block " + b);
            }
        }
    }

    private static int move(TransferBackend initiator, PreparedList local, int[] localIndices, PreparedList remote, int[] remoteIndices)
    {
        long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, localIndices).remote(remote, remoteIndices)
                .count(localIndices.length).grantKey(KEY));
        TransferStatus status;
        while (!(status = initiator.status(handle)).terminal()) {
            Thread.onSpinWait();
        }
        assertEquals(TransferStatus.DONE, status, () -> String.valueOf(initiator.failure(handle)));
        int operations = initiator.operations(handle);
        initiator.release(handle);
        return operations;
    }

    private static DescriptorList blocksOf(MemorySegment segment)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, BLOCKS);
        for (int b = 0; b < BLOCKS; b++) {
            builder.add(segment.address() + (long) b * BLOCK_BYTES, BLOCK_BYTES);
        }
        return builder.build();
    }
}
