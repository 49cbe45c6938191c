package io.kvbridge.backend.nixl;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The two-process test through the fake, whose agents in different processes talk over a Unix socket. */
@Timeout(120)
final class NixlFakeTwoProcessTest extends AbstractNixlTwoProcessTest
{
    @RegisterExtension
    final FakeLeakCheck leakCheck = new FakeLeakCheck(FakeNixl.HEAD);

    private long framesBefore;

    @Override
    String library()
    {
        return FakeNixl.HEAD.library().toString();
    }

    @Override
    boolean allowFake()
    {
        return true;
    }

    @BeforeEach
    void countFrames()
    {
        FakeNixl.HEAD.option("completion", "async");
        framesBefore = FakeNixl.HEAD.stats().framesSent();
    }

    @Override
    void afterTransfers()
    {
        assertTrue(FakeNixl.HEAD.stats().framesSent() > framesBefore, "the bytes crossed the socket, not an in-process copy");
    }

    @Test
    void droppedPeerFailsTheTransferWithinTheDeadline() throws Exception
    {
        TransferBackend parent = newBackend();
        MemorySegment memory = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        parent.register(Allocation.host(memory));
        // the child stops serving at its first data frame and is then killed: its peer sees the socket close
        Child child = startChild("child-" + UUID.randomUUID(), Map.of("NIXL_FAKE_FAULTS", "service_stall:1:0"));
        String[] ready = child.expect("READY");
        Peer peer = parent.connect(Base64.getDecoder().decode(ready[1]));
        PreparedList local = parent.prepareLocal(blocks(memory.address()));
        PreparedList remote = parent.prepareRemote(peer, blocks(Long.parseLong(ready[2])));
        long handle = parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {1}).remote(remote, new int[] {1}).count(1)
                .notification("lost".getBytes(StandardCharsets.UTF_8)));
        Thread.sleep(200);
        assertEquals(TransferStatus.IN_PROGRESS, parent.status(handle), "the stalled peer acknowledged nothing");
        child.process.destroyForcibly();
        assertTrue(child.process.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS));
        long killed = System.nanoTime();
        assertEquals(TransferStatus.FAILED, awaitTerminal(parent, handle));
        assertTrue(System.nanoTime() - killed < TimeUnit.SECONDS.toNanos(5), "the failure shows within 5 s of the peer's death");
        KvBridgeException failure = parent.failure(handle).orElseThrow();
        assertEquals(ErrorCode.TRANSFER_FAILED, failure.code());
        assertTrue(failure.getMessage().contains("nixl_capi_get_xfer_status returned -2"), failure.getMessage());
        parent.release(handle);
        assertCode(ErrorCode.PEER_UNKNOWN, () -> parent.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {2})
                .remote(remote, new int[] {2}).count(1)));
        parent.disconnect(peer);
        assertEquals(0, parent.resources().peers());
    }
}
