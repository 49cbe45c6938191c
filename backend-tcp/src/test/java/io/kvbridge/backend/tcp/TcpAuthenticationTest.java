package io.kvbridge.backend.tcp;

import static io.kvbridge.backend.tcp.RawTcpPeer.bytes;
import static io.kvbridge.backend.tcp.RawTcpPeer.filled;
import static io.kvbridge.backend.tcp.RawTcpPeer.hello;
import static io.kvbridge.backend.tcp.RawTcpPeer.readFrame;
import static io.kvbridge.backend.tcp.RawTcpPeer.writeFrame;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.transport.Inbox;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * With a connection key (the engines' shared secret) a data connection is served only after its
 * hello proved the key: a process that read the victim's metadata and knows a grant key still
 * gets no answer, no instance id and no byte of memory. What peers do is counted and reported
 * apart from health, with their chosen names escaped; notifications are bounded.
 */
@Timeout(60)
final class TcpAuthenticationTest
{
    private static final int BLOCK = 64 * 1024;
    private static final byte[] CONNECTION_KEY = filled(32, (byte) 0x4b);
    private static final byte[] OTHER_KEY = filled(32, (byte) 0x4c);
    private static final byte[] READ_KEY = bytes("read-key-of-request-7");
    private static final byte[] WRITE_KEY = bytes("write-key-of-request-7");
    private static final byte SENTINEL = (byte) 0x5A;
    private static final long DEADLINE_NANOS = 10_000_000_000L;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private Arena arena;
    private TcpTransferBackend victim;
    private MemorySegment memory;
    private MemorySegment expected;
    private TcpMetadata metadata;
    private long nextHandle = 0x9000;

    @BeforeEach
    void openVictim()
    {
        arena = Arena.ofShared();
        victim = open("victim", CONNECTION_KEY, Map.of());
        memory = arena.allocate(4L * BLOCK, 4096);
        memory.fill(SENTINEL);
        victim.register(Allocation.host(memory));
        victim.grant(READ_KEY, TransferOp.READ, victim.prepareLocal(blocks(memory, 0)), new int[] {0}, 1);
        victim.grant(WRITE_KEY, TransferOp.WRITE, victim.prepareLocal(blocks(memory, 1)), new int[] {0}, 1);
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
    void aHelloThatDoesNotProveTheKeyGetsNoAnswerAndNoInstanceId() throws IOException
    {
        RawTcpPeer unproven = raw("attacker-no-proof");
        unproven.challenge();
        assertEquals(TcpWire.CHALLENGE_KEYED, unproven.challengeFlags, "the challenge says a key is required");
        unproven.send(hello(unproven.name, metadata.instanceId(), TcpWire.MAGIC, TcpWire.VERSION));
        assertEquals(0, unproven.closedByVictim(), "bytes to a hello without a proof");

        // a stale or guessed instance id: the answer that used to carry the victim's id does not come
        RawTcpPeer guessing = raw("attacker-guessing");
        guessing.send(guessing.provenHello(OTHER_KEY, 1));
        assertEquals(0, guessing.closedByVictim(), "bytes to a hello proving another key");

        // a proof of the right key over another name: the name is covered
        RawTcpPeer renamed = raw("attacker-renamed");
        ByteBuffer hello = renamed.provenHello(CONNECTION_KEY, metadata.instanceId());
        hello.put(TcpWire.HELLO_BYTES, (byte) 'A');
        renamed.send(hello);
        assertEquals(0, renamed.closedByVictim(), "bytes to a hello whose name was changed after the proof");

        awaitRejected(3);
        assertEquals(Optional.empty(), victim.problem(), "unproven hellos turned the victim's health");
        assertLegitimatePeerServed();
    }

    @Test
    void anUnprovenConnectionCannotReadOrWriteGrantedMemoryEvenWithTheGrantKey() throws IOException
    {
        RawTcpPeer reader = raw("attacker-reader");
        reader.challenge();
        reader.send(hello(reader.name, metadata.instanceId(), TcpWire.MAGIC, TcpWire.VERSION), readFrame(READ_KEY, 0, 1, nextHandle++, at(0), BLOCK));
        assertEquals(0, reader.closedByVictim(), "bytes to an unproven READ under the right grant key");

        RawTcpPeer direct = raw("attacker-no-hello");
        direct.challenge();
        direct.send(readFrame(READ_KEY, 0, 1, nextHandle++, at(0), BLOCK));
        assertEquals(0, direct.closedByVictim(), "bytes to a READ sent instead of a hello");

        RawTcpPeer writer = raw("attacker-writer");
        writer.challenge();
        writer.send(hello(writer.name, metadata.instanceId(), TcpWire.MAGIC, TcpWire.VERSION), writeFrame(WRITE_KEY, 0, 1, nextHandle++, at(1), BLOCK));
        try {
            writer.payload(BLOCK, (byte) 0x66);
        }
        catch (IOException e) {
            // the victim closed the connection under the payload
        }
        assertEquals(0, writer.closedByVictim(), "bytes to an unproven WRITE under the right grant key");

        awaitRejected(3);
        assertEquals(-1, memory.mismatch(expected), "an unproven WRITE changed granted memory");
        assertEquals(0, victim.grants().refusals() + victim.grants().lateRefusals(), "an unproven connection reached the grants");
        assertEquals(Optional.empty(), victim.problem(), "unproven connections turned the victim's health");
        assertLegitimatePeerServed();
    }

    @Test
    void aRefusedAccessOrBrokenFrameLeavesHealthAndIsReportedWithTheNameEscaped() throws IOException
    {
        String name = "evil\nkvbridge healthy\r\u001b[2J\u001b]0;title\u0007";
        RawTcpPeer raw = new RawTcpPeer(name, metadata);
        opened.add(raw);
        raw.hello(CONNECTION_KEY);
        long handle = nextHandle++;
        raw.send(writeFrame(bytes("guessed"), 0, 1, handle, at(1), BLOCK));
        raw.payload(BLOCK, (byte) 0x66);
        assertEquals(TcpWire.RESULT_NO_GRANT, raw.answer(handle).result(), "a WRITE under a guessed key");
        raw.send(ByteBuffer.wrap(new byte[] {9}));
        assertEquals(0, raw.closedByVictim(), "bytes to a peer that broke the protocol");

        assertEquals(1, victim.grants().refusals(), "refused accesses counted");
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (victim.loop().faults().malformedCount() == 0 && System.nanoTime() < deadline) {
            LockSupport.parkNanos(1_000_000);
        }
        assertEquals(1, victim.loop().faults().malformedCount(), "broken connections counted");
        assertEquals(Optional.empty(), victim.problem(), "a peer's refused access or broken frame turned the victim's health");
        String report = victim.peerReport().orElseThrow();
        String escaped = "evil\\nkvbridge healthy\\r\\u001b[2J\\u001b]0;title\\u0007";
        assertTrue(report.contains("[peer '" + escaped + "': WRITE of 0 bytes at 0x0 under a key of 7 bytes: no live grant has that key]"), report);
        assertTrue(report.contains("broke the protocol, the latest " + escaped + ": frame type 9"), report);
        assertFalse(report.chars().anyMatch(Character::isISOControl), report);
        assertLegitimatePeerServed();
    }

    @Test
    void onlyPeersWithTheSameKeyConnectAndEachOtherIsToldWhy()
    {
        assertLegitimatePeerServed();
        assertConnectFails(open("other-key", OTHER_KEY, Map.of()), "before it answered the hello; a peer does so when the hello does not prove its"
                + " connection key: start both engines with the same shared secret");
        assertConnectFails(open("no-key", null, Map.of()), "it requires a connection key, and this engine has none");
        TcpTransferBackend unkeyed = open("unkeyed-target", null, Map.of());
        KvBridgeException failure = assertThrows(KvBridgeException.class, () -> open("keyed", CONNECTION_KEY, Map.of()).connect(unkeyed.localMetadata()));
        assertEquals(ErrorCode.PEER_UNKNOWN, failure.code(), failure::getMessage);
        assertTrue(failure.getMessage().contains("it has no connection key, and this engine requires one"), failure::getMessage);
        assertEquals(Optional.empty(), victim.problem());
    }

    @Test
    void anInstanceWhoseMetadataNobodyAskedForAcceptsNothing()
    {
        TcpTransferBackend unlisted = open("bridge-own", CONNECTION_KEY, Map.of());
        assertEquals(0, unlisted.loop().port(), "an instance that gave nobody its metadata listens");
        int port = TcpMetadata.decode(unlisted.localMetadata()).port();
        assertTrue(port > 0 && port == unlisted.loop().port(), "the port its metadata names");
    }

    /** A verified peer that floods notifications nobody drains fills the inbox to its bound, no further; the rest is dropped and counted. */
    @Test
    void aNotifyFloodStaysWithinTheInboxBoundWithDropsCounted() throws IOException
    {
        RawTcpPeer raw = raw("flooder").hello(CONNECTION_KEY);
        int length = 1000;
        int sent = Inbox.DEFAULT_MAX_MESSAGES + 4_464;
        ByteBuffer batch = ByteBuffer.allocate(1000 * (TcpWire.NOTIFY_BYTES + length)).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < sent;) {
            batch.clear();
            for (int j = 0; j < 1000 && i < sent; j++, i++) {
                batch.put(TcpWire.NOTIFY).put(TcpWire.VERSION).putShort((short) 0).putInt(length).putLong(0).put(filled(length, (byte) i));
            }
            raw.send(batch.flip());
        }
        Inbox inbox = victim.inbox();
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (inbox.size() + inbox.dropped() < sent && System.nanoTime() < deadline) {
            LockSupport.parkNanos(1_000_000);
        }
        assertEquals(Inbox.DEFAULT_MAX_MESSAGES, inbox.size(), "notifications held");
        assertTrue(inbox.bytes() <= Inbox.DEFAULT_MAX_BYTES, () -> inbox.bytes() + " bytes held");
        assertEquals(sent - Inbox.DEFAULT_MAX_MESSAGES, inbox.dropped(), "notifications dropped");
        assertTrue(victim.peerReport().orElse("").contains("dropped 4464 notifications: its inbox was full"), () -> "report: " + victim.peerReport());
        assertEquals(Optional.empty(), victim.problem(), "a notification flood turned the victim's health");
        assertEquals(Inbox.DEFAULT_MAX_MESSAGES, victim.drainNotifications((sender, message) -> { }), "drained");
        assertLegitimatePeerServed();
    }

    // ---- helpers ----

    private void assertConnectFails(TcpTransferBackend initiator, String why)
    {
        KvBridgeException failure = assertThrows(KvBridgeException.class, () -> initiator.connect(victim.localMetadata()));
        assertEquals(ErrorCode.PEER_UNKNOWN, failure.code(), failure::getMessage);
        assertTrue(failure.getMessage().contains(why), failure::getMessage);
    }

    private void awaitRejected(long count)
    {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (victim.loop().faults().rejectedCount() < count && System.nanoTime() < deadline) {
            LockSupport.parkNanos(1_000_000);
        }
        assertEquals(count, victim.loop().faults().rejectedCount(), "connections rejected before they proved who they are");
    }

    /** A real instance with the victim's key writes block 1 and reads block 0. */
    private void assertLegitimatePeerServed()
    {
        TcpTransferBackend legitimate = open("legitimate", CONNECTION_KEY, Map.of());
        MemorySegment own = arena.allocate(2L * BLOCK, 4096).fill((byte) 0x77);
        legitimate.register(Allocation.host(own));
        Peer toVictim = legitimate.connect(victim.localMetadata());
        PreparedList local = legitimate.prepareLocal(blocks(own, 0));
        transfer(legitimate, TransferOp.WRITE, local, legitimate.prepareRemote(toVictim, blocks(memory, 1)), WRITE_KEY);
        expected.asSlice(BLOCK, BLOCK).fill((byte) 0x77);
        assertEquals(-1, memory.mismatch(expected), "the victim's memory after the legitimate WRITE");
        PreparedList into = legitimate.prepareLocal(blocks(own, 1));
        transfer(legitimate, TransferOp.READ, into, legitimate.prepareRemote(toVictim, blocks(memory, 0)), READ_KEY);
        assertEquals(-1, own.asSlice(BLOCK, BLOCK).mismatch(expected.asSlice(0, BLOCK)), "the legitimate READ's bytes");
    }

    private static void transfer(TransferBackend initiator, TransferOp op, PreparedList local, PreparedList remote, byte[] key)
    {
        long handle = initiator.post(new TransferRequest().start(op).local(local, new int[] {0}).remote(remote, new int[] {0}).count(1)
                .grantKey(key));
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        TransferStatus status;
        while (!(status = initiator.status(handle)).terminal() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(100_000);
        }
        String failure = initiator.failure(handle).map(Throwable::getMessage).orElse("");
        initiator.release(handle);
        assertEquals(TransferStatus.DONE, status, () -> "legitimate " + op + ": " + failure);
    }

    private TcpTransferBackend open(String name, byte[] connectionKey, Map<String, String> options)
    {
        Map<String, String> config = new HashMap<>(options);
        config.put("host", "127.0.0.1");
        String agent = name + "-" + UUID.randomUUID();
        TcpTransferBackend backend = (TcpTransferBackend) new TcpBackendFactory().create(config, context(agent, connectionKey));
        opened.add(backend);
        return backend;
    }

    static BackendContext context(String agent, byte[] connectionKey)
    {
        return new BackendContext()
        {
            @Override
            public String agentName()
            {
                return agent;
            }

            @Override
            public Optional<byte[]> connectionKey()
            {
                return Optional.ofNullable(connectionKey).map(byte[]::clone);
            }
        };
    }

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
