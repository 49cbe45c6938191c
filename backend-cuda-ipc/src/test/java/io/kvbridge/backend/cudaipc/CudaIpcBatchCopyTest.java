package io.kvbridge.backend.cudaipc;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.backend.cudaipc.ffm.CudaDriver;
import io.kvbridge.backend.cudaipc.ffm.CudaLayouts;
import io.kvbridge.backend.cudaipc.ffm.CudaMemcpyBatch;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.KvBridgeAssertions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Batched copies over the fake driver: spaced-apart descriptors (none coalesce) go as one
 * {@code cuMemcpyBatchAsync} call per batch, through either ABI; without the batch call (hidden by
 * the fake as a driver older than 12.8 answers, or turned off) each run is one
 * {@code cuMemcpyAsync}; bytes land exactly in every case; a copy failing inside a batch and a
 * refused batch call fail the transfer and announce nothing; the fake checks batch arguments as the
 * driver documents.
 */
@Timeout(60)
final class CudaIpcBatchCopyTest
{
    private static final int DESCRIPTORS = 5120;
    private static final int LENGTH = 64;
    private static final long STEP = 2L * LENGTH;
    private static final long BYTES = DESCRIPTORS * STEP;
    private static final byte UNTOUCHED = (byte) 0xA5;

    private final List<TransferBackend> backends = new ArrayList<>();
    private Arena arena;

    @BeforeEach
    void setUp()
    {
        assumeTrue(FakeCuda.loaded(), "these tests steer the fake driver");
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown()
    {
        backends.forEach(TransferBackend::close);
        FakeCuda.reset();
        if (arena != null) {
            arena.close();
        }
    }

    /** An initiator and a target with device memory, the source patterned and the destination filled with {@link #UNTOUCHED}. */
    private record Pair(CudaIpcTransferBackend initiator, TransferBackend target, Allocation source, Allocation destination, PreparedList local,
            PreparedList remote)
    {
    }

    private TransferBackend backend(Map<String, String> config)
    {
        String name = "batch-" + UUID.randomUUID();
        TransferBackend backend = new CudaIpcBackendFactory(true).create(config, () -> name);
        backends.add(backend);
        return backend;
    }

    private Pair pair(Map<String, String> config)
    {
        CudaIpcTransferBackend initiator = (CudaIpcTransferBackend) backend(config);
        TransferBackend target = backend(Map.of());
        Allocation source = initiator.allocate(BYTES, MemoryKind.DEVICE, 0);
        Allocation destination = target.allocate(BYTES, MemoryKind.DEVICE, 0);
        MemorySegment host = arena.allocate(BYTES, 64);
        for (long o = 0; o < BYTES; o += 8) {
            host.set(JAVA_LONG, o, pattern(o));
        }
        initiator.copyFromHost(host, source, 0);
        host.fill(UNTOUCHED);
        target.copyFromHost(host, destination, 0);
        Peer peer = initiator.connect(target.localMetadata());
        PreparedList local = initiator.prepareLocal(spaced(source));
        PreparedList remote = initiator.prepareRemote(peer, spaced(destination));
        return new Pair(initiator, target, source, destination, local, remote);
    }

    private static long pattern(long offset)
    {
        return offset * 0x9E3779B97F4A7C15L + 1;
    }

    private static DescriptorList spaced(Allocation allocation)
    {
        DescriptorList.Builder list = DescriptorList.builder(allocation.kind(), allocation.device(), DESCRIPTORS);
        for (int i = 0; i < DESCRIPTORS; i++) {
            list.add(allocation.address() + i * STEP, LENGTH);
        }
        return list.build();
    }

    private static int[] all()
    {
        int[] indices = new int[DESCRIPTORS];
        for (int i = 0; i < DESCRIPTORS; i++) {
            indices[i] = i;
        }
        return indices;
    }

    private static TransferStatus await(TransferBackend backend, long handle)
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        TransferStatus status;
        while ((status = backend.status(handle)) == TransferStatus.IN_PROGRESS && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        return status;
    }

    /** Counter deltas of one transfer of every descriptor, which must end DONE. */
    private record Calls(long batches, long batchedCopies, long singleCopies)
    {
    }

    private static Calls writeAll(Pair pair)
    {
        long batches = FakeCuda.stat("batch_calls");
        long batched = FakeCuda.stat("batch_copies");
        long singles = FakeCuda.stat("copy_calls");
        long handle = pair.initiator.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local, all()).remote(pair.remote, all())
                .count(DESCRIPTORS));
        assertEquals(TransferStatus.DONE, await(pair.initiator, handle), () -> String.valueOf(pair.initiator.failure(handle)));
        pair.initiator.release(handle);
        return new Calls(FakeCuda.stat("batch_calls") - batches, FakeCuda.stat("batch_copies") - batched, FakeCuda.stat("copy_calls") - singles);
    }

    private void assertMoved(Pair pair)
    {
        MemorySegment landed = arena.allocate(BYTES, 64);
        pair.target.copyToHost(pair.destination, 0, landed);
        for (int i = 0; i < DESCRIPTORS; i++) {
            long at = i * STEP;
            for (long o = at; o < at + LENGTH; o += 8) {
                if (landed.get(JAVA_LONG, o) != pattern(o)) {
                    throw new AssertionError("descriptor " + i + ": the long at offset " + o + " did not land");
                }
            }
            for (long o = at + LENGTH; o < at + STEP; o++) {
                if (landed.get(JAVA_BYTE, o) != UNTOUCHED) {
                    throw new AssertionError("the gap after descriptor " + i + " was written at offset " + o);
                }
            }
        }
    }

    @Test
    void spacedDescriptorsGoAsOneBatchCallPerBatchSize()
    {
        Pair defaults = pair(Map.of());
        assertTrue(defaults.initiator.copyPath().contains("cuMemcpyBatchAsync_v2"), defaults.initiator.copyPath());
        assertEquals(new Calls(5, DESCRIPTORS, 0), writeAll(defaults), "5,120 copies in batches of 1,024");
        assertMoved(defaults);
        Pair thousand = pair(Map.of("batch-size", "1000"));
        assertEquals(new Calls(6, DESCRIPTORS, 0), writeAll(thousand), "5,120 copies in batches of 1,000");
        assertMoved(thousand);
    }

    @Test
    void withoutTheBatchCallEachRunIsOneCopy()
    {
        FakeCuda.set("batch_supported", 0);
        Pair older = pair(Map.of());
        assertTrue(older.initiator.copyPath().contains("SYMBOL_NOT_FOUND"), older.initiator.copyPath());
        assertEquals(new Calls(0, 0, DESCRIPTORS), writeAll(older));
        assertMoved(older);
        FakeCuda.set("batch_supported", 1);
        Pair off = pair(Map.of("batch", "off"));
        assertTrue(off.initiator.copyPath().startsWith("off"), off.initiator.copyPath());
        assertEquals(new Calls(0, 0, DESCRIPTORS), writeAll(off));
        assertMoved(off);
    }

    @Test
    void batchOptionsAreChecked()
    {
        KvBridgeAssertionsText.assertMessage(KvBridgeAssertions.assertCode(ErrorCode.CONFIG_INVALID, () -> backend(Map.of("batch", "on"))),
                "batch=on is not auto");
        KvBridgeAssertions.assertCode(ErrorCode.CONFIG_INVALID, () -> backend(Map.of("batch-size", "1")));
        KvBridgeAssertions.assertCode(ErrorCode.CONFIG_INVALID, () -> backend(Map.of("batch-size", "65537")));
    }

    @Test
    void aCuda128DriverGetsTheCallWithFailIndex()
    {
        FakeCuda.set("driver_version", 12080);
        Pair pair = pair(Map.of());
        assertTrue(pair.initiator.copyPath().contains("12.8 ABI"), pair.initiator.copyPath());
        assertEquals(new Calls(5, DESCRIPTORS, 0), writeAll(pair));
        assertMoved(pair);
        FakeCuda.set("fail_batches", 1);
        long handle = pair.initiator.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local, all()).remote(pair.remote, all())
                .count(DESCRIPTORS));
        assertEquals(TransferStatus.FAILED, await(pair.initiator, handle));
        String message = pair.initiator.failure(handle).orElseThrow().getMessage();
        assertTrue(message.contains("cuMemcpyBatchAsync") && message.contains("copies 0..1023 of 5120") && message.contains("the driver named copy 1023"),
                message);
    }

    @Test
    void aRefusedBatchFailsTheTransferSendsNothingAndLeavesTheInstanceUsable() throws InterruptedException
    {
        Pair pair = pair(Map.of());
        FakeCuda.set("fail_batches", 1);
        long handle = pair.initiator.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local, all()).remote(pair.remote, all())
                .count(DESCRIPTORS).notification("refused".getBytes(StandardCharsets.UTF_8)));
        assertEquals(TransferStatus.FAILED, await(pair.initiator, handle));
        String message = pair.initiator.failure(handle).orElseThrow().getMessage();
        assertTrue(message.contains("cuMemcpyBatchAsync") && message.contains("CUDA_ERROR_INVALID_VALUE") && message.contains("copies 0..1023 of 5120")
                && message.contains("nothing is announced"), message);
        pair.initiator.release(handle);
        Thread.sleep(200);
        assertEquals(0, pair.target.drainNotifications((sender, bytes) -> { }), "a failed transfer announces nothing");
        assertTrue(pair.initiator.problem().isEmpty(), () -> "a refused call leaves the context usable: " + pair.initiator.problem());
        assertEquals(new Calls(5, DESCRIPTORS, 0), writeAll(pair));
        assertMoved(pair);
    }

    @Test
    void aCopyFailingInsideABatchFailsTheTransferAndSendsNothing() throws InterruptedException
    {
        Pair pair = pair(Map.of());
        FakeCuda.set("fail_copies", 1);
        long handle = pair.initiator.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local, all()).remote(pair.remote, all())
                .count(DESCRIPTORS).notification("failed".getBytes(StandardCharsets.UTF_8)));
        assertEquals(TransferStatus.FAILED, await(pair.initiator, handle));
        assertTrue(pair.initiator.failure(handle).orElseThrow().getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
                () -> pair.initiator.failure(handle).toString());
        Thread.sleep(200);
        assertEquals(0, pair.target.drainNotifications((sender, bytes) -> { }), "a failed transfer announces nothing");
    }

    @Test
    void theProbeNamesTheEntryPointAndItsVersion()
    {
        assertTrue(batchDetail().startsWith("cuMemcpyBatchAsync_v2 (CUDA 13.0 ABI)"), batchDetail());
        FakeCuda.set("driver_version", 12090);
        assertTrue(batchDetail().startsWith("cuMemcpyBatchAsync (CUDA 12.8 ABI, with failIdx) from cuGetProcAddress for 12090"), batchDetail());
        FakeCuda.set("driver_version", 12060);
        assertTrue(batchDetail().startsWith("none: the driver supports CUDA 12.6"), batchDetail());
        FakeCuda.set("driver_version", 13000);
        FakeCuda.set("batch_supported", 0);
        assertTrue(batchDetail().contains("SYMBOL_NOT_FOUND") && batchDetail().contains("one cuMemcpyAsync per coalesced run"), batchDetail());
    }

    private static String batchDetail()
    {
        Availability availability = new CudaIpcBackendFactory(true).probe();
        assertTrue(availability.available(), () -> availability.reasons().toString());
        return availability.details().get("batchCopy");
    }

    @Test
    void theFakeChecksBatchArgumentsAsTheDriverDocuments()
    {
        assertEquals(0, CudaDriver.cuInit(0));
        long[] out = new long[1];
        assertEquals(0, CudaDriver.cuDevicePrimaryCtxRetain(out, 0));
        assertEquals(0, CudaDriver.cuCtxSetCurrent(out[0]));
        assertEquals(0, CudaDriver.cuStreamCreate(out));
        long stream = out[0];
        assertEquals(0, CudaDriver.cuEventCreate(out));
        long event = out[0];
        try (Arena calls = Arena.ofConfined()) {
            CudaMemcpyBatch.EntryPoint v2 = CudaMemcpyBatch.find(13000);
            CudaMemcpyBatch.EntryPoint v1 = CudaMemcpyBatch.find(12080);
            assertTrue(v2.present() && !v2.takesFailIndex() && v1.present() && v1.takesFailIndex(), v2 + " " + v1);
            MemorySegment from = calls.allocate(256, 64);
            MemorySegment to = calls.allocate(256, 64);
            from.fill((byte) 7);
            MemorySegment dsts = calls.allocateFrom(JAVA_LONG, to.address(), to.address() + 128);
            MemorySegment srcs = calls.allocateFrom(JAVA_LONG, from.address(), from.address() + 128);
            MemorySegment sizes = calls.allocateFrom(JAVA_LONG, 64, 64);
            MemorySegment attributes = calls.allocate(CudaLayouts.MEMCPY_ATTRIBUTES, 2);
            attributes.set(JAVA_INT, 0, CudaLayouts.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
            attributes.set(JAVA_INT, CudaLayouts.MEMCPY_ATTRIBUTES.byteSize(), CudaLayouts.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
            MemorySegment indices = calls.allocateFrom(JAVA_LONG, 0, 1);
            MemorySegment failIndex = calls.allocate(JAVA_LONG);
            MemorySegment none = MemorySegment.NULL;
            long before = FakeCuda.stat("batch_calls");
            int invalid = CudaLayouts.CUDA_ERROR_INVALID_VALUE;
            assertEquals(invalid, CudaMemcpyBatch.call(v2, dsts, srcs, sizes, 0, attributes, indices, 1, none, stream), "count 0");
            assertEquals(invalid, CudaMemcpyBatch.call(v2, none, srcs, sizes, 2, attributes, indices, 1, none, stream), "dsts NULL");
            assertEquals(invalid, CudaMemcpyBatch.call(v2, dsts, srcs, none, 2, attributes, indices, 1, none, stream), "sizes NULL");
            assertEquals(invalid, CudaMemcpyBatch.call(v2, dsts, srcs, sizes, 2, none, indices, 1, none, stream), "attrs NULL");
            assertEquals(invalid, CudaMemcpyBatch.call(v2, dsts, srcs, sizes, 2, attributes, indices, 0, none, stream), "numAttrs 0");
            assertEquals(invalid, CudaMemcpyBatch.call(v2, dsts, srcs, sizes, 1, attributes, indices, 2, none, stream), "numAttrs > count");
            assertEquals(invalid, CudaMemcpyBatch.call(v2, dsts, srcs, sizes, 2, attributes, indices.asSlice(8), 1, none, stream), "attrsIdxs[0] = 1");
            assertEquals(invalid, CudaMemcpyBatch.call(v2, dsts, srcs, sizes, 2, attributes, indices, 1, none, 0), "the legacy NULL stream");
            attributes.set(JAVA_INT, 0, 0);
            assertEquals(invalid, CudaMemcpyBatch.call(v2, dsts, srcs, sizes, 2, attributes, indices, 1, none, stream), "srcAccessOrder INVALID");
            assertEquals(invalid, CudaMemcpyBatch.call(v1, dsts, srcs, sizes, 2, attributes, indices, 1, failIndex, stream), "the 12.8 ABI checks alike");
            assertEquals(-1L, failIndex.get(JAVA_LONG, 0), "failIdx is SIZE_MAX for an error of no copy");
            attributes.set(JAVA_INT, 0, CudaLayouts.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
            assertEquals(before, FakeCuda.stat("batch_calls"), "a refused call queues nothing");
            assertEquals(0, CudaMemcpyBatch.call(v2, dsts, srcs, sizes, 2, attributes, indices, 2, none, stream), "two copies, an attribute each");
            assertEquals(0, CudaDriver.cuEventRecord(event, stream));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int rc;
            while ((rc = CudaDriver.cuEventQuery(event)) == CudaLayouts.CUDA_ERROR_NOT_READY && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(0, rc);
            assertEquals(before + 1, FakeCuda.stat("batch_calls"));
            for (long o = 0; o < 256; o++) {
                assertEquals(o % 128 < 64 ? (byte) 7 : 0, to.get(JAVA_BYTE, o), "byte " + o);
            }
        }
        finally {
            CudaDriver.cuEventDestroy(event);
            CudaDriver.cuStreamDestroy(stream);
            CudaDriver.cuCtxSetCurrent(0);
            CudaDriver.cuDevicePrimaryCtxRelease(0);
        }
    }
}
