package io.kvbridge.backend.tcp;

import static io.kvbridge.backend.tcp.RawTcpPeer.bytes;
import static io.kvbridge.backend.tcp.RawTcpPeer.filled;
import static io.kvbridge.backend.tcp.RawTcpPeer.frame;
import static io.kvbridge.backend.tcp.RawTcpPeer.hello;
import static io.kvbridge.backend.tcp.RawTcpPeer.readFrame;
import static io.kvbridge.backend.tcp.RawTcpPeer.writeFrame;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.backend.tcp.RawTcpPeer.Answer;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
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
 * its peer report and its health stays clean; a peer that never reads its answers cannot make the victim queue without bound; and
 * a legitimate peer is served afterwards.
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
        RawTcpPeer raw = raw("attacker-keys").hello();
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
        RawTcpPeer raw = raw("attacker-extents").hello();
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
        RawTcpPeer liar = raw("attacker-endless").hello();
        liar.send(writeFrame(WRITE_KEY, 0, 1, nextHandle++, at(2), Long.MAX_VALUE));
        liar.payload(BLOCK, (byte) 0x22);
        refusals++;
        awaitReport(" refused " + refusals + " peer access",
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
        RawTcpPeer raw = raw("attacker-reads").hello();
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
        RawTcpPeer raw = raw("attacker-late").hello();
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
        assertTrue(victim.peerReport().isEmpty(), () -> "late accesses reported: " + victim.peerReport());
        assertLegitimatePeerServed();
    }

    /** An admitted WRITE that stalls mid-payload cannot hold a revoke: its peer is cut off, the rest of its bytes land nowhere. */
    @Test
    void aRevokeCutsOffAWriterThatStalls() throws IOException
    {
        victim(Map.of("close-timeout-ms", "300"));
        RawTcpPeer raw = raw("attacker-stall").hello();
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
        byte otherVersion = (byte) (TcpWire.VERSION + 1);
        ByteBuffer wrongVersion = writeFrame(WRITE_KEY, 0, 1, handle, at(2), BLOCK).put(1, otherVersion);
        assertViolation("wrong-version", "a frame of version " + otherVersion, wrongVersion);
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

        // hellos: the peer is unidentified until its hello is verified, and no answer comes to a broken
        // one; it is counted as a connection that did not prove who it is, not as a peer's violation
        int rejected = 0;
        for (int[] hello : new int[][] {{0x12345678, TcpWire.VERSION, 5}, {TcpWire.MAGIC, TcpWire.VERSION + 1, 5}, {TcpWire.MAGIC, TcpWire.VERSION, 0}}) {
            RawTcpPeer raw = raw("attacker-hello");
            raw.challenge();
            raw.send(hello("attacker-hello".substring(0, hello[2]), metadata.instanceId(), hello[0], (byte) hello[1]));
            String what = String.format(Locale.ROOT, "a hello of magic 0x%x, version %d, name of %d bytes", hello[0], hello[1], hello[2]);
            assertEquals(0, raw.closedByVictim(), () -> raw.name + ": bytes from the victim to a peer whose hello it refused");
            rejected++;
            awaitReport("closed " + rejected + " connections that did not prove who they are, the latest an unidentified peer at /127.0.0.1:"
                    + raw.socket.getLocalPort() + ": " + what);
        }

        // closed without a violation: stale metadata, and a peer that stops mid-frame (its admitted
        // WRITE landed what came, inside the grant, and let the grant go)
        RawTcpPeer stale = raw("attacker-stale");
        stale.send(stale.provenHello(null, metadata.instanceId() + 1));
        ByteBuffer ack = stale.receive(TcpWire.ACK_BYTES);
        assertEquals(TcpWire.ACK_WRONG_INSTANCE, ack.get(5), "the answer to a hello naming another instance");
        assertClosedAndCounted(stale, null);
        RawTcpPeer truncated = raw("attacker-truncated").hello();
        truncated.send(writeFrame(WRITE_KEY, 0, 1, handle, at(2), BLOCK).limit(60));
        truncated.socket.shutdownOutput();
        assertClosedAndCounted(truncated, null);
        RawTcpPeer cut = raw("attacker-cut").hello();
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
     * other: the victim closes that connection, counts it, and keeps serving. Without a connection
     * key the attack needs no metadata: the answer to a hello naming any instance carries the
     * victim's instance id (with a key, only to a peer that proved it: {@code TcpAuthenticationTest}).
     */
    @Test
    void anUnknownFrameTypeAloneIsCutOffLikeAnyOther() throws IOException
    {
        RawTcpPeer probe = raw("attacker-probe");
        probe.send(probe.provenHello(null, 1));
        assertEquals(metadata.instanceId(), probe.receive(TcpWire.ACK_BYTES).getLong(8), "the instance id in the answer to a stale hello");
        RawTcpPeer raw = raw("attacker-lone-byte").hello();
        raw.send(ByteBuffer.wrap(new byte[] {9}));
        assertEquals(0, raw.closedByVictim(), "bytes from the victim to a peer that broke the protocol");
        // a failing owner thread closes its sockets before it records why: wait for the report
        awaitReport("closed 1 connections of peers that broke the protocol, the latest " + raw.name + ": frame type 9, which this protocol does not have");
        assertLegitimatePeerServed();
    }

    @Test
    void aFloodOfSilentConnectionsDoesNotShutOutALegitimatePeer() throws IOException
    {
        // all from one address: the bound per address is the one that holds
        int flood = TcpAdmission.MAX_PENDING_PER_ADDRESS + 44;
        List<RawTcpPeer> silent = new ArrayList<>();
        for (int i = 0; i < flood; i++) {
            silent.add(raw("silent-" + i));
        }
        assertLegitimatePeerServed();
        // the oldest of them were dropped to make room, with nothing but the challenge; the newest still wait for their hello
        for (int i = 0; i < flood - TcpAdmission.MAX_PENDING_PER_ADDRESS; i++) {
            assertEquals(TcpWire.CHALLENGE_BYTES, silent.get(i).closedByVictim(), "bytes to a silent peer");
        }
        RawTcpPeer newest = silent.getLast();
        newest.challenge();
        newest.socket.setSoTimeout(200);
        assertThrows(SocketTimeoutException.class, () -> newest.in.read(), "the newest silent connection was dropped");
        assertTrue(victim.peerReport().isEmpty(), () -> "silent peers reported: " + victim.peerReport());
    }

    /**
     * A peer that sends granted READs and never reads its socket must not make the victim queue
     * without bound: once the answers back up, the victim stops reading that peer, so its writes
     * stall far short of what it meant to send, while other peers are still served.
     */
    @Test
    @Timeout(30)
    void aPeerThatNeverReadsItsAnswersIsNoLongerRead() throws Exception
    {
        // 58 MB of requests: far more than the victim's bound plus what the sockets can buffer
        int reads = 400_000;
        int frameBytes = TcpWire.READ_BYTES + TcpWire.READ_RUN_BYTES;
        long total = (long) reads * frameBytes;
        RawTcpPeer raw = raw("attacker-backlog").hello();
        // the attacker's own buffer is not under test: kept small, what it got out is what the victim took
        raw.socket.setSendBufferSize(64 * 1024);
        long address = at(4);
        AtomicLong sent = new AtomicLong();
        Thread writer = Thread.ofPlatform().daemon().name("attacker-backlog").start(() -> {
            // batches of frames, counted as each one is taken whole: a stalled write blocks for good
            ByteBuffer batch = ByteBuffer.allocate(256 * frameBytes);
            try {
                for (int i = 0; i < reads;) {
                    batch.clear();
                    for (; i < reads && batch.hasRemaining(); i++) {
                        batch.put(readFrame(READ_KEY, 0, 1, 0x10000 + i, address, BLOCK));
                    }
                    raw.send(batch.flip());
                    sent.addAndGet(batch.limit());
                }
            }
            catch (IOException e) {
                // the socket was closed under a stalled write
            }
        });
        // the victim must stop taking bytes: wait until the writes make no progress for a second
        long deadline = System.nanoTime() + 10_000_000_000L;
        long last = -1;
        while (writer.isAlive() && sent.get() != last && System.nanoTime() < deadline) {
            last = sent.get();
            writer.join(Duration.ofSeconds(1));
        }
        long out = sent.get();
        assertTrue(writer.isAlive() && out < total / 2,
                () -> "a peer that reads no answer got out " + out + " of " + total + " bytes of READ requests");
        raw.close();
        writer.join(Duration.ofSeconds(5));
        assertMemory("after a peer that read no answer");
        assertLegitimatePeerServed();
        assertTrue(victim.peerReport().isEmpty(), () -> "victim problem: " + victim.peerReport());
    }

    // ---- what the victim must have done ----

    private void assertRefused(RawTcpPeer raw, Answer answer, byte code, TransferOp op, int run, String reason)
    {
        assertEquals(code, answer.result(), () -> raw.name + ": result of " + reason);
        assertEquals(op.ordinal(), answer.op(), () -> raw.name + ": op of the answer to " + reason);
        assertEquals(run, answer.run(), () -> raw.name + ": refused run of " + reason);
        assertEquals(0, answer.data().length, () -> raw.name + ": DATA came before the refusal of " + reason);
        assertMemory(raw.name + ": " + reason);
        refusals++;
        String problem = victim.peerReport().orElseThrow(() -> new AssertionError("the victim did not report: " + reason));
        assertTrue(problem.contains(" refused " + refusals + " peer access") && problem.contains("[peer '" + raw.name + "': " + reason + "]"),
                () -> "victim problem: " + problem);
        assertEquals(Optional.empty(), victim.problem(), "a peer's refused access turned the victim's health");
    }

    /** Waits for the victim's report to hold every fragment: some reports follow what the attacker sees. */
    private void awaitReport(String... fragments)
    {
        long deadline = System.nanoTime() + 3_000_000_000L;
        String problem = "";
        while (System.nanoTime() < deadline) {
            problem = victim.peerReport().orElse("");
            if (Arrays.stream(fragments).allMatch(problem::contains)) {
                return;
            }
            LockSupport.parkNanos(1_000_000);
        }
        fail("the victim's problem lacks " + Arrays.toString(fragments) + ": " + problem);
    }

    private void assertViolation(String label, String what, ByteBuffer... frames) throws IOException
    {
        RawTcpPeer raw = raw("attacker-" + label).hello();
        raw.send(frames);
        assertClosedAndCounted(raw, raw.name + ": " + what);
    }

    /** The victim closed the connection without a byte; it counted one more violation, naming {@code latest}, or none when null. */
    private void assertClosedAndCounted(RawTcpPeer raw, String latest)
    {
        assertEquals(0, raw.closedByVictim(), () -> raw.name + ": bytes from the victim to a peer it closed");
        assertMemory(raw.name);
        if (latest != null) {
            violations++;
        }
        String problem = victim.peerReport().orElseThrow(() -> new AssertionError(raw.name + ": the victim did not report it"));
        String count = "closed " + violations + " connections of peers that broke the protocol, the latest ";
        assertTrue(problem.contains(count + (latest != null ? latest : "")), () -> raw.name + ": victim problem: " + problem);
        assertEquals(Optional.empty(), victim.problem(), "a peer's broken frames turned the victim's health");
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
        long handle = initiator.post(new TransferRequest().start(op).local(local, BOTH).remote(remote, BOTH).count(2).grantKey(key));
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
    private Answer write(RawTcpPeer raw, byte[] key, long address, long length, byte value) throws IOException
    {
        long handle = nextHandle++;
        raw.send(writeFrame(key, 0, 1, handle, address, length));
        raw.payload(length, value);
        return raw.answer(handle);
    }

    /** One READ of runs given as address, length pairs, in one frame. */
    private Answer read(RawTcpPeer raw, byte[] key, long... runs) throws IOException
    {
        long handle = nextHandle++;
        raw.send(readFrame(key, 0, runs.length / 2, handle, runs));
        return raw.answer(handle);
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

    /** A raw peer connected to the victim, closed after the test. */
    private RawTcpPeer raw(String name) throws IOException
    {
        RawTcpPeer raw = new RawTcpPeer(name, metadata);
        opened.add(raw);
        return raw;
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
}
