package io.kvbridge.backend.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.transport.Grants;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A raw TCP peer that speaks the tcp frames by hand, and lies in them, reaches nothing beyond the
 * grants. The victim registers eight blocks followed by four it never registered, all holding a
 * sentinel, and grants two blocks for WRITE and two others for READ. Every refused access comes back
 * as a RESULT with its code and no DATA before it; every protocol violation closes the attacker's
 * connection; no victim byte changes beyond what a grant allowed; the victim names the attacker in
 * its problem; and a legitimate peer is served afterwards.
 */
@Timeout(60)
final class TcpHostilePeerTest
{
    static final int BLOCK = 64 * 1024;
    static final int REGISTERED_BLOCKS = 8;
    static final int ALL_BLOCKS = 12;
    static final byte SENTINEL = (byte) 0x5A;
    static final byte ATTACK = (byte) 0x66;
    private static final int[] WRITABLE = {2, 3};
    private static final int[] READABLE = {4, 5};
    private static final int[] BOTH = {0, 1};
    private static final byte[] WRITE_KEY = bytes("write-key-of-request-1");
    private static final byte[] READ_KEY = bytes("read-key-of-request-2");
    private static final byte[] WRONG_KEY = bytes("guessed-key");
    private static final byte[] NO_KEY = new byte[0];
    private static final long DEADLINE_NANOS = 10_000_000_000L;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private Arena arena;
    private TcpTransferBackend victim;
    private MemorySegment memory;
    // what the victim's memory must hold: the sentinel, plus what a grant let in
    private MemorySegment expected;
    private TcpMetadata metadata;
    private long writeGrant;
    private long readGrant;
    private long refusals;
    private long violations;
    private long nextHandle = 0x7000;

    @BeforeEach
    void openVictim()
    {
        arena = Arena.ofShared();
        victim(Map.of());
    }

    private void victim(Map<String, String> options)
    {
        victim = open("victim", options);
        memory = arena.allocate((long) ALL_BLOCKS * BLOCK, 4096);
        memory.fill(SENTINEL);
        victim.register(Allocation.host(memory.asSlice(0, (long) REGISTERED_BLOCKS * BLOCK)));
        writeGrant = victim.grant(WRITE_KEY, TransferOp.WRITE, victim.prepareLocal(blocks(memory, WRITABLE)), BOTH, 2);
        readGrant = victim.grant(READ_KEY, TransferOp.READ, victim.prepareLocal(blocks(memory, READABLE)), BOTH, 2);
        metadata = TcpMetadata.decode(victim.localMetadata());
        expected = arena.allocate(memory.byteSize(), 8).copyFrom(memory);
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
    void aWriteWithoutAKeyOrUnderAWrongKeyIsDropped() throws IOException
    {
        Raw raw = new Raw("attacker-keys").hello();
        for (byte[] key : List.of(NO_KEY, WRONG_KEY, Arrays.copyOf(WRITE_KEY, WRITE_KEY.length - 1), READ_KEY)) {
            Answer answer = write(raw, key, at(2), BLOCK, ATTACK);
            if (key == READ_KEY) {
                // a live key, but its grant is for READ
                assertRefused(raw, answer, TcpWire.RESULT_OUTSIDE, TransferOp.WRITE, 0, outside(TransferOp.WRITE, at(2), BLOCK, key));
            }
            else {
                assertRefused(raw, answer, TcpWire.RESULT_NO_GRANT, TransferOp.WRITE, 0, noGrant(TransferOp.WRITE, key));
            }
        }
        for (byte[] key : List.of(NO_KEY, WRONG_KEY)) {
            assertRefused(raw, read(raw, key, at(4), BLOCK), TcpWire.RESULT_NO_GRANT, TransferOp.READ, 0, noGrant(TransferOp.READ, key));
        }
        assertLegitimatePeerServed();
    }

    @Test
    void aWriteUnderTheRightKeyLandsOnlyInsideItsGrant() throws IOException
    {
        Raw raw = new Raw("attacker-extents").hello();
        long[][] outside = {
            {at(0), BLOCK}, // registered, not granted
            {at(4), BLOCK}, // granted, but for READ
            {at(REGISTERED_BLOCKS), BLOCK}, // the unregistered memory right after the registration
            {at(3) + BLOCK / 2, BLOCK}, // straddles the grant's end
            {at(2) - 1, 2}, // straddles its start
            {at(2), 64L * BLOCK}, // lies about its extent: 4 MiB from the grant's start
            {Long.MAX_VALUE - 16, 64}, // an extent that wraps past the end of the address space
        };
        for (long[] run : outside) {
            Answer answer = write(raw, WRITE_KEY, run[0], run[1], ATTACK);
            assertRefused(raw, answer, TcpWire.RESULT_OUTSIDE, TransferOp.WRITE, 0, outside(TransferOp.WRITE, run[0], run[1], WRITE_KEY));
        }

        // two runs, the first inside: runs are checked as they arrive, so the first lands (its grant
        // allows it) and the second is dropped; the answer names the second
        long handle = nextHandle++;
        raw.send(writeFrame(WRITE_KEY, 0, 2, handle, at(2), BLOCK));
        raw.payload(BLOCK, ATTACK);
        raw.send(writeFrame(WRITE_KEY, 1, 2, handle, at(6), BLOCK));
        raw.payload(BLOCK, ATTACK);
        expected.asSlice(2L * BLOCK, BLOCK).fill(ATTACK);
        assertRefused(raw, raw.answer(handle), TcpWire.RESULT_OUTSIDE, TransferOp.WRITE, 1, outside(TransferOp.WRITE, at(6), BLOCK, WRITE_KEY));

        // the first run outside: nothing of the transfer lands, not even its run inside the grant
        handle = nextHandle++;
        raw.send(writeFrame(WRITE_KEY, 0, 2, handle, at(1), BLOCK));
        raw.payload(BLOCK, (byte) 0x21);
        raw.send(writeFrame(WRITE_KEY, 1, 2, handle, at(3), BLOCK));
        raw.payload(BLOCK, (byte) 0x21);
        assertRefused(raw, raw.answer(handle), TcpWire.RESULT_OUTSIDE, TransferOp.WRITE, 0, outside(TransferOp.WRITE, at(1), BLOCK, WRITE_KEY));

        // a length no one can send: refused from its header (counted at once), its bytes dropped as they come
        Raw liar = new Raw("attacker-endless").hello();
        liar.send(writeFrame(WRITE_KEY, 0, 1, nextHandle++, at(2), Long.MAX_VALUE));
        liar.payload(BLOCK, (byte) 0x22);
        refusals++;
        awaitProblem(" refused " + refusals + " peer access",
                "[peer '" + liar.name + "': " + outside(TransferOp.WRITE, at(2), Long.MAX_VALUE, WRITE_KEY) + "]");
        liar.socket.close();

        // the grant itself works over the raw socket, and the memory check sees it
        assertEquals(TcpWire.RESULT_OK, write(raw, WRITE_KEY, at(3), BLOCK, ATTACK).result(), "a WRITE inside the grant");
        expected.asSlice(3L * BLOCK, BLOCK).fill(ATTACK);
        assertMemory("after a granted WRITE");
        assertLegitimatePeerServed();
    }

    @Test
    void aReadOutsideItsGrantReturnsNoByte() throws IOException
    {
        Raw raw = new Raw("attacker-reads").hello();
        long[][] outside = {
            {at(6), BLOCK}, // registered, not granted
            {at(2), BLOCK}, // granted, but for WRITE
            {at(REGISTERED_BLOCKS + 1), BLOCK}, // never registered
            {at(5) + BLOCK / 2, BLOCK}, // straddles the grant's end
            {at(4), 64L * BLOCK}, // lies about its extent
            {at(4), 0}, // empty and negative runs
            {at(4), -1},
            {Long.MAX_VALUE - 16, 64}, // wraps
        };
        for (long[] run : outside) {
            assertRefused(raw, read(raw, READ_KEY, run), TcpWire.RESULT_OUTSIDE, TransferOp.READ, 0, outside(TransferOp.READ, run[0], run[1], READ_KEY));
        }
        // the WRITE key admits, but its grant is not for READ
        assertRefused(raw, read(raw, WRITE_KEY, at(2), BLOCK), TcpWire.RESULT_OUTSIDE, TransferOp.READ, 0,
                outside(TransferOp.READ, at(2), BLOCK, WRITE_KEY));
        // every run is checked before any byte leaves: the granted first run brings nothing either
        assertRefused(raw, read(raw, READ_KEY, at(4), BLOCK, at(6), BLOCK), TcpWire.RESULT_OUTSIDE, TransferOp.READ, 1,
                outside(TransferOp.READ, at(6), BLOCK, READ_KEY));
        // the same across frames: the list of one READ sent in two frames
        long handle = nextHandle++;
        raw.send(readFrame(READ_KEY, 0, 2, handle, at(4), BLOCK));
        raw.send(readFrame(READ_KEY, 1, 2, handle, at(7), BLOCK));
        assertRefused(raw, raw.answer(handle), TcpWire.RESULT_OUTSIDE, TransferOp.READ, 1, outside(TransferOp.READ, at(7), BLOCK, READ_KEY));

        // the grant itself works over the raw socket, and the DATA check sees its bytes
        expected.asSlice(5L * BLOCK, 16).fill((byte) 0x31);
        memory.asSlice(5L * BLOCK, 16).fill((byte) 0x31);
        Answer granted = read(raw, READ_KEY, at(4), 2L * BLOCK);
        assertEquals(TcpWire.RESULT_OK, granted.result(), "a READ inside the grant");
        assertArrayEquals(expected.asSlice(4L * BLOCK, 2L * BLOCK).toArray(ValueLayout.JAVA_BYTE), granted.data(), "granted bytes");
        assertMemory("after READs");
        assertLegitimatePeerServed();
    }

    @Test
    void aRevokedGrantsKeyReachesNothing() throws IOException
    {
        Raw raw = new Raw("attacker-late").hello();
        assertEquals(TcpWire.RESULT_OK, write(raw, WRITE_KEY, at(2), BLOCK, ATTACK).result(), "a WRITE while the grant lives");
        expected.asSlice(2L * BLOCK, BLOCK).fill(ATTACK);
        victim.revoke(writeGrant);
        victim.revoke(readGrant);
        Answer afterRevoke = write(raw, WRITE_KEY, at(2), BLOCK, (byte) 0x23);
        assertEquals(TcpWire.RESULT_NO_GRANT, afterRevoke.result(), "a WRITE under a revoked key");
        Answer readAfterRevoke = read(raw, READ_KEY, at(4), BLOCK);
        assertEquals(TcpWire.RESULT_NO_GRANT, readAfterRevoke.result(), "a READ under a revoked key");
        assertEquals(0, readAfterRevoke.data().length, "DATA under a revoked key");
        assertMemory("after accesses under revoked keys");
        // a key revoked lately is a peer that came late, not a probe: counted apart, not reported
        assertEquals(2, victim.grants().lateRefusals(), "late accesses counted");
        assertEquals(0, victim.grants().refusals(), "late accesses counted as refusals");
        assertTrue(victim.problem().isEmpty(), () -> "late accesses reported: " + victim.problem());
        assertLegitimatePeerServed();
    }

    /** An admitted WRITE that stalls mid-payload cannot hold a revoke: its peer is cut off, the rest of its bytes land nowhere. */
    @Test
    void aRevokeCutsOffAWriterThatStalls() throws IOException
    {
        victim(Map.of("close-timeout-ms", "300"));
        Raw raw = new Raw("attacker-stall").hello();
        raw.send(writeFrame(WRITE_KEY, 0, 1, nextHandle++, at(2), BLOCK));
        raw.payload(BLOCK / 2, ATTACK);
        expected.asSlice(2L * BLOCK, BLOCK / 2).fill(ATTACK);
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (memory.asSlice(2L * BLOCK, BLOCK / 2).mismatch(expected.asSlice(2L * BLOCK, BLOCK / 2)) >= 0 && System.nanoTime() < deadline) {
            LockSupport.parkNanos(1_000_000);
        }
        long started = System.nanoTime();
        victim.revoke(writeGrant);
        long millis = (System.nanoTime() - started) / 1_000_000;
        assertTrue(millis >= 250, "revoke returned after " + millis + " ms, while an admitted WRITE was still receiving");
        try {
            raw.payload(BLOCK / 2, (byte) 0x24);
        }
        catch (IOException e) {
            // the victim closed the connection: what is left cannot be sent
        }
        assertEquals(0, raw.closedByVictim(), "bytes from the victim to a writer it cut off");
        assertMemory("after the stalled writer was cut off");
        assertLegitimatePeerServed();
    }

    @Test
    void aPeerThatBreaksTheProtocolIsCutOffAndCounted() throws IOException
    {
        long handle = 0x1234;
        assertViolation("unknown-type", "frame type 9, which this protocol does not have", frame((byte) 9, NO_KEY));
        ByteBuffer wrongVersion = writeFrame(WRITE_KEY, 0, 1, handle, at(2), BLOCK).put(1, (byte) 2);
        assertViolation("wrong-version", "a frame of version 2", wrongVersion);
        assertViolation("no-runs", "READ of runs 0+1 of 0, key of 21 bytes", readFrame(READ_KEY, 0, 0, handle, at(4), BLOCK));
        assertViolation("empty-read", "READ of runs 0+0 of 1, key of 21 bytes", readFrame(READ_KEY, 0, 1, handle));
        assertViolation("too-many-runs", "READ of runs 0+1 of " + (TcpWire.MAX_RUNS + 1) + ", key of 21 bytes",
                readFrame(READ_KEY, 0, TcpWire.MAX_RUNS + 1, handle, at(4), BLOCK));
        assertViolation("negative-length", "WRITE run 0 of 1, -65536 bytes, key of 22 bytes", writeFrame(WRITE_KEY, 0, 1, handle, at(2), -BLOCK));
        assertViolation("long-key", "WRITE run 0 of 1, 65536 bytes, key of 65 bytes", writeFrame(WRITE_KEY, 0, 1, handle, at(2), BLOCK).put(2, (byte) 65));
        assertViolation("late-start", "WRITE of transfer 1234 starts at run 1", writeFrame(WRITE_KEY, 1, 2, handle, at(2), BLOCK));
        ByteBuffer notify = ByteBuffer.allocate(TcpWire.NOTIFY_BYTES).order(ByteOrder.LITTLE_ENDIAN).put(0, TcpWire.NOTIFY).put(1, TcpWire.VERSION)
                .putInt(4, TcpWire.MAX_NOTIFICATION_BYTES + 1);
        assertViolation("long-notify", "a notification of " + (TcpWire.MAX_NOTIFICATION_BYTES + 1) + " bytes", notify);
        assertViolation("answer-to-target", "frame type 6 towards the target", frame(TcpWire.RESULT, NO_KEY).limit(TcpWire.RESULT_BYTES));
        // a frame of another transfer while one is half received: the first run, inside the grant, has landed
        ByteBuffer firstRun = ByteBuffer.allocate(TcpWire.WRITE_BYTES + BLOCK).order(ByteOrder.LITTLE_ENDIAN)
                .put(writeFrame(WRITE_KEY, 0, 2, 0x51, at(3), BLOCK)).put(filled(BLOCK, ATTACK)).flip();
        expected.asSlice(3L * BLOCK, BLOCK).fill(ATTACK);
        assertViolation("interleaved", "WRITE frame of transfer 52 at run 0 of 1 while WRITE of transfer 51 waits for run 1 of 2", firstRun,
                writeFrame(WRITE_KEY, 0, 1, 0x52, at(2), BLOCK));

        // hellos: the peer is unidentified until its hello is taken, and no answer comes to a broken one
        for (int[] hello : new int[][] {{0x12345678, TcpWire.VERSION, 5}, {TcpWire.MAGIC, 2, 5}, {TcpWire.MAGIC, TcpWire.VERSION, 0}}) {
            Raw raw = new Raw("attacker-hello");
            raw.send(hello("attacker-hello".substring(0, hello[2]), metadata.instanceId(), hello[0], (byte) hello[1]));
            String what = String.format(Locale.ROOT, "a hello of magic 0x%x, version %d, name of %d bytes", hello[0], hello[1], hello[2]);
            assertClosedAndCounted(raw, "an unidentified peer at /127.0.0.1:" + raw.socket.getLocalPort() + ": " + what);
        }

        // closed without a violation: stale metadata, and a peer that stops mid-frame (its admitted
        // WRITE landed what came, inside the grant, and let the grant go)
        Raw stale = new Raw("attacker-stale");
        stale.send(hello(stale.name, metadata.instanceId() + 1, TcpWire.MAGIC, TcpWire.VERSION));
        ByteBuffer ack = stale.receive(TcpWire.ACK_BYTES);
        assertEquals(TcpWire.ACK_WRONG_INSTANCE, ack.get(5), "the answer to a hello naming another instance");
        assertClosedAndCounted(stale, null);
        Raw truncated = new Raw("attacker-truncated").hello();
        truncated.send(writeFrame(WRITE_KEY, 0, 1, handle, at(2), BLOCK).limit(60));
        truncated.socket.shutdownOutput();
        assertClosedAndCounted(truncated, null);
        Raw cut = new Raw("attacker-cut").hello();
        cut.send(writeFrame(WRITE_KEY, 0, 1, handle, at(2), BLOCK));
        cut.payload(1000, ATTACK);
        cut.socket.shutdownOutput();
        expected.asSlice(2L * BLOCK, 1000).fill(ATTACK);
        assertClosedAndCounted(cut, null);
        long started = System.nanoTime();
        victim.revoke(writeGrant);
        long millis = (System.nanoTime() - started) / 1_000_000;
        assertTrue(millis < 1_500, "revoke waited " + millis + " ms for an access whose connection had closed (close-timeout-ms=2000)");
        assertEquals(0, victim.grants().refusals(), "protocol violations counted as refused accesses");
        assertLegitimatePeerServed();
    }

    /**
     * A frame type nobody sends, arriving alone as the last byte read, must be cut off like any
     * other: the victim closes that connection, counts it, and keeps serving. The attack needs no
     * metadata: the answer to a hello naming any instance carries the victim's instance id.
     */
    @Test
    void anUnknownFrameTypeAloneIsCutOffLikeAnyOther() throws IOException
    {
        Raw probe = new Raw("attacker-probe");
        probe.send(hello(probe.name, 1, TcpWire.MAGIC, TcpWire.VERSION));
        assertEquals(metadata.instanceId(), probe.receive(TcpWire.ACK_BYTES).getLong(8), "the instance id in the answer to a stale hello");
        Raw raw = new Raw("attacker-lone-byte").hello();
        raw.send(ByteBuffer.wrap(new byte[] {9}));
        assertEquals(0, raw.closedByVictim(), "bytes from the victim to a peer that broke the protocol");
        // a failing owner thread closes its sockets before it records why: wait for the report
        awaitProblem("closed 1 connections of peers that broke the protocol, the latest " + raw.name + ": frame type 9, which this protocol does not have");
        assertLegitimatePeerServed();
    }

    @Test
    void aFloodOfSilentConnectionsDoesNotShutOutALegitimatePeer() throws IOException
    {
        int flood = TcpOwnerLoop.MAX_UNIDENTIFIED + 44;
        List<Raw> silent = new ArrayList<>();
        for (int i = 0; i < flood; i++) {
            silent.add(new Raw("silent-" + i));
        }
        assertLegitimatePeerServed();
        // the oldest of them were dropped to make room; the newest still wait for their hello
        for (int i = 0; i < flood - TcpOwnerLoop.MAX_UNIDENTIFIED; i++) {
            assertEquals(0, silent.get(i).closedByVictim(), "bytes to a silent peer");
        }
        Raw newest = silent.getLast();
        newest.socket.setSoTimeout(200);
        assertThrows(SocketTimeoutException.class, () -> newest.in.read(), "the newest silent connection was dropped");
        assertTrue(victim.problem().isEmpty(), () -> "silent peers reported: " + victim.problem());
    }

    // ---- what the victim must have done ----

    private void assertRefused(Raw raw, Answer answer, byte code, TransferOp op, int run, String reason)
    {
        assertEquals(code, answer.result(), () -> raw.name + ": result of " + reason);
        assertEquals(op.ordinal(), answer.op(), () -> raw.name + ": op of the answer to " + reason);
        assertEquals(run, answer.run(), () -> raw.name + ": refused run of " + reason);
        assertEquals(0, answer.data().length, () -> raw.name + ": DATA came before the refusal of " + reason);
        assertMemory(raw.name + ": " + reason);
        refusals++;
        String problem = victim.problem().orElseThrow(() -> new AssertionError("the victim did not report: " + reason));
        assertTrue(problem.contains(" refused " + refusals + " peer access") && problem.contains("[peer '" + raw.name + "': " + reason + "]"),
                () -> "victim problem: " + problem);
    }

    /** Waits for the victim's problem to hold every fragment: some reports follow what the attacker sees. */
    private void awaitProblem(String... fragments)
    {
        long deadline = System.nanoTime() + 3_000_000_000L;
        String problem = "";
        while (System.nanoTime() < deadline) {
            problem = victim.problem().orElse("");
            if (Arrays.stream(fragments).allMatch(problem::contains)) {
                return;
            }
            LockSupport.parkNanos(1_000_000);
        }
        fail("the victim's problem lacks " + Arrays.toString(fragments) + ": " + problem);
    }

    private void assertViolation(String label, String what, ByteBuffer... frames) throws IOException
    {
        Raw raw = new Raw("attacker-" + label).hello();
        raw.send(frames);
        assertClosedAndCounted(raw, raw.name + ": " + what);
    }

    /** The victim closed the connection without a byte; it counted one more violation, naming {@code latest}, or none when null. */
    private void assertClosedAndCounted(Raw raw, String latest)
    {
        assertEquals(0, raw.closedByVictim(), () -> raw.name + ": bytes from the victim to a peer it closed");
        assertMemory(raw.name);
        if (latest != null) {
            violations++;
        }
        String problem = victim.problem().orElseThrow(() -> new AssertionError(raw.name + ": the victim did not report it"));
        String count = "closed " + violations + " connections of peers that broke the protocol, the latest ";
        assertTrue(problem.contains(count + (latest != null ? latest : "")), () -> raw.name + ": victim problem: " + problem);
    }

    private void assertMemory(String what)
    {
        long at = memory.mismatch(expected);
        if (at >= 0) {
            fail(String.format(Locale.ROOT, "%s: victim byte %d (block %d) is 0x%x, expected 0x%x", what, at, at / BLOCK,
                    memory.get(ValueLayout.JAVA_BYTE, at), expected.get(ValueLayout.JAVA_BYTE, at)));
        }
    }

    /** A second real instance, connected with the victim's metadata, moves granted blocks both ways. */
    private void assertLegitimatePeerServed()
    {
        TcpTransferBackend legitimate = open("legitimate", Map.of());
        MemorySegment own = arena.allocate(2L * BLOCK, 4096);
        own.fill((byte) 0x77);
        legitimate.register(Allocation.host(own));
        Peer toVictim = legitimate.connect(victim.localMetadata());
        byte[] writeKey = bytes("legitimate-write-" + UUID.randomUUID());
        byte[] readKey = bytes("legitimate-read-" + UUID.randomUUID());
        victim.grant(writeKey, TransferOp.WRITE, victim.prepareLocal(blocks(memory, 6, 7)), BOTH, 2);
        victim.grant(readKey, TransferOp.READ, victim.prepareLocal(blocks(memory, READABLE)), BOTH, 2);
        PreparedList local = legitimate.prepareLocal(blocks(own, 0, 1));
        transfer(legitimate, TransferOp.WRITE, local, legitimate.prepareRemote(toVictim, blocks(memory, 6, 7)), writeKey);
        expected.asSlice(6L * BLOCK, 2L * BLOCK).fill((byte) 0x77);
        assertMemory("after the legitimate WRITE");
        own.fill((byte) 0x11);
        transfer(legitimate, TransferOp.READ, local, legitimate.prepareRemote(toVictim, blocks(memory, READABLE)), readKey);
        assertEquals(-1, own.mismatch(expected.asSlice(4L * BLOCK, 2L * BLOCK)), "the legitimate READ's bytes");
    }

    private static void transfer(TransferBackend initiator, TransferOp op, PreparedList local, PreparedList remote, byte[] key)
    {
        long handle = initiator.post(op, local, BOTH, remote, BOTH, 2, null, key);
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        TransferStatus status;
        while (!(status = initiator.status(handle)).terminal() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(100_000);
        }
        String failure = initiator.failure(handle).map(Throwable::getMessage).orElse("");
        initiator.release(handle);
        assertEquals(TransferStatus.DONE, status, () -> "legitimate " + op + ": " + failure);
    }

    private static String outside(TransferOp op, long address, long length, byte[] key)
    {
        return String.format(Locale.ROOT, "%s of %d bytes at 0x%x under %s: outside its grant for %s", op, length, address, keyText(key), op);
    }

    private static String noGrant(TransferOp op, byte[] key)
    {
        return op + " of 0 bytes at 0x0 under " + keyText(key) + ": no live grant has that key";
    }

    private static String keyText(byte[] key)
    {
        return key.length == 0 ? "no key" : "a key of " + key.length + " bytes";
    }

    // ---- the attacker's side of the wire ----

    /** One WRITE of one run of {@code length} bytes of {@code value}. */
    private Answer write(Raw raw, byte[] key, long address, long length, byte value) throws IOException
    {
        long handle = nextHandle++;
        raw.send(writeFrame(key, 0, 1, handle, address, length));
        raw.payload(length, value);
        return raw.answer(handle);
    }

    /** One READ of runs given as address, length pairs, in one frame. */
    private Answer read(Raw raw, byte[] key, long... runs) throws IOException
    {
        long handle = nextHandle++;
        raw.send(readFrame(key, 0, runs.length / 2, handle, runs));
        return raw.answer(handle);
    }

    /** A request header: type, version, key length, the key at {@link TcpWire#KEY_AT}; little-endian, 128 bytes. */
    private static ByteBuffer frame(byte type, byte[] key)
    {
        return ByteBuffer.allocate(TcpWire.WRITE_BYTES).order(ByteOrder.LITTLE_ENDIAN).put(0, type).put(1, TcpWire.VERSION).put(2, (byte) key.length)
                .put(TcpWire.KEY_AT, key);
    }

    private static ByteBuffer writeFrame(byte[] key, int run, int runCount, long handle, long address, long length)
    {
        return frame(TcpWire.WRITE, key).putInt(4, run).putInt(8, runCount).putLong(16, handle).putLong(24, address).putLong(32, length);
    }

    /** A READ frame listing the runs given as address, length pairs. */
    private static ByteBuffer readFrame(byte[] key, int first, int runCount, long handle, long... runs)
    {
        ByteBuffer frame = ByteBuffer.allocate(TcpWire.READ_BYTES + runs.length * 8).order(ByteOrder.LITTLE_ENDIAN).put(frame(TcpWire.READ, key))
                .putInt(4, first).putInt(8, runs.length / 2).putInt(12, runCount).putLong(16, handle);
        for (long value : runs) {
            frame.putLong(value);
        }
        return frame.flip();
    }

    private static ByteBuffer hello(String name, long to, int magic, byte version)
    {
        byte[] bytes = bytes(name);
        return ByteBuffer.allocate(TcpWire.HELLO_BYTES + bytes.length).order(ByteOrder.LITTLE_ENDIAN).putInt(magic).put(version).put((byte) bytes.length)
                .putShort((short) 0).putLong(0x4141).putLong(to).putLong(0).put(bytes).flip();
    }

    private record Answer(byte result, int op, int run, byte[] data)
    {
    }

    /** A blocking socket on loopback that speaks the frames by hand; reads time out rather than hang. */
    private final class Raw
    {
        final String name;
        final Socket socket = new Socket();
        final InputStream in;
        final OutputStream out;

        Raw(String name) throws IOException
        {
            this.name = name;
            opened.add(socket);
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(10_000);
            socket.connect(new InetSocketAddress("127.0.0.1", metadata.port()), 10_000);
            in = socket.getInputStream();
            out = socket.getOutputStream();
        }

        /** Says hello as this name to the victim's instance; the victim must accept it. */
        Raw hello() throws IOException
        {
            send(TcpHostilePeerTest.hello(name, metadata.instanceId(), TcpWire.MAGIC, TcpWire.VERSION));
            ByteBuffer ack = receive(TcpWire.ACK_BYTES);
            assertEquals(TcpWire.MAGIC, ack.getInt(0), "ack magic");
            assertEquals(TcpWire.ACK_OK, ack.get(5), "ack result");
            assertEquals(metadata.instanceId(), ack.getLong(8), "ack instance");
            return this;
        }

        void send(ByteBuffer... frames) throws IOException
        {
            for (ByteBuffer frame : frames) {
                out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
            }
        }

        void payload(long length, byte value) throws IOException
        {
            byte[] chunk = filled((int) Math.min(length, BLOCK), value);
            for (long left = length; left > 0; left -= chunk.length) {
                out.write(chunk, 0, (int) Math.min(chunk.length, left));
            }
        }

        ByteBuffer receive(int bytes) throws IOException
        {
            byte[] read = in.readNBytes(bytes);
            assertEquals(bytes, read.length, () -> name + ": the victim closed the connection");
            return ByteBuffer.wrap(read).order(ByteOrder.LITTLE_ENDIAN);
        }

        /** The RESULT for {@code handle}, with the bytes of every DATA frame that came before it. */
        Answer answer(long handle) throws IOException
        {
            byte[] data = new byte[0];
            while (true) {
                byte type = receive(1).get(0);
                if (type == TcpWire.DATA) {
                    ByteBuffer header = receive(TcpWire.DATA_BYTES - 1);
                    long length = header.getLong(15);
                    assertTrue(length > 0 && length <= 16L * BLOCK, () -> name + ": DATA of " + length + " bytes");
                    byte[] more = receive((int) length).array();
                    data = Arrays.copyOf(data, data.length + more.length);
                    System.arraycopy(more, 0, data, data.length - more.length, more.length);
                    continue;
                }
                assertEquals(TcpWire.RESULT, type, () -> name + ": frame type " + type + " from the victim");
                ByteBuffer result = receive(TcpWire.RESULT_BYTES - 1);
                assertEquals(handle, result.getLong(7), () -> name + ": the answer's transfer");
                return new Answer(result.get(1), result.get(2), result.getInt(3), data);
            }
        }

        /** {@return the bytes that came before the victim closed the connection}; fails if it stays open. */
        int closedByVictim()
        {
            int bytes = 0;
            try {
                while (in.read() >= 0) {
                    bytes++;
                }
            }
            catch (SocketTimeoutException e) {
                fail(name + ": the victim kept the connection open");
            }
            catch (IOException e) {
                // reset by the victim: closed too
            }
            return bytes;
        }
    }

    // ---- set-up helpers ----

    private TcpTransferBackend open(String name, Map<String, String> options)
    {
        Map<String, String> config = new HashMap<>(options);
        config.put("host", "127.0.0.1");
        String agent = name + "-" + UUID.randomUUID();
        TcpTransferBackend backend = (TcpTransferBackend) new TcpBackendFactory().create(config, () -> agent);
        opened.add(backend);
        return backend;
    }

    private long at(int block)
    {
        return memory.address() + (long) block * BLOCK;
    }

    private static DescriptorList blocks(MemorySegment base, int... blocks)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, blocks.length);
        for (int block : blocks) {
            builder.add(base.address() + (long) block * BLOCK, BLOCK);
        }
        return builder.build();
    }

    private static byte[] filled(int length, byte value)
    {
        byte[] bytes = new byte[length];
        Arrays.fill(bytes, value);
        return bytes;
    }

    private static byte[] bytes(String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }

}
