package io.kvbridge.testkit;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The part of the transport contract about operations: the count each transfer reports, and, for a
 * transport that declares {@link Capability#COALESCING}, which descriptor pairs it merges (runs
 * contiguous on both sides, within one registration each, never backwards), checked byte for byte
 * against the pairs applied one by one. {@link AbstractTransferBackendConformanceTest} extends it, so
 * a transport's one conformance class runs these too; the fixture is the same.
 */
@Timeout(120)
public abstract class AbstractCoalescingConformanceTest extends TransferBackendConformanceFixture
{
    /** For {@link AbstractTransferBackendConformanceTest}, or a transport's subclass that runs these tests alone. */
    protected AbstractCoalescingConformanceTest()
    {
    }

    @Test
    void operationCountIsOnePerPairOrUnknownAndGoesWithTheHandle()
    {
        PreparedList local = initiator.prepareLocal(blocksOf(initiatorMemory, BLOCKS, BLOCK_BYTES));
        PreparedList remote = initiator.prepareRemote(targetPeer, blocksOf(targetMemory, BLOCKS, BLOCK_BYTES));
        int[] run = indices(0, 1, 2, 3);
        long handle = post(new TransferRequest().start(TransferOp.WRITE).local(local, run).remote(remote, run).count(run.length));
        int operations = initiator.operations(handle);
        assertEquals(TransferStatus.DONE, awaitTerminal(initiator, handle));
        assertEquals(operations, initiator.operations(handle), "the count does not change while the handle lives");
        initiator.release(handle);
        if (coalesces()) {
            assertEquals(1, operations, "four pairs contiguous on both sides in one registration each are one operation");
        }
        else {
            assertTrue(operations == -1 || operations == run.length, "without COALESCING: one operation per pair, or -1; got " + operations);
        }
        assertCode(ErrorCode.HANDLE_UNKNOWN, () -> initiator.operations(handle));
    }

    @Test
    void coalescingMergesRunsContiguousOnBothSides()
    {
        assumeCoalescing();
        Side local = localSide(initiatorMemory, BLOCKS);
        Side remote = remoteSide(targetPeer, targetMemory, BLOCKS);
        // runs 0-7 -> 8-15 and 20-22 -> 40-42, then a single pair
        moveAndCheck(TransferOp.WRITE, local, indices(0, 1, 2, 3, 4, 5, 6, 7, 20, 21, 22, 30), remote,
                indices(8, 9, 10, 11, 12, 13, 14, 15, 40, 41, 42, 50), 3);
        moveAndCheck(TransferOp.READ, local, indices(0, 1, 2, 3, 10), remote, indices(60, 61, 62, 63, 5), 2);
        int[] all = new int[BLOCKS];
        for (int b = 0; b < BLOCKS; b++) {
            all[b] = b;
        }
        moveAndCheck(TransferOp.WRITE, local, all, remote, all, 1);
    }

    @Test
    void coalescingKeepsGapsOnEitherSide()
    {
        assumeCoalescing();
        Side local = localSide(initiatorMemory, BLOCKS);
        Side remote = remoteSide(targetPeer, targetMemory, BLOCKS);
        // contiguous locally with remote gaps, then remote-contiguous with local gaps: nothing merges
        moveAndCheck(TransferOp.WRITE, local, indices(0, 1, 2, 3, 10, 12, 14), remote, indices(10, 12, 14, 16, 30, 31, 32), 7);
        // one remote block read into two consecutive local blocks
        moveAndCheck(TransferOp.READ, local, indices(5, 6), remote, indices(9, 9), 2);
    }

    @Test
    void coalescingStopsAtRegistrationBoundaries()
    {
        assumeCoalescing();
        int half = 8;
        long halfBytes = (long) half * BLOCK_BYTES;
        // two registrations per side, back to back in memory: a run crossing from one into the other
        // is contiguous but needs one operation per registration
        MemorySegment localPair = allocate(2 * halfBytes, 11);
        assertEquals(localPair.address() + halfBytes, localPair.asSlice(halfBytes).address());
        initiator.register(Allocation.host(localPair.asSlice(0, halfBytes)));
        initiator.register(Allocation.host(localPair.asSlice(halfBytes, halfBytes)));
        MemorySegment remotePair = registeredAtTarget(2, halfBytes, 12);
        grantAll(remotePair);
        Peer peer = initiator.connect(target.localMetadata());
        Side crossingLocal = localSide(localPair, 2 * half);
        Side crossingRemote = remoteSide(peer, remotePair, 2 * half);
        Side local = localSide(initiatorMemory, BLOCKS);
        Side remote = remoteSide(peer, targetMemory, BLOCKS);
        moveAndCheck(TransferOp.WRITE, crossingLocal, indices(6, 7, 8, 9), remote, indices(0, 1, 2, 3), 2);
        moveAndCheck(TransferOp.WRITE, local, indices(0, 1, 2, 3), crossingRemote, indices(6, 7, 8, 9), 2);
        moveAndCheck(TransferOp.WRITE, crossingLocal, indices(4, 5, 6, 7, 8, 9, 10, 11), crossingRemote, indices(4, 5, 6, 7, 8, 9, 10, 11), 2);
        moveAndCheck(TransferOp.READ, crossingLocal, indices(6, 7, 8, 9), crossingRemote, indices(5, 6, 7, 8), 3);
    }

    @Test
    void coalescingNeverMergesBackwards()
    {
        assumeCoalescing();
        Side local = localSide(initiatorMemory, BLOCKS);
        Side remote = remoteSide(targetPeer, targetMemory, BLOCKS);
        moveAndCheck(TransferOp.WRITE, local, indices(7, 6, 5, 4), remote, indices(7, 6, 5, 4), 4);
        moveAndCheck(TransferOp.WRITE, local, indices(3, 2, 1, 0), remote, indices(20, 21, 22, 23), 4);
        moveAndCheck(TransferOp.READ, local, indices(30, 31, 32), remote, indices(42, 41, 40), 3);
    }

    private boolean coalesces()
    {
        return newFactory().probe().capabilities().contains(Capability.COALESCING);
    }

    private void assumeCoalescing()
    {
        assumeTrue(coalesces(), "the transport does not declare COALESCING");
    }

    /** One side of a transfer: memory spanning its descriptors, the descriptors, and their prepared list. */
    private record Side(MemorySegment memory, DescriptorList descriptors, PreparedList list)
    {
    }

    private Side localSide(MemorySegment memory, int blocks)
    {
        DescriptorList descriptors = blocksOf(memory, blocks, BLOCK_BYTES);
        return new Side(memory, descriptors, initiator.prepareLocal(descriptors));
    }

    private Side remoteSide(Peer peer, MemorySegment memory, int blocks)
    {
        DescriptorList descriptors = blocksOf(memory, blocks, BLOCK_BYTES);
        return new Side(memory, descriptors, initiator.prepareRemote(peer, descriptors));
    }

    /**
     * Moves the pairs and checks every byte of both sides against the pairs applied one by one to a
     * snapshot, and the operation count the initiator reported right after the post.
     */
    private void moveAndCheck(TransferOp op, Side local, int[] localIndices, Side remote, int[] remoteIndices, int expectedOperations)
    {
        boolean write = op == TransferOp.WRITE;
        Side source = write ? local : remote;
        Side destination = write ? remote : local;
        int[] sourceIndices = write ? localIndices : remoteIndices;
        int[] destinationIndices = write ? remoteIndices : localIndices;
        MemorySegment sourceBefore = snapshot(source.memory());
        MemorySegment expected = snapshot(destination.memory());
        for (int i = 0; i < localIndices.length; i++) {
            MemorySegment.copy(sourceBefore, source.descriptors().address(sourceIndices[i]) - source.memory().address(), expected,
                    destination.descriptors().address(destinationIndices[i]) - destination.memory().address(),
                    source.descriptors().length(sourceIndices[i]));
        }
        long handle = post(new TransferRequest().start(op).local(local.list(), localIndices).remote(remote.list(), remoteIndices)
                .count(localIndices.length));
        int operations = initiator.operations(handle);
        assertEquals(TransferStatus.DONE, awaitTerminal(initiator, handle), () -> String.valueOf(initiator.failure(handle)));
        initiator.release(handle);
        String pairs = op + " of local " + Arrays.toString(localIndices) + " and remote " + Arrays.toString(remoteIndices);
        assertEquals(expectedOperations, operations, () -> pairs + ": operations issued");
        long wrong = destination.memory().mismatch(expected);
        assertEquals(-1, wrong, () -> pairs + ": destination byte " + wrong + " differs from what the pairs move");
        assertEquals(-1, source.memory().mismatch(sourceBefore), () -> pairs + ": the source changed");
    }
}
