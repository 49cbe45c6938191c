package io.kvbridge.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a {@link Capability#GRANTED_ACCESS} transport refuses, as tests: a peer reaches only the
 * blocks a live grant under the key it presents covers, for the operation granted. A victim
 * instance registers {@link #BLOCKS} blocks and grants a few of them; a peer instance tries every
 * other way in. Each refused transfer must fail with {@code NOT_GRANTED} (at post or when it ends),
 * leave every victim byte outside the grant as it was, and deliver no victim byte it was not granted
 * into the peer's memory; the victim counts the refusals, names the peer in its problem, and keeps
 * serving. A transport runs it with one small subclass returning its factory; transports without
 * the capability skip every test.
 */
@Timeout(60)
public abstract class AbstractGrantedAccessConformanceTest
{
    /** Blocks the victim registers. */
    protected static final int BLOCKS = 16;
    /** Bytes per block. */
    protected static final int BLOCK_BYTES = 8 * 1024;
    private static final byte[] WRITE_KEY = "write-grant".getBytes(StandardCharsets.UTF_8);
    private static final byte[] READ_KEY = "read-grant".getBytes(StandardCharsets.UTF_8);
    // the victim grants blocks 2 and 3 to be written and block 6 to be read
    private static final int[] WRITABLE = {2, 3};
    private static final int[] READABLE = {6};

    private Arena arena;
    private TransferBackend victim;
    private TransferBackend peer;
    private MemorySegment victimMemory;
    private MemorySegment peerMemory;
    private MemorySegment victimBefore;
    private MemorySegment peerBefore;
    private PreparedList local;
    private PreparedList remote;
    private long writeGrant;
    private long readGrant;

    /** For a transport's one-class subclass. */
    protected AbstractGrantedAccessConformanceTest()
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
     * Where the victim reports the accesses it refused, naming the peer. The default is its
     * {@link TransferBackend#problem()}; a transport whose port anyone may reach keeps what peers
     * did out of its health and reports it elsewhere, which it returns here.
     *
     * @param victim the instance that refused.
     * @return the report, empty when nothing was refused.
     */
    protected Optional<String> refusalReport(TransferBackend victim)
    {
        return victim.problem();
    }

    /**
     * Returns how long a transfer may take before a test fails.
     *
     * @return the deadline; 20 s by default.
     */
    protected Duration deadline()
    {
        return Duration.ofSeconds(20);
    }

    @BeforeEach
    void setUpVictimAndPeer()
    {
        TransferBackendFactory factory = newFactory();
        Availability availability = factory.probe();
        assumeTrue(availability.available(), () -> "transport unavailable: " + availability.reasons());
        assumeTrue(availability.capabilities().contains(Capability.GRANTED_ACCESS),
                () -> factory.name() + " does not declare GRANTED_ACCESS: its peers may reach whatever it registered");
        arena = Arena.ofShared();
        victim = factory.create(config(), () -> "victim-" + UUID.randomUUID());
        peer = factory.create(config(), () -> "peer-" + UUID.randomUUID());
        victimMemory = filled(0x5A);
        peerMemory = filled(0x3C);
        victim.register(Allocation.host(victimMemory));
        peer.register(Allocation.host(peerMemory));
        PreparedList victimBlocks = victim.prepareLocal(AbstractTransferBackendConformanceTest.blocksOf(victimMemory, BLOCKS, BLOCK_BYTES));
        writeGrant = victim.grant(WRITE_KEY, TransferOp.WRITE, victimBlocks, WRITABLE, WRITABLE.length);
        readGrant = victim.grant(READ_KEY, TransferOp.READ, victimBlocks, READABLE, READABLE.length);
        Peer victimPeer = peer.connect(victim.localMetadata());
        victim.connect(peer.localMetadata());
        local = peer.prepareLocal(AbstractTransferBackendConformanceTest.blocksOf(peerMemory, BLOCKS, BLOCK_BYTES));
        remote = peer.prepareRemote(victimPeer, AbstractTransferBackendConformanceTest.blocksOf(victimMemory, BLOCKS, BLOCK_BYTES));
        victimBefore = copy(victimMemory);
        peerBefore = copy(peerMemory);
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

    private MemorySegment filled(int value)
    {
        MemorySegment segment = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        for (long i = 0; i < segment.byteSize(); i++) {
            segment.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (value + i * 7 + i / BLOCK_BYTES));
        }
        return segment;
    }

    private MemorySegment copy(MemorySegment segment)
    {
        return arena.allocate(segment.byteSize(), 8).copyFrom(segment);
    }

    @Test
    void grantedBlocksMoveForTheGrantedOperation()
    {
        assertEquals(TransferStatus.DONE, move(TransferOp.WRITE, new int[] {0, 1}, WRITABLE, WRITE_KEY));
        assertEquals(TransferStatus.DONE, move(TransferOp.READ, new int[] {9}, READABLE, READ_KEY));
        assertBlocksEqual(peerMemory, 0, victimMemory, 2, 2, "written blocks");
        assertBlocksEqual(peerMemory, 9, victimBefore, 6, 1, "read block");
        assertUnchangedBut(victimMemory, victimBefore, WRITABLE, "victim");
        assertTrue(refusalReport(victim).isEmpty(), () -> "granted accesses were reported: " + refusalReport(victim));
    }

    @Test
    void noKeyReachesNothing()
    {
        assertRefused(TransferOp.WRITE, new int[] {0}, new int[] {2}, null);
        assertRefused(TransferOp.READ, new int[] {0}, new int[] {6}, null);
        assertNothingMoved();
    }

    @Test
    void anotherKeyReachesNothing()
    {
        assertRefused(TransferOp.WRITE, new int[] {0}, new int[] {2}, "write-grant-2".getBytes(StandardCharsets.UTF_8));
        assertRefused(TransferOp.READ, new int[] {0}, new int[] {6}, "read-gran".getBytes(StandardCharsets.UTF_8));
        assertNothingMoved();
    }

    @Test
    void registeredButUngrantedBlocksAreRefused()
    {
        assertRefused(TransferOp.WRITE, new int[] {0}, new int[] {4}, WRITE_KEY);
        assertRefused(TransferOp.READ, new int[] {0}, new int[] {4}, READ_KEY);
        assertRefused(TransferOp.READ, new int[] {0}, new int[] {7}, READ_KEY);
        // a run that starts in the grant and ends outside it
        assertRefused(TransferOp.WRITE, new int[] {0, 1}, new int[] {3, 4}, WRITE_KEY);
        assertUnchangedBut(victimMemory, victimBefore, WRITABLE, "victim");
        assertUnchangedBut(peerMemory, peerBefore, new int[0], "peer");
    }

    @Test
    void aGrantAllowsOnlyItsOperation()
    {
        assertRefused(TransferOp.WRITE, new int[] {0}, READABLE, READ_KEY);
        assertRefused(TransferOp.READ, new int[] {0}, new int[] {2}, WRITE_KEY);
        assertNothingMoved();
    }

    @Test
    void aRevokedGrantReachesNothing()
    {
        victim.revoke(writeGrant);
        victim.revoke(readGrant);
        victim.revoke(readGrant);
        assertRefused(TransferOp.WRITE, new int[] {0}, new int[] {2}, WRITE_KEY);
        assertRefused(TransferOp.READ, new int[] {0}, READABLE, READ_KEY);
        assertNothingMoved();
    }

    @Test
    void refusalsAreReportedWithThePeerAndTheVictimKeepsServing()
    {
        assertRefused(TransferOp.WRITE, new int[] {0}, new int[] {5}, WRITE_KEY);
        String problem = refusalReport(victim).orElseThrow(() -> new AssertionError("the victim did not report the refused access"));
        assertTrue(problem.contains(peer.agentName()), () -> "problem does not name the peer '" + peer.agentName() + "': " + problem);
        assertEquals(TransferStatus.DONE, move(TransferOp.WRITE, new int[] {1}, new int[] {3}, WRITE_KEY));
        assertBlocksEqual(peerMemory, 1, victimMemory, 3, 1, "written after the refusal");
    }

    private void assertNothingMoved()
    {
        assertEquals(-1, victimMemory.mismatch(victimBefore), "a refused access changed the victim's memory");
        assertEquals(-1, peerMemory.mismatch(peerBefore), "a refused access delivered victim bytes to the peer");
    }

    private void assertRefused(TransferOp op, int[] localIndices, int[] remoteIndices, byte[] key)
    {
        long handle;
        try {
            handle = peer.post(new TransferRequest().start(op).local(local, localIndices).remote(remote, remoteIndices).count(localIndices.length)
                    .grantKey(key));
        }
        catch (KvBridgeException e) {
            assertEquals(ErrorCode.NOT_GRANTED, e.code(), e::getMessage);
            return;
        }
        TransferStatus status = await(handle);
        KvBridgeException failure = peer.failure(handle).orElse(null);
        peer.release(handle);
        assertEquals(TransferStatus.FAILED, status, () -> op + " of victim blocks " + java.util.Arrays.toString(remoteIndices) + " was not refused");
        assertEquals(ErrorCode.NOT_GRANTED, failure.code(), failure::getMessage);
    }

    private TransferStatus move(TransferOp op, int[] localIndices, int[] remoteIndices, byte[] key)
    {
        long handle = peer.post(new TransferRequest().start(op).local(local, localIndices).remote(remote, remoteIndices).count(localIndices.length)
                .grantKey(key));
        TransferStatus status = await(handle);
        String failure = String.valueOf(peer.failure(handle));
        peer.release(handle);
        assertEquals(TransferStatus.DONE, status, failure);
        return status;
    }

    private TransferStatus await(long handle)
    {
        long deadline = System.nanoTime() + deadline().toNanos();
        while (System.nanoTime() < deadline) {
            TransferStatus status = peer.status(handle);
            if (status.terminal()) {
                return status;
            }
            Thread.onSpinWait();
        }
        return fail("transfer still in progress after " + deadline());
    }

    private static void assertBlocksEqual(MemorySegment a, int aBlock, MemorySegment b, int bBlock, int blocks, String what)
    {
        long bytes = (long) blocks * BLOCK_BYTES;
        long wrong = a.asSlice((long) aBlock * BLOCK_BYTES, bytes).mismatch(b.asSlice((long) bBlock * BLOCK_BYTES, bytes));
        assertEquals(-1, wrong, () -> what + ": byte " + wrong + " differs");
    }

    private static void assertUnchangedBut(MemorySegment now, MemorySegment before, int[] except, String what)
    {
        for (int block = 0; block < BLOCKS; block++) {
            boolean excepted = false;
            for (int e : except) {
                excepted |= e == block;
            }
            if (!excepted) {
                assertBlocksEqual(now, block, before, block, 1, what + " block " + block + ", outside the grant");
            }
        }
    }
}
