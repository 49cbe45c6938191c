package io.kvbridge.backend.cudaipc;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvbridge.backend.cudaipc.ffm.CudaDriver;
import io.kvbridge.backend.cudaipc.ffm.CudaLayouts;
import io.kvbridge.backend.cudaipc.ffm.CudaMemcpyBatch;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.DescriptorPairs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;

/**
 * Queues a transfer's coalesced copies on a stream: with the driver's batch call where it has one
 * and the transfer has more than one copy, {@code batchSize} copies per call, else one
 * {@code cuMemcpyAsync} per copy. The batch arrays are native memory made once per instance and
 * refilled per batch, so issuing allocates nothing.
 *
 * <p>Every batch has one attribute for all its copies: sources are read in stream order
 * ({@code CU_MEMCPY_SRC_ACCESS_ORDER_STREAM}, as {@code cuMemcpyAsync} reads them, since earlier
 * work on the stream may still write them), location hints name the two sides' memory (the driver
 * uses them only for managed or pageable memory, which the transport never copies), no flags.
 * Copies inside one batch have no order among them; the event recorded after the last batch is
 * reached only after all of them, as after the last of single copies.
 *
 * <p>Threads: the owner thread only, which also closes it.
 */
final class CopyIssuer implements AutoCloseable
{
    private static final long ACCESS_ORDER = offset("srcAccessOrder");
    private static final long SOURCE_HINT = offset("srcLocHint");
    private static final long DESTINATION_HINT = offset("dstLocHint");
    private static final long FLAGS = offset("flags");

    private final CudaMemcpyBatch.EntryPoint entry;
    private final int batchSize;
    private final Arena arena;
    private final MemorySegment dsts;
    private final MemorySegment srcs;
    private final MemorySegment sizes;
    private final MemorySegment attributes;
    private final MemorySegment attributeIndex;
    private final MemorySegment failIndex;

    /**
     * @param entry the batch call, or an absent one for single copies only.
     * @param batchSize copies per batch call, at least 2.
     */
    CopyIssuer(CudaMemcpyBatch.EntryPoint entry, int batchSize)
    {
        this.entry = entry;
        this.batchSize = batchSize;
        this.arena = Arena.ofConfined();
        int slots = entry.present() ? batchSize : 1;
        this.dsts = arena.allocate(JAVA_LONG, slots);
        this.srcs = arena.allocate(JAVA_LONG, slots);
        this.sizes = arena.allocate(JAVA_LONG, slots);
        this.attributes = arena.allocate(CudaLayouts.MEMCPY_ATTRIBUTES);
        this.attributeIndex = arena.allocate(JAVA_LONG);
        this.failIndex = arena.allocate(JAVA_LONG);
        attributes.set(JAVA_INT, ACCESS_ORDER, CudaLayouts.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
        attributes.set(JAVA_INT, FLAGS, CudaLayouts.CU_MEMCPY_FLAG_DEFAULT);
        attributeIndex.set(JAVA_LONG, 0, 0L);
    }

    /** @return how copies are issued, for logs: the batch entry point or why there is none. */
    String describe()
    {
        return entry.present() ? entry.detail() + ", up to " + batchSize + " copies per call" : entry.detail();
    }

    /**
     * Queues every copy of a transfer, stopping at the first the driver refuses.
     *
     * @return the transfer's failure naming the refused copies, or null when all were queued.
     */
    KvBridgeException issue(CudaIpcTransfer transfer, long stream)
    {
        DescriptorPairs copies = transfer.copies;
        if (!entry.present() || copies.size() < 2) {
            return issueEach(transfer, stream);
        }
        boolean write = transfer.op == TransferOp.WRITE;
        CudaIpcList source = write ? transfer.local : transfer.remote;
        CudaIpcList destination = write ? transfer.remote : transfer.local;
        hint(SOURCE_HINT, source.kind(), source.device());
        hint(DESTINATION_HINT, destination.kind(), destination.device());
        CudaIpcList remote = transfer.remote;
        int total = copies.size();
        for (int first = 0; first < total; first += batchSize) {
            int count = Math.min(batchSize, total - first);
            for (int k = 0; k < count; k++) {
                int i = first + k;
                long local = copies.localAddress(i);
                long far = copies.remoteAddress(i) + remote.region(copies.remoteRegion(i)).delta();
                dsts.setAtIndex(JAVA_LONG, k, write ? far : local);
                srcs.setAtIndex(JAVA_LONG, k, write ? local : far);
                sizes.setAtIndex(JAVA_LONG, k, copies.length(i));
            }
            failIndex.set(JAVA_LONG, 0, -1L);
            int rc = CudaMemcpyBatch.call(entry, dsts, srcs, sizes, count, attributes, attributeIndex, 1, failIndex, stream);
            if (rc != 0) {
                long failed = entry.takesFailIndex() ? failIndex.get(JAVA_LONG, 0) : -1;
                String which = failed >= 0 && failed < count ? "; the driver named copy " + (first + failed) + " (" + copies.length((int) (first + failed))
                        + " bytes)" : "";
                return CudaDriver.failure(ErrorCode.TRANSFER_FAILED, rc, "cuMemcpyBatchAsync", "queueing copies " + first + ".." + (first + count - 1)
                        + " of " + total + " in one batch to peer '" + transfer.peer.name() + "'" + which + "; nothing is announced to the peer");
            }
        }
        return null;
    }

    private KvBridgeException issueEach(CudaIpcTransfer transfer, long stream)
    {
        DescriptorPairs copies = transfer.copies;
        CudaIpcList remote = transfer.remote;
        boolean write = transfer.op == TransferOp.WRITE;
        for (int i = 0; i < copies.size(); i++) {
            long local = copies.localAddress(i);
            long far = copies.remoteAddress(i) + remote.region(copies.remoteRegion(i)).delta();
            int rc = CudaDriver.cuMemcpyAsync(write ? far : local, write ? local : far, copies.length(i), stream);
            if (rc != 0) {
                return CudaDriver.failure(ErrorCode.TRANSFER_FAILED, rc, "cuMemcpyAsync", "queueing copy " + i + " of " + copies.size()
                        + " (" + copies.length(i) + " bytes) to peer '" + transfer.peer.name() + "'; nothing is announced to the peer");
            }
        }
        return null;
    }

    private void hint(long offset, MemoryKind kind, int device)
    {
        boolean onDevice = kind == MemoryKind.DEVICE;
        attributes.set(JAVA_INT, offset, onDevice ? CudaLayouts.CU_MEM_LOCATION_TYPE_DEVICE : CudaLayouts.CU_MEM_LOCATION_TYPE_HOST);
        attributes.set(JAVA_INT, offset + 4, onDevice ? device : 0);
    }

    private static long offset(String field)
    {
        return CudaLayouts.MEMCPY_ATTRIBUTES.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    @Override
    public void close()
    {
        arena.close();
    }
}
