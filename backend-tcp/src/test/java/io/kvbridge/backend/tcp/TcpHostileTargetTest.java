package io.kvbridge.backend.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.backend.tcp.RawTcpTarget.Request;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A target that lies in its answers ({@link RawTcpTarget}) reaches nothing of a real initiator
 * beyond what a transfer asked for. An answer that breaks the protocol closes the connection and
 * fails what it carried, no byte of a refused DATA frame lands in the initiator's sentinel-filled
 * memory, the initiator reports the violation and keeps working (its owner thread lives, a
 * legitimate target is read from after). A refusal or a silent target fails only its transfer.
 */
@Timeout(30)
final class TcpHostileTargetTest
{
    private static final int BLOCK = 4096;
    private static final int BLOCKS = 8;
    private static final byte SENTINEL = (byte) 0x5A;
    private static final long REMOTE = 0x1000_0000L;
    // a READ of three runs into local blocks apart from each other, so nothing coalesces
    private static final int[] RUNS_LOCAL = {1, 3, 5};
    private static final int[] RUNS_REMOTE = {0, 1, 2};
    private static final byte[] KEY = "hostile-target-key".getBytes(StandardCharsets.UTF_8);

    private final List<AutoCloseable> opened = new ArrayList<>();
    private Arena arena;
    private TcpTransferBackend initiator;
    private MemorySegment memory;
    private MemorySegment expected;
    private MemorySegment spare;
    private PreparedList local;
    private PreparedList spareList;
    private int violations;

    @BeforeEach
    void openInitiator()
    {
        arena = Arena.ofShared();
        initiator(5000);
    }

    private void initiator(int transferTimeoutMillis)
    {
        String agent = "initiator-" + UUID.randomUUID();
        initiator = (TcpTransferBackend) new TcpBackendFactory().create(Map.of("host", "127.0.0.1", "transfer-timeout-ms",
                String.valueOf(transferTimeoutMillis)), () -> agent);
        opened.add(initiator);
        memory = arena.allocate((long) BLOCKS * BLOCK, 4096).fill(SENTINEL);
        expected = arena.allocate(memory.byteSize(), 8).fill(SENTINEL);
        spare = arena.allocate(2L * BLOCK, 4096);
        initiator.register(Allocation.host(memory));
        initiator.register(Allocation.host(spare));
        local = initiator.prepareLocal(blocks(memory.address(), BLOCK, BLOCKS));
        spareList = initiator.prepareLocal(blocks(spare.address(), BLOCK, 2));
    }

    @AfterEach
    void closeAll()
    {
        for (int i = opened.size() - 1; i >= 0; i--) {
            try {
                opened.get(i).close();
            }
            catch (Exception e) {
                // closing what a test left open: nothing to check
            }
        }
        arena.close();
    }

    @Test
    void dataForARunNotAskedForNextIsAViolation() throws IOException
    {
        assertReadCutOff("wrong-run", (t, h) -> t.data(h, 1, BLOCK, 0, fill(1)).send(), waitsFor(1, BLOCK, false, 0, 3), null);
        assertReadCutOff("skipped-run", (t, h) -> good(t, h, 1).data(h, 2, BLOCK, TcpWire.DATA_LAST, fill(2)).send(), waitsFor(2, BLOCK, true, 1, 3), null);
        assertReadCutOff("repeated-run", (t, h) -> good(t, h, 1).data(h, 0, BLOCK, 0, (byte) 0x6F).send(), waitsFor(0, BLOCK, false, 1, 3), null);
        // DATA answering a WRITE must not land in the memory the WRITE reads from
        RawTcpTarget target = target("data-for-write", 1 << 20);
        long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {1}).remote(target.remote, new int[] {0})
                .count(1).grantKey(KEY));
        assertEquals(handle, target.request().handle(), "the WRITE's handle");
        target.data(handle, 0, BLOCK, TcpWire.DATA_LAST, (byte) 0x6F).send();
        assertCutOff(target, waitsFor(0, BLOCK, true, 0, 1), null, handle);
    }

    @Test
    void dataOfTheWrongLengthIsAViolation() throws IOException
    {
        // twice the run: taken, it would overrun into the block after it
        for (long length : new long[] {2L * BLOCK, BLOCK / 2}) {
            assertReadCutOff("length-" + length, (t, h) -> t.data(h, 0, length, 0, fill(0)).send(), waitsFor(0, length, false, 0, 3), null);
        }
        for (long length : new long[] {0, -1}) {
            assertReadCutOff("length-" + length, (t, h) -> t.data(h, 0, length, 0, fill(0)).send(), "DATA of " + length + " bytes with flag 0", null);
        }
        assertReadCutOff("last-run-long", (t, h) -> good(t, h, 2).data(h, 2, BLOCK + 1, TcpWire.DATA_LAST, fill(2)).send(),
                waitsFor(2, BLOCK + 1, true, 2, 3), null);
    }

    /** The flag must be 0 or DATA_LAST, and DATA_LAST exactly on the last run: an unflagged last run with a RESULT after it is cut off at the DATA. */
    @Test
    void dataFlaggedOtherThanItsRunIsAViolation() throws IOException
    {
        assertReadCutOff("flag-2", (t, h) -> t.data(h, 0, BLOCK, 2, fill(0)).send(), "DATA of 4096 bytes with flag 2", null);
        assertReadCutOff("flag-ff", (t, h) -> good(t, h, 2).data(h, 2, BLOCK, 0xFF, fill(2)).send(), "DATA of 4096 bytes with flag -1", null);
        assertReadCutOff("first-last", (t, h) -> t.data(h, 0, BLOCK, TcpWire.DATA_LAST, fill(0)).send(), waitsFor(0, BLOCK, true, 0, 3), null);
        assertReadCutOff("middle-last", (t, h) -> good(t, h, 1).data(h, 1, BLOCK, TcpWire.DATA_LAST, fill(1)).send(), waitsFor(1, BLOCK, true, 1, 3), null);
        assertReadCutOff("result-after-data", (t, h) -> good(t, h, 2).data(h, 2, BLOCK, 0, fill(2)).result(h, TcpWire.RESULT_OK, TransferOp.READ, 0, 0, 0)
                .send(), waitsFor(2, BLOCK, false, 2, 3), null);
    }

    @Test
    void aResultOkAnsweringAReadIsAViolation() throws IOException
    {
        String what = "a RESULT answering a READ that succeeded";
        assertReadCutOff("result-ok", (t, h) -> t.result(h, TcpWire.RESULT_OK, TransferOp.READ, 0, 0, 0).send(), what,
                "peer 'hostile-result-ok' answered a READ of 3 runs with a RESULT after 0 of them");
        assertReadCutOff("result-ok-after-one", (t, h) -> good(t, h, 1).result(h, TcpWire.RESULT_OK, TransferOp.READ, 0, 0, 0).send(), what,
                "peer 'hostile-result-ok-after-one' answered a READ of 3 runs with a RESULT after 1 of them");
    }

    @Test
    void anAnswerForATransferThatIsNotTheOldestWaitingIsAViolation() throws IOException
    {
        RawTcpTarget target = target("younger-first", 1 << 20);
        long older = postRead(target);
        long younger = initiator.post(new TransferRequest().start(TransferOp.READ).local(local, new int[] {6}).remote(target.remote, new int[] {3})
                .count(1).grantKey(KEY));
        assertEquals(younger, target.request().handle(), "the second READ's handle");
        target.data(younger, 0, BLOCK, TcpWire.DATA_LAST, fill(0)).send();
        assertCutOff(target, notOldest(younger), null, older, younger);

        assertReadCutOff("unknown-handle", (t, h) -> t.result(0x7777_0000L, TcpWire.RESULT_OK, TransferOp.READ, 0, 0, 0).send(), notOldest(0x7777_0000L),
                null);

        // an answer once nothing waits: the READ stays DONE and the extra bytes land nowhere
        target = target("after-done", 1 << 20);
        long handle = postRead(target);
        good(target, handle, 3).send();
        assertEquals(TransferStatus.DONE, await(handle), "a READ answered properly");
        target.data(handle, 0, BLOCK, TcpWire.DATA_LAST, (byte) 0x6F).send();
        assertCutOff(target, notOldest(handle), null);
        assertEquals(TransferStatus.DONE, initiator.status(handle), "a DONE READ after a stray answer for it");
        initiator.release(handle);
    }

    @Test
    void aRefusedWriteFailsNotGrantedAndTheConnectionStaysUsable() throws IOException
    {
        RawTcpTarget target = target("refuses-write", 1 << 20);
        memory.asSlice(BLOCK, BLOCK).fill((byte) 0x31);
        memory.asSlice(3L * BLOCK, BLOCK).fill((byte) 0x33);
        long refused = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {1, 3})
                .remote(target.remote, new int[] {0, 1}).count(2).grantKey(KEY));
        assertWrite(target.request(), refused, 0, 2, REMOTE, (byte) 0x31);
        assertWrite(target.request(), refused, 1, 2, REMOTE + BLOCK, (byte) 0x33);
        target.result(refused, TcpWire.RESULT_OUTSIDE, TransferOp.WRITE, 1, REMOTE + BLOCK, BLOCK).send();
        assertFailed(refused, ErrorCode.NOT_GRANTED, "WRITE of 2 runs was refused by peer '" + target.name
                + "': run 1 (4096 bytes at its 0x10001000): no grant under the key presented covers that range for WRITE");

        memory.asSlice(2L * BLOCK, BLOCK).fill((byte) 0x42);
        long next = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {2}).remote(target.remote, new int[] {4})
                .count(1).grantKey(KEY));
        assertWrite(target.request(), next, 0, 1, REMOTE + 4L * BLOCK, (byte) 0x42);
        target.result(next, TcpWire.RESULT_OK, TransferOp.WRITE, 0, 0, 0).send();
        assertDone(next, "the WRITE after a refusal");
        assertEquals(Optional.empty(), initiator.problem(), "a refusal reported as a problem");
    }

    /**
     * A refusal that comes before the WRITE's payload is all out ends the transfer; the caller may
     * then reuse the memory, so what is left of the payload must not be read from it any more.
     */
    @Test
    void aWriteRefusedBeforeItsPayloadIsOutReadsNoMoreOfItsMemory() throws IOException
    {
        long bytes = 16L << 20;
        MemorySegment big = arena.allocate(bytes, 4096).fill((byte) 0x11);
        initiator.register(Allocation.host(big));
        RawTcpTarget target = target("refuses-early", bytes);
        long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(initiator.prepareLocal(blocks(big.address(), bytes, 1)), new int[] {0}).remote(initiator.prepareRemote(target.peer, blocks(REMOTE, bytes, 1)), new int[] {0}).count(1).grantKey(KEY));
        // the target takes the header only: most of the payload cannot leave while it reads nothing
        assertEquals(bytes, target.header().runs()[1], "the WRITE's length");
        target.result(handle, TcpWire.RESULT_OUTSIDE, TransferOp.WRITE, 0, REMOTE, bytes).send();
        assertFailed(handle, ErrorCode.NOT_GRANTED, "WRITE of 1 runs was refused by peer '" + target.name + "': run 0 (" + bytes
                + " bytes at its 0x10000000): no grant under the key presented covers that range for WRITE");
        big.fill((byte) 0x4C);
        long late = target.drain(bytes, (byte) 0x4C);
        assertEquals(0, late, () -> late + " of " + bytes + " payload bytes went out from memory the caller wrote after its WRITE had ended");
    }

    @Test
    void aTargetThatAnswersNothingEndsTheTransferAtItsTimeout() throws IOException
    {
        initiator(1000);
        RawTcpTarget target = target("silent", 1 << 20);
        long started = System.nanoTime();
        long handle = postRead(target);
        assertFailed(handle, ErrorCode.DEADLINE_EXCEEDED, "READ of 3 runs to peer '" + target.name + "' (127.0.0.1:" + target.port()
                + ") did not finish within transfer-timeout-ms=1000");
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(millis >= 1000 && millis < 3000, () -> "the READ failed after " + millis + " ms, transfer-timeout-ms=1000");

        // its late answer is dropped, and the connection carries the next READ
        byte late = (byte) 0x4C;
        target.data(handle, 0, BLOCK, 0, late).data(handle, 1, BLOCK, 0, late).data(handle, 2, BLOCK, TcpWire.DATA_LAST, late).send();
        long next = initiator.post(new TransferRequest().start(TransferOp.READ).local(local, new int[] {6}).remote(target.remote, new int[] {3})
                .count(1).grantKey(KEY));
        assertEquals(next, target.request().handle(), "the next READ's handle");
        target.data(next, 0, BLOCK, TcpWire.DATA_LAST, fill(0)).send();
        assertDone(next, "the READ after a timeout");
        expected.asSlice(6L * BLOCK, BLOCK).fill(fill(0));
        assertMemory("after a late answer");
        assertEquals(Optional.empty(), initiator.problem(), "a timeout reported as a problem");
    }

    @Test
    void aHelloAnsweredWithAWrongMagicOrVersionFailsConnect() throws IOException
    {
        for (int[] ack : new int[][] {{0x12345678, TcpWire.VERSION}, {TcpWire.MAGIC, TcpWire.VERSION + 1}}) {
            RawTcpTarget target = new RawTcpTarget("wrong-ack-" + ack[1], ack[0], (byte) ack[1], REMOTE, 1 << 20);
            opened.add(target);
            KvBridgeException failure = assertThrows(KvBridgeException.class, () -> initiator.connect(target.metadata()));
            assertEquals(ErrorCode.PEER_UNKNOWN, failure.code(), failure::getMessage);
            assertEquals(ErrorCode.PEER_UNKNOWN.id() + ": cannot connect to peer '" + target.name + "' at 127.0.0.1:" + target.port()
                    + ": it answered the hello with something that is not a tcp transport answer", failure.getMessage());
            target.attached().assertClosedByInitiator();
            violations++;
            assertProblem(target, "it answered the hello with something that is not a tcp transport answer");
        }
        assertStillWorks();
    }

    /** A READ of three runs answered by {@code answer} is cut off for {@code what}. */
    private void assertReadCutOff(String label, RawTcpTarget.Answer answer, String what, String failure) throws IOException
    {
        RawTcpTarget target = target(label, 1 << 20);
        long handle = postRead(target);
        answer.to(target, handle);
        assertCutOff(target, what, failure, handle);
    }

    /** The initiator closed {@code target} for {@code what}, failing {@code handles} ({@code failure}, else the closing's reason), and works on. */
    private void assertCutOff(RawTcpTarget target, String what, String failure, long... handles)
    {
        String closing = "peer '" + target.name + "' (127.0.0.1:" + target.port() + "): the peer broke the protocol: " + what;
        for (long handle : handles) {
            assertFailed(handle, ErrorCode.TRANSFER_FAILED, failure != null ? failure : closing);
        }
        target.assertClosedByInitiator();
        violations++;
        assertProblem(target, what);
        assertMemory(target.name);
        assertStillWorks();
    }

    private void assertProblem(RawTcpTarget target, String what)
    {
        String problem = initiator.peerReport().orElseThrow(() -> new AssertionError(target.name + ": the initiator did not report it"));
        String latest = "closed " + violations + " connections of peers that broke the protocol, the latest " + target.name + ": " + what + ";";
        assertTrue(problem.contains(latest), () -> target.name + ": initiator problem: " + problem);
        assertEquals(Optional.empty(), initiator.problem(), "a peer's broken answers turned the initiator's health");
    }

    /** The owner thread lives: a legitimate target is connected to and read from. */
    private void assertStillWorks()
    {
        assertFalse(initiator.problem().orElse("").contains("has stopped"), () -> "initiator problem: " + initiator.problem());
        String agent = "legitimate-" + UUID.randomUUID();
        TcpTransferBackend legitimate = (TcpTransferBackend) new TcpBackendFactory().create(Map.of("host", "127.0.0.1"), () -> agent);
        opened.add(legitimate);
        MemorySegment theirs = arena.allocate(2L * BLOCK, 4096).fill((byte) 0x77);
        legitimate.register(Allocation.host(theirs));
        byte[] key = agent.getBytes(StandardCharsets.UTF_8);
        int[] both = {0, 1};
        legitimate.grant(key, TransferOp.READ, legitimate.prepareLocal(blocks(theirs.address(), BLOCK, 2)), both, 2);
        Peer peer = initiator.connect(legitimate.localMetadata());
        spare.fill((byte) 0);
        long handle = initiator.post(new TransferRequest().start(TransferOp.READ).local(spareList, both)
                .remote(initiator.prepareRemote(peer, blocks(theirs.address(), BLOCK, 2)), both).count(2).grantKey(key));
        assertDone(handle, "a READ from a legitimate target");
        assertEquals(-1, spare.mismatch(theirs), "the legitimate READ's bytes");
    }

    private void assertMemory(String what)
    {
        long at = memory.mismatch(expected);
        assertEquals(-1, at, () -> String.format(Locale.ROOT, "%s: initiator byte %d (block %d) is 0x%x, expected 0x%x", what, at, at / BLOCK,
                memory.get(ValueLayout.JAVA_BYTE, at), expected.get(ValueLayout.JAVA_BYTE, at)));
    }

    private static void assertWrite(Request request, long handle, int run, int runCount, long address, byte value)
    {
        assertEquals(List.of(TcpWire.WRITE, handle, run, runCount, address, (long) BLOCK, new String(KEY, StandardCharsets.UTF_8)), List.of(request.type(),
                request.handle(), request.run(), request.runCount(), request.runs()[0], request.runs()[1], new String(request.key(), StandardCharsets.UTF_8)),
                "WRITE: handle, run, runs, address, length, key");
        assertEquals(-1, Arrays.mismatch(request.payload(), RawTcpTarget.filled(BLOCK, value)), "the WRITE's payload");
    }

    private TransferStatus await(long handle)
    {
        long deadline = System.nanoTime() + 8_000_000_000L;
        TransferStatus status;
        while (!(status = initiator.status(handle)).terminal() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(200_000);
        }
        return status;
    }

    /** The transfer failed with {@code code} for {@code why}; its handle is released. */
    private void assertFailed(long handle, ErrorCode code, String why)
    {
        assertEquals(TransferStatus.FAILED, await(handle), "the transfer's status");
        KvBridgeException failure = initiator.failure(handle).orElseThrow();
        initiator.release(handle);
        assertEquals(code, failure.code(), failure::getMessage);
        assertEquals(code.id() + ": " + why, failure.getMessage());
    }

    private void assertDone(long handle, String what)
    {
        assertEquals(TransferStatus.DONE, await(handle), () -> what + ": " + initiator.failure(handle));
        initiator.release(handle);
    }

    private static String waitsFor(int run, long length, boolean last, int arrived, int runs)
    {
        return String.format(Locale.ROOT, "DATA of run %d (%d bytes, %s) while the transfer waits for run %d of %d", run, length, last ? "last" : "not last",
                arrived, runs);
    }

    private static String notOldest(long handle)
    {
        return String.format(Locale.ROOT, "an answer for transfer %x, which is not the oldest one waiting", handle);
    }

    /** A raw target that answers the hello properly, connected to by the initiator. */
    private RawTcpTarget target(String label, long regionBytes) throws IOException
    {
        RawTcpTarget target = new RawTcpTarget("hostile-" + label, TcpWire.MAGIC, TcpWire.VERSION, REMOTE, regionBytes);
        opened.add(target);
        target.peer = initiator.connect(target.metadata());
        target.attached();
        target.remote = initiator.prepareRemote(target.peer, blocks(REMOTE, BLOCK, BLOCKS));
        return target;
    }

    /** Posts a READ of three runs into sentinel memory and takes its request on the target's side. */
    private long postRead(RawTcpTarget target) throws IOException
    {
        memory.fill(SENTINEL);
        expected.fill(SENTINEL);
        long handle = initiator.post(new TransferRequest().start(TransferOp.READ).local(local, RUNS_LOCAL).remote(target.remote, RUNS_REMOTE).count(3)
                .grantKey(KEY));
        Request request = target.request();
        assertEquals(TcpWire.READ, request.type(), "request type");
        assertEquals(handle, request.handle(), "the READ's handle");
        assertArrayEquals(new long[] {REMOTE, BLOCK, REMOTE + BLOCK, BLOCK, REMOTE + 2L * BLOCK, BLOCK}, request.runs(), "the READ's runs");
        return handle;
    }

    /** Adds the READ's first {@code runs} runs as a well-behaved target sends them: they are to land. */
    private RawTcpTarget good(RawTcpTarget target, long handle, int runs)
    {
        for (int run = 0; run < runs; run++) {
            target.data(handle, run, BLOCK, run == RUNS_LOCAL.length - 1 ? TcpWire.DATA_LAST : 0, fill(run));
            expected.asSlice((long) RUNS_LOCAL[run] * BLOCK, BLOCK).fill(fill(run));
        }
        return target;
    }

    private static byte fill(int run)
    {
        return (byte) (0x60 + run);
    }

    private static DescriptorList blocks(long base, long length, int count)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, count);
        for (int i = 0; i < count; i++) {
            builder.add(base + i * length, length);
        }
        return builder.build();
    }
}
