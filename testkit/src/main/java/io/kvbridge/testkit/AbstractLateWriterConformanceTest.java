package io.kvbridge.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.spi.transfer.WriteStop;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * No write after free, as tests of what a transport declares in
 * {@link TransferBackend#writeStopOnRevoke()} and {@link TransferBackend#writeStopOnRelease()}. A
 * victim gives up on a transfer into its blocks once its first bytes arrived and while the rest
 * still moves (a peer's WRITE under its grant, or its own READ), hands the blocks back the way an engine would (at once when the call
 * proves the bytes stopped, otherwise only once the transfer ended: the quarantine), writes a
 * sentinel into them, and lets the late writer finish: the sentinel must survive. A transport runs
 * it with one small subclass returning its factory; a transport that claims
 * {@link WriteStop#ON_RETURN} without honouring it overwrites the sentinel.
 */
@Timeout(120)
public abstract class AbstractLateWriterConformanceTest
{
    /** Blocks each side registers. */
    protected static final int BLOCKS = 16;
    /** Bytes per block: large enough that the transfer is still moving when the victim gives up. */
    protected static final int BLOCK_BYTES = 2 << 20;
    private static final byte[] KEY = "late-writer-grant".getBytes(StandardCharsets.UTF_8);
    private static final byte[] NOTIFICATION = "late-writer-done".getBytes(StandardCharsets.UTF_8);
    private static final byte SENTINEL = (byte) 0xA5;
    // the sentinel goes into the first bytes of every stride: written in microseconds, so a late byte cannot hide behind a slow fill
    private static final int SENTINEL_STRIDE = 64 * 1024;
    private static final int SENTINEL_BYTES = 64;

    private Arena arena;
    private TransferBackend victim;
    private TransferBackend peer;
    private MemorySegment victimMemory;
    private MemorySegment peerMemory;
    private Peer victimAtPeer;
    private Peer peerAtVictim;

    /** For a transport's one-class subclass. */
    protected AbstractLateWriterConformanceTest()
    {
    }

    /**
     * Returns the factory of the transport under test.
     *
     * @return a new factory.
     */
    protected abstract TransferBackendFactory newFactory();

    /**
     * Returns the options every instance is created with.
     *
     * @return transport options; empty by default.
     */
    protected Map<String, String> config()
    {
        return Map.of();
    }

    /**
     * Returns how long a transfer may take before a test fails.
     *
     * @return the deadline; 30 s by default.
     */
    protected Duration deadline()
    {
        return Duration.ofSeconds(30);
    }

    @BeforeEach
    void setUpVictimAndPeer()
    {
        TransferBackendFactory factory = newFactory();
        Availability availability = factory.probe();
        assumeTrue(availability.available(), () -> "transport unavailable: " + availability.reasons());
        arena = Arena.ofShared();
        victim = factory.create(config(), () -> "victim-" + UUID.randomUUID());
        peer = factory.create(config(), () -> "peer-" + UUID.randomUUID());
        victimMemory = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        peerMemory = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        for (long i = 0; i < peerMemory.byteSize(); i += 8) {
            peerMemory.set(ValueLayout.JAVA_LONG_UNALIGNED, i, 0x3C3C3C3C3C3C3C3CL ^ i);
        }
        // the engine's reuse runs warm, as in a serving engine, not at the interpreter's pace behind the transfer
        for (int round = 0; round < 20; round++) {
            reuse(0, BLOCKS);
        }
        victimMemory.fill((byte) 0);
        victim.register(Allocation.host(victimMemory));
        peer.register(Allocation.host(peerMemory));
        victimAtPeer = peer.connect(victim.localMetadata());
        peerAtVictim = victim.connect(peer.localMetadata());
    }

    @AfterEach
    void tearDown()
    {
        if (arena == null) {
            return;
        }
        peer.close();
        victim.close();
        arena.close();
    }

    /**
     * Push: a peer's WRITE is still moving when the victim revokes its grant. On
     * {@link WriteStop#ON_RETURN} the victim reuses the blocks as soon as the revoke returned; otherwise
     * (or when the revoke throws {@code DEADLINE_EXCEEDED}) only once the write ended.
     */
    @Test
    void aWriteStillMovingWhenItsGrantIsRevokedNeverLandsOnReusedBlocks()
    {
        PreparedList victimBlocks = victim.prepareLocal(TransferBackendConformanceFixture.blocksOf(victimMemory, BLOCKS, BLOCK_BYTES));
        long grant = victim.grant(KEY, TransferOp.WRITE, victimBlocks, all(), BLOCKS);
        victim.releasePrepared(victimBlocks);
        PreparedList local = peer.prepareLocal(TransferBackendConformanceFixture.blocksOf(peerMemory, BLOCKS, BLOCK_BYTES));
        PreparedList remote = peer.prepareRemote(victimAtPeer, TransferBackendConformanceFixture.blocksOf(victimMemory, BLOCKS, BLOCK_BYTES));
        long handle = peer.post(new TransferRequest().start(TransferOp.WRITE).local(local, all()).remote(remote, all()).count(BLOCKS)
                .notification(NOTIFICATION).grantKey(KEY));
        awaitMoving(peer, handle);

        boolean proven = grant != TransferBackend.NO_GRANT && victim.writeStopOnRevoke() == WriteStop.ON_RETURN;
        try {
            victim.revoke(grant);
        }
        catch (KvBridgeException e) {
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, e.code(), e::getMessage);
            proven = false;
        }
        if (!proven) {
            // quarantined: the proof is the write ending (its notification reaches the victim after its data)
            await(peer, handle);
        }
        reuse(0, BLOCKS);
        await(peer, handle);
        peer.release(handle);
        victim.drainNotifications((sender, message) -> { });
        assertSentinelSurvives("a WRITE that was still moving when its grant was revoked (writeStopOnRevoke=" + victim.writeStopOnRevoke() + ")");
    }

    /**
     * Pull: the victim's own READ is still moving when the victim releases it. On
     * {@link WriteStop#ON_RETURN} the victim reuses its blocks as soon as the release returned;
     * otherwise it keeps the handle until the transfer ended and releases it then.
     */
    @Test
    void aReadStillMovingWhenItIsReleasedNeverLandsOnReusedBlocks()
    {
        PreparedList peerBlocks = peer.prepareLocal(TransferBackendConformanceFixture.blocksOf(peerMemory, BLOCKS, BLOCK_BYTES));
        long grant = peer.grant(KEY, TransferOp.READ, peerBlocks, all(), BLOCKS);
        peer.releasePrepared(peerBlocks);
        // the last block is read apart, after the first ones were given up, to see that the connection still carries data
        PreparedList local = victim.prepareLocal(TransferBackendConformanceFixture.blocksOf(victimMemory, BLOCKS, BLOCK_BYTES));
        PreparedList remote = victim.prepareRemote(peerAtVictim, TransferBackendConformanceFixture.blocksOf(peerMemory, BLOCKS, BLOCK_BYTES));
        long handle = victim.post(new TransferRequest().start(TransferOp.READ).local(local, all()).remote(remote, all()).count(BLOCKS - 1)
                .grantKey(KEY));
        awaitMoving(victim, handle);
        if (victim.writeStopOnRelease() == WriteStop.ON_RETURN) {
            victim.release(handle);
        }
        else {
            await(victim, handle);
            victim.release(handle);
        }
        reuse(0, BLOCKS - 1);
        // a later READ on the same peer that completes: whatever the released one still had on its way has arrived by now, or never will
        long later = victim.post(new TransferRequest().start(TransferOp.READ).local(local, new int[] {BLOCKS - 1})
                .remote(remote, new int[] {BLOCKS - 1}).count(1).grantKey(KEY));
        assertEquals(TransferStatus.DONE, await(victim, later), () -> "a READ after the released one failed: " + victim.failure(later));
        victim.release(later);
        peer.revoke(grant);
        reuse(BLOCKS - 1, BLOCKS);
        assertSentinelSurvives("a READ that was still moving when it was released (writeStopOnRelease=" + victim.writeStopOnRelease() + ")");
    }

    private static int[] all()
    {
        int[] indices = new int[BLOCKS];
        for (int i = 0; i < BLOCKS; i++) {
            indices[i] = i;
        }
        return indices;
    }

    private TransferStatus await(TransferBackend backend, long handle)
    {
        long deadline = System.nanoTime() + deadline().toNanos();
        while (System.nanoTime() - deadline < 0) {
            TransferStatus status = backend.status(handle);
            if (status.terminal()) {
                return status;
            }
            Thread.onSpinWait();
        }
        return fail("transfer still in progress after " + deadline());
    }

    /**
     * The engine reuses blocks {@code [from, to)}: it writes the sentinel into them, last block
     * first, so that it runs ahead of a transfer still moving forward and a late byte cannot hide
     * behind it.
     */
    private void reuse(int from, int to)
    {
        for (long i = (long) to * BLOCK_BYTES - SENTINEL_STRIDE; i >= (long) from * BLOCK_BYTES; i -= SENTINEL_STRIDE) {
            victimMemory.asSlice(i, SENTINEL_BYTES).fill(SENTINEL);
        }
    }

    /** Waits until the transfer's first bytes reached the victim (it is moving now) or it ended. */
    private void awaitMoving(TransferBackend initiator, long handle)
    {
        long deadline = System.nanoTime() + deadline().toNanos();
        while (victimMemory.get(ValueLayout.JAVA_BYTE, 0) == 0) {
            if (initiator.status(handle).terminal()) {
                assertEquals(TransferStatus.DONE, initiator.status(handle), () -> "the transfer failed before moving: " + initiator.failure(handle));
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                fail("no byte of the transfer arrived within " + deadline());
            }
            Thread.onSpinWait();
        }
    }

    private void assertSentinelSurvives(String what)
    {
        for (long i = 0; i < victimMemory.byteSize(); i += SENTINEL_STRIDE) {
            for (long j = i; j < i + SENTINEL_BYTES; j++) {
                if (victimMemory.get(ValueLayout.JAVA_BYTE, j) != SENTINEL) {
                    fail(what + " wrote byte " + j + " (block " + j / BLOCK_BYTES + ") after the victim reused the block");
                }
            }
        }
    }
}
