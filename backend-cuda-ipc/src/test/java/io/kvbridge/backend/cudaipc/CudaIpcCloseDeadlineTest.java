package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BLOCKS;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.BYTES;
import static io.kvbridge.backend.cudaipc.CudaIpcPeerProcess.blocks;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code close()} waits for the copy loop no longer than {@code close-timeout-ms}: on a hung device
 * the driver's asynchronous calls block once its work queue is full, and the loop inside one of them
 * never takes the request to stop. The fake driver's {@code queue_limit} and {@code copy_delay_us}
 * make a copy call block the same way, for a while.
 */
@Timeout(60)
final class CudaIpcCloseDeadlineTest
{
    private static final long STALL_MICROS = 2_000_000;

    @BeforeEach
    void steerable()
    {
        assumeTrue(FakeCuda.loaded(), "this test steers the fake driver");
    }

    @AfterEach
    void reset()
    {
        FakeCuda.reset();
    }

    private static TransferBackend open(String closeTimeoutMillis)
    {
        String name = "closing-" + UUID.randomUUID();
        return new CudaIpcBackendFactory(true).create(Map.of("close-timeout-ms", closeTimeoutMillis, "batch", "off", "streams", "1"), () -> name);
    }

    @Test
    void aCloseWhoseCopyLoopIsStuckInTheDriverEndsByItsDeadlineNamingWhereItWaits() throws InterruptedException
    {
        long allocationsBefore = FakeCuda.stat("device_allocations");
        TransferBackend initiator = open("300");
        TransferBackend target = open("30000");
        try {
            Allocation source = initiator.allocate(BYTES, MemoryKind.DEVICE, 0);
            Allocation destination = target.allocate(BYTES, MemoryKind.DEVICE, 0);
            Peer peer = initiator.connect(target.localMetadata());
            PreparedList local = initiator.prepareLocal(blocks(MemoryKind.DEVICE, source.address(), 0, BLOCKS));
            PreparedList remote = initiator.prepareRemote(peer, blocks(MemoryKind.DEVICE, destination.address(), 0, BLOCKS));
            // one stream holding one queued operation, each copy taking 2 s: four separate copies, so the third's issue
            // blocks the loop in the driver until the first has ended
            FakeCuda.set("queue_limit", 1);
            FakeCuda.set("copy_delay_us", STALL_MICROS);
            int[] spaced = {0, 2, 4, 6};
            initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, spaced).remote(remote, spaced).count(spaced.length));
            Thread.sleep(200);
            long started = System.nanoTime();
            KvBridgeException late = assertThrows(KvBridgeException.class, initiator::close);
            long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, late.code(), late::getMessage);
            assertTrue(waitedMillis >= 300 && waitedMillis < 1_900, "close waited " + waitedMillis + " ms with close-timeout-ms=300");
            String message = late.getMessage();
            System.out.println("close after " + waitedMillis + " ms: " + message);
            assertTrue(message.contains("300 ms") && message.contains("asking the copy loop to stop") && message.contains(initiator.agentName())
                    && message.contains("io.kvbridge.backend.cudaipc"), message);
            FakeCuda.set("copy_delay_us", 0);
            FakeCuda.set("queue_limit", 0);
            // once the driver returns, the loop takes the stop, drains and releases what it held
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (FakeCuda.stat("device_allocations") > allocationsBefore + 1 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(allocationsBefore + 1, FakeCuda.stat("device_allocations"), "only the target's allocation is left");
        }
        finally {
            target.close();
        }
    }

    @Test
    void theCloseTimeoutIsChecked()
    {
        KvBridgeException refused = assertThrows(KvBridgeException.class, () -> open("99"));
        assertEquals(ErrorCode.CONFIG_INVALID, refused.code());
        assertTrue(refused.getMessage().contains("close-timeout-ms"), refused.getMessage());
    }
}
