package io.kvbridge.backend.tcp;

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
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Streams whose frames are smaller than one read of the socket: many of them are staged at once,
 * and a read that has used its byte budget must still hand every staged frame over, since the
 * socket will not say it is readable for bytes it no longer holds. Runs of 512 bytes, every other
 * block so that none coalesce, 16,384 runs in one transfer: 8 MiB, twice a read's budget.
 */
@Timeout(60)
final class TcpStreamTest
{
    private static final int RUN_BYTES = 512;
    private static final int RUNS = 16_384;
    private static final byte[] KEY = "small-runs".getBytes(StandardCharsets.UTF_8);
    // the sweep that fails an overdue transfer: a stalled stream fails by it instead of hanging the test
    private static final Map<String, String> OPTIONS = Map.of("host", "127.0.0.1", "transfer-timeout-ms", "20000");

    private Arena arena;
    private TransferBackend initiator;
    private TransferBackend target;

    @BeforeEach
    void open()
    {
        arena = Arena.ofShared();
        initiator = new TcpBackendFactory().create(OPTIONS, () -> "initiator-" + UUID.randomUUID());
        target = new TcpBackendFactory().create(OPTIONS, () -> "target-" + UUID.randomUUID());
    }

    @AfterEach
    void close()
    {
        initiator.close();
        target.close();
        arena.close();
    }

    @ParameterizedTest
    @EnumSource(TransferOp.class)
    void manyRunsSmallerThanOneReadAllArrive(TransferOp op)
    {
        long bytes = 2L * RUNS * RUN_BYTES;
        MemorySegment local = arena.allocate(bytes, 4096);
        MemorySegment remote = arena.allocate(bytes, 4096);
        MemorySegment source = op == TransferOp.WRITE ? local : remote;
        for (long i = 0; i < bytes; i += 8) {
            source.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L + 1);
        }
        initiator.register(Allocation.host(local));
        target.register(Allocation.host(remote));
        PreparedList granted = target.prepareLocal(everyOtherRun(remote));
        target.grant(KEY, op, granted, indices(), RUNS);
        Peer peer = initiator.connect(target.localMetadata());
        PreparedList localList = initiator.prepareLocal(everyOtherRun(local));
        PreparedList remoteList = initiator.prepareRemote(peer, everyOtherRun(remote));

        long handle = initiator.post(new TransferRequest().start(op).local(localList, indices()).remote(remoteList, indices()).count(RUNS)
                .grantKey(KEY));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        TransferStatus status;
        while ((status = initiator.status(handle)) == TransferStatus.IN_PROGRESS && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(TransferStatus.DONE, status, () -> "the transfer ended " + initiator.failure(handle).map(Throwable::getMessage).orElse("without failure"));
        assertEquals(RUNS, initiator.operations(handle), "each run is one frame");
        initiator.release(handle);

        MemorySegment destination = op == TransferOp.WRITE ? remote : local;
        for (int run = 0; run < RUNS; run++) {
            long at = 2L * run * RUN_BYTES;
            assertEquals(-1, source.asSlice(at, RUN_BYTES).mismatch(destination.asSlice(at, RUN_BYTES)), "run " + run + " differs");
            long gap = at + RUN_BYTES;
            assertTrue(destination.asSlice(gap, RUN_BYTES).elements(ValueLayout.JAVA_BYTE).allMatch(b -> b.get(ValueLayout.JAVA_BYTE, 0) == 0),
                    "the gap after run " + run + " was written");
        }
    }

    private static DescriptorList everyOtherRun(MemorySegment memory)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, RUNS);
        for (int run = 0; run < RUNS; run++) {
            builder.add(memory.address() + 2L * run * RUN_BYTES, RUN_BYTES);
        }
        return builder.build();
    }

    private static int[] indices()
    {
        int[] indices = new int[RUNS];
        for (int i = 0; i < RUNS; i++) {
            indices[i] = i;
        }
        return indices;
    }
}
