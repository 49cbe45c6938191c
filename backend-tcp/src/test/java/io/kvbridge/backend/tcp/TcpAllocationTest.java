package io.kvbridge.backend.tcp;

import static org.junit.jupiter.api.Assertions.fail;
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
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A steady stream of transfers allocates nothing per transfer on the poster or on the owner that
 * receives the payloads: slots, exchanges, frame buffers and the windows over registered memory are
 * all reused. The owner that sends payloads allocates what the JDK allocates for a gathering write
 * that includes a buffer over a memory segment: two small records per write, to release the
 * segment's session afterwards (in {@code sun.nio.ch.IOUtil}, JDK 25: 40 bytes). Writing the header
 * apart instead would cost a system call and a TCP segment of its own per run. Measured with the
 * JVM's per-thread allocation counters over 20,000 transfers after a warm-up of as many, so that
 * what the compiler allocates while it warms up is not counted.
 */
@Timeout(120)
final class TcpAllocationTest
{
    private static final int BLOCK = 4096;
    private static final int BLOCKS = 64;
    private static final int TRANSFERS = 20_000;
    private static final byte[] KEY = "steady".getBytes(StandardCharsets.UTF_8);
    /** The poster's and the receiving owner's bound per transfer: a quarter of the smallest object (16 bytes), for what the JIT leaves behind. */
    private static final double MAX_BYTES_PER_TRANSFER = 4;
    /** The sending owner's: the JDK's two records per gathering write, and nothing of ours. */
    private static final double MAX_SENDER_BYTES_PER_TRANSFER = 48;
    private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @ParameterizedTest
    @EnumSource(TransferOp.class)
    void aSteadyStreamAllocatesNothingPerTransfer(TransferOp op)
    {
        Map<String, String> options = Map.of("host", "127.0.0.1");
        String initiatorName = "initiator-" + UUID.randomUUID();
        String targetName = "target-" + UUID.randomUUID();
        try (Arena arena = Arena.ofShared(); TransferBackend initiator = new TcpBackendFactory().create(options, () -> initiatorName);
                TransferBackend target = new TcpBackendFactory().create(options, () -> targetName)) {
            MemorySegment local = arena.allocate((long) BLOCK * BLOCKS, 4096);
            MemorySegment remote = arena.allocate((long) BLOCK * BLOCKS, 4096);
            initiator.register(Allocation.host(local));
            target.register(Allocation.host(remote));
            int[] all = new int[BLOCKS];
            for (int i = 0; i < BLOCKS; i++) {
                all[i] = i;
            }
            PreparedList granted = target.prepareLocal(blocks(remote));
            target.grant(KEY, op, granted, all, BLOCKS);
            Peer peer = initiator.connect(target.localMetadata());
            PreparedList localList = initiator.prepareLocal(blocks(local));
            PreparedList remoteList = initiator.prepareRemote(peer, blocks(remote));
            // one block per transfer, reversed on the remote side so that nothing coalesces
            int[][] localIndex = new int[BLOCKS][];
            int[][] remoteIndex = new int[BLOCKS][];
            for (int i = 0; i < BLOCKS; i++) {
                localIndex[i] = new int[] {i};
                remoteIndex[i] = new int[] {BLOCKS - 1 - i};
            }
            long[] threads = {threadId("kvbridge-tcp-" + initiatorName), threadId("kvbridge-tcp-" + targetName), Thread.currentThread().threadId()};

            stream(initiator, op, localList, remoteList, localIndex, remoteIndex);
            long[] before = THREADS.getThreadAllocatedBytes(threads);
            stream(initiator, op, localList, remoteList, localIndex, remoteIndex);
            long[] after = THREADS.getThreadAllocatedBytes(threads);

            // a WRITE's payload leaves from the initiator's owner, a READ's from the target's
            int sender = op == TransferOp.WRITE ? 0 : 1;
            String[] names = {"the initiator's owner", "the target's owner", "the poster"};
            for (int i = 0; i < threads.length; i++) {
                assertTrue(before[i] >= 0 && after[i] >= 0, "allocation counting is off in this JVM");
                double perTransfer = (double) (after[i] - before[i]) / TRANSFERS;
                double bound = i == sender ? MAX_SENDER_BYTES_PER_TRANSFER : MAX_BYTES_PER_TRANSFER;
                System.out.printf(Locale.ROOT, "tcp %s: %s allocated %.2f bytes per transfer (bound %.0f)%n", op, names[i], perTransfer, bound);
                int thread = i;
                assertTrue(perTransfer <= bound, () -> String.format(Locale.ROOT, "%s: %s allocated %.1f bytes per transfer over %d transfers, more than %.0f",
                        op, names[thread], perTransfer, TRANSFERS, bound));
            }
        }
    }

    /** Posts {@link #TRANSFERS} transfers, 8 in flight, releasing each once it ended. */
    private static void stream(TransferBackend initiator, TransferOp op, PreparedList local, PreparedList remote, int[][] localIndex, int[][] remoteIndex)
    {
        long[] window = new long[8];
        // one request refilled for every post, as an engine's worker posts
        TransferRequest request = new TransferRequest();
        int posted = 0;
        int done = 0;
        while (done < TRANSFERS) {
            for (int slot = 0; slot < window.length; slot++) {
                if (window[slot] == 0 && posted < TRANSFERS) {
                    int block = posted % BLOCKS;
                    window[slot] = initiator.post(request.start(op).local(local, localIndex[block]).remote(remote, remoteIndex[block]).count(1)
                            .grantKey(KEY));
                    posted++;
                }
                else if (window[slot] != 0) {
                    TransferStatus status = initiator.status(window[slot]);
                    if (status != TransferStatus.IN_PROGRESS) {
                        if (status != TransferStatus.DONE) {
                            fail("transfer " + done + " failed: " + initiator.failure(window[slot]));
                        }
                        initiator.release(window[slot]);
                        window[slot] = 0;
                        done++;
                    }
                }
            }
        }
    }

    private static DescriptorList blocks(MemorySegment memory)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, BLOCKS);
        for (int i = 0; i < BLOCKS; i++) {
            builder.add(memory.address() + (long) i * BLOCK, BLOCK);
        }
        return builder.build();
    }

    private static long threadId(String name)
    {
        return Thread.getAllStackTraces().keySet().stream().filter(thread -> thread.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no thread named " + name)).threadId();
    }

}
