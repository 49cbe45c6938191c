package io.kvbridge.core.local;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.transport.InstanceGuard;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The copy threads of one {@code local} instance. A transfer of more than 1 MiB is split by bytes
 * into at most one contiguous part per thread; the thread that finishes the last part ends the
 * transfer (and so delivers its notification after all of its data).
 *
 * <p>Threads: {@link #start} from posting threads, the loops on their own threads, {@link #stop}
 * once from the closing thread.
 */
final class LocalCopier
{
    private static final Logger LOG = LoggerFactory.getLogger(LocalCopier.class);

    // one segment spanning the address space: copies address memory by absolute offset, so moving a
    // descriptor creates no segment object
    private static final MemorySegment ALL_MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
    private static final LocalTransfer STOP = new LocalTransfer(-1);
    // transfers smaller than this are not split: waking a second thread costs more than it saves
    private static final long SPLIT_THRESHOLD_BYTES = 1 << 20;

    private final InstanceGuard guard;
    private final Thread[] threads;
    private final List<ArrayBlockingQueue<LocalTransfer>> queues;
    private final BiConsumer<LocalTransfer, KvBridgeException> onComplete;
    // what each thread copies now, so that a release can wait until no thread copies a released transfer
    private final AtomicReferenceArray<LocalTransfer> copying;

    /**
     * Starts the copy threads.
     *
     * @param onComplete ends a transfer, with the copy failure or null; runs on a copy thread.
     */
    LocalCopier(InstanceGuard guard, int threadCount, int maxInFlight, BiConsumer<LocalTransfer, KvBridgeException> onComplete)
    {
        this.guard = guard;
        this.onComplete = onComplete;
        this.threads = new Thread[threadCount];
        this.copying = new AtomicReferenceArray<>(threadCount);
        List<ArrayBlockingQueue<LocalTransfer>> threadQueues = new ArrayList<>();
        for (int i = 0; i < threadCount; i++) {
            // every slot may be queued once per thread, plus the stop marker
            threadQueues.add(new ArrayBlockingQueue<>(maxInFlight + 1));
        }
        this.queues = List.copyOf(threadQueues);
        for (int i = 0; i < threadCount; i++) {
            int part = i;
            threads[i] = Thread.ofPlatform().daemon().name("kvbridge-local-" + guard.agentName() + "-copy-" + i).start(() -> copyLoop(part));
        }
    }

    int threads()
    {
        return threads.length;
    }

    /** Queues a resolved transfer, split between the threads by bytes. */
    void start(LocalTransfer transfer)
    {
        // split by bytes, not by copies: a coalesced transfer may be one long copy
        transfer.parts = (int) Math.max(1, Math.min(threads.length, transfer.bytes / SPLIT_THRESHOLD_BYTES));
        transfer.partFailure = null;
        transfer.pendingParts.set(transfer.parts);
        for (int part = 0; part < transfer.parts; part++) {
            queues.get(part).add(transfer);
        }
    }

    private void copyLoop(int part)
    {
        ArrayBlockingQueue<LocalTransfer> queue = queues.get(part);
        while (true) {
            LocalTransfer transfer;
            try {
                transfer = queue.take();
            }
            catch (InterruptedException e) {
                return;
            }
            if (transfer == STOP) {
                return;
            }
            copying.set(part, transfer);
            KvBridgeException failure = copyPart(transfer, part);
            copying.set(part, null);
            if (failure != null) {
                // recorded before counting down, so the part that finishes last sees it
                transfer.partFailure = failure;
            }
            if (transfer.pendingParts.decrementAndGet() == 0) {
                onComplete.accept(transfer, transfer.partFailure);
            }
        }
    }

    private static KvBridgeException copyPart(LocalTransfer transfer, int part)
    {
        try {
            String unusable = transfer.localList.unusableReason();
            if (unusable == null) {
                unusable = transfer.remoteList.unusableReason();
            }
            if (unusable != null) {
                return new KvBridgeException(ErrorCode.TRANSFER_FAILED, "transfer stopped before moving data: " + unusable);
            }
            copyBytes(transfer, part);
            return null;
        }
        catch (RuntimeException | Error e) {
            return new KvBridgeException(ErrorCode.TRANSFER_FAILED, "copy failed: " + e, e);
        }
    }

    /** Copies one part's share of the transfer's bytes: a contiguous byte range across its copies. */
    private static void copyBytes(LocalTransfer transfer, int part)
    {
        // equal shares; the last part takes the remainder
        long share = transfer.bytes / transfer.parts;
        long begin = share * part;
        long end = part == transfer.parts - 1 ? transfer.bytes : begin + share;
        DescriptorPairs copies = transfer.copies;
        boolean write = transfer.write;
        long offset = 0;
        for (int i = 0; i < copies.size() && offset < end && !transfer.cancelled(); i++) {
            long length = copies.length(i);
            long from = Math.max(begin, offset);
            long to = Math.min(end, offset + length);
            if (from < to) {
                long skip = from - offset;
                long source = (write ? copies.localAddress(i) : copies.remoteAddress(i)) + skip;
                long destination = (write ? copies.remoteAddress(i) : copies.localAddress(i)) + skip;
                MemorySegment.copy(ALL_MEMORY, source, ALL_MEMORY, destination, to - from);
            }
            offset += length;
        }
    }

    /**
     * Waits until no thread copies a released transfer: a copy stops at the next descriptor once its
     * transfer is released, so this returns within one descriptor's copy.
     *
     * @return false when one still copied after {@code timeoutNanos}.
     */
    boolean awaitReleasedCopies(long timeoutNanos)
    {
        long deadline = System.nanoTime() + timeoutNanos;
        for (int i = 0; i < copying.length(); i++) {
            LocalTransfer transfer;
            while ((transfer = copying.get(i)) != null && transfer.cancelled()) {
                if (System.nanoTime() - deadline > 0) {
                    return false;
                }
                Thread.onSpinWait();
            }
        }
        return true;
    }

    Optional<String> problem()
    {
        for (Thread thread : threads) {
            if (!thread.isAlive()) {
                return Optional.of("copy thread " + thread.getName() + " of " + guard.description() + " has stopped (state="
                        + thread.getState() + "): transfers handed to it never finish; close this instance and create a new one");
            }
        }
        return Optional.empty();
    }

    /** Stops every thread after the transfers queued before it. */
    void stop()
    {
        for (ArrayBlockingQueue<LocalTransfer> queue : queues) {
            queue.add(STOP);
        }
        for (Thread thread : threads) {
            try {
                thread.join(10_000);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            if (thread.isAlive()) {
                LOG.warn("copy thread {} did not stop within 10 s", thread.getName());
            }
        }
    }
}
