package io.kvbridge.backend.tcp;

import static io.kvbridge.backend.tcp.RawTcpPeer.bytes;
import static io.kvbridge.backend.tcp.RawTcpPeer.filled;
import static io.kvbridge.backend.tcp.RawTcpPeer.hello;
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
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Thousands of connections to the data port that never prove who they are (silent ones, and ones
 * that send a hello without the key's proof), all from loopback: the victim holds a bounded number
 * of them, for a bounded time, with no stream buffer each, and a peer with the key moves blocks
 * meanwhile. The old port made 210 KiB of direct buffers per accepted socket and held them until
 * connect-timeout-ms: 3,000 idle sockets took 630 MB of direct memory and stopped the transport.
 */
@Timeout(120)
final class TcpConnectionFloodTest
{
    private static final int BLOCK = 64 * 1024;
    private static final byte[] CONNECTION_KEY = filled(32, (byte) 0x4b);
    private static final byte[] GRANT_KEY = bytes("flood-test-grant");
    private static final int SILENT = 2_000;
    private static final int UNPROVEN = 1_000;
    /** Direct memory the flood may add to the victim's process: a small part of what 3,000 sets of stream buffers took. */
    private static final long MAX_DIRECT_GROWTH = 16L << 20;
    private static final int IDLE_VERIFIED = 1_500;
    /** Direct memory 1,024 verified connections may hold (about 80 KiB each); 1,500 took 315 MB on the old port, without a bound. */
    private static final long MAX_ESTABLISHED_DIRECT = 96L << 20;

    private final List<AutoCloseable> opened = new ArrayList<>();
    private final Arena arena = Arena.ofShared();

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
    void thousandsOfUnprovenConnectionsLeaveALegitimatePeerServed() throws Exception
    {
        TcpTransferBackend victim = open("victim", Map.of("connect-timeout-ms", "2000"));
        MemorySegment memory = arena.allocate(2L * BLOCK, 4096).fill((byte) 0x5a);
        victim.register(Allocation.host(memory));
        victim.grant(GRANT_KEY, TransferOp.WRITE, victim.prepareLocal(blocks(memory, 0)), new int[] {0}, 1);
        victim.grant(GRANT_KEY, TransferOp.READ, victim.prepareLocal(blocks(memory, 1)), new int[] {0}, 1);
        TcpMetadata metadata = TcpMetadata.decode(victim.localMetadata());
        InetSocketAddress port = new InetSocketAddress("127.0.0.1", metadata.port());
        long directBefore = directMemoryUsed();

        List<SocketChannel> flood = new ArrayList<>();
        ByteBuffer unproven = hello("flooder", metadata.instanceId(), TcpWire.MAGIC, TcpWire.VERSION);
        for (int i = 0; i < SILENT + UNPROVEN; i++) {
            SocketChannel channel = SocketChannel.open();
            flood.add(channel);
            opened.add(channel);
            channel.setOption(StandardSocketOptions.SO_LINGER, 0);
            channel.connect(port);
            if (i >= SILENT) {
                channel.write(unproven.duplicate());
            }
            if (i % 500 == 499) {
                // a legitimate peer is served in the middle of the flood
                assertLegitimatePeerServed(victim, memory, (byte) i);
            }
        }
        long directGrowth = directMemoryUsed() - directBefore;
        int pending = pending(victim);
        assertTrue(pending <= TcpAdmission.MAX_PENDING, () -> pending + " connections pending");
        assertLegitimatePeerServed(victim, memory, (byte) 0x33);
        assertTrue(directGrowth < MAX_DIRECT_GROWTH, () -> "the flood grew direct memory by " + directGrowth + " bytes");

        // every unproven connection is closed by connect-timeout-ms: none is left pending
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (pending(victim) > 0 && System.nanoTime() < deadline) {
            LockSupport.parkNanos(10_000_000);
        }
        assertEquals(0, pending(victim), "connections still pending past connect-timeout-ms");
        assertEquals(Optional.empty(), victim.problem(), "the flood turned the victim's health: its owner thread stopped?");
        assertTrue(victim.loop().faults().rejectedCount() > 0, "unproven connections were counted");
        assertLegitimatePeerServed(victim, memory, (byte) 0x44);
    }

    /**
     * Without a connection key anyone who reaches the port may say hello: 1,500 verified connections
     * that then send nothing hold at most {@link TcpAdmission#MAX_ESTABLISHED} slots (and their
     * buffers); a peer at work keeps its connection, and a newcomer displaces an idle one once it has
     * been idle for connect-timeout-ms.
     */
    @Test
    void thousandsOfIdleVerifiedConnectionsHoldBoundedSlotsAndDisplaceNoPeerAtWork() throws Exception
    {
        // a grace that outlasts the flood even on a loaded machine: none of it is displaced before the newcomer below
        TcpTransferBackend victim = open("victim", Map.of("connect-timeout-ms", "5000"), null);
        MemorySegment memory = arena.allocate(2L * BLOCK, 4096).fill((byte) 0x5a);
        victim.register(Allocation.host(memory));
        victim.grant(GRANT_KEY, TransferOp.WRITE, victim.prepareLocal(blocks(memory, 0)), new int[] {0}, 1);
        victim.grant(GRANT_KEY, TransferOp.READ, victim.prepareLocal(blocks(memory, 1)), new int[] {0}, 1);
        TcpMetadata metadata = TcpMetadata.decode(victim.localMetadata());
        Worker atWork = new Worker(open("at-work", Map.of(), null), victim, memory);
        atWork.transfer((byte) 1);
        long directBefore = directMemoryUsed();

        int answered = 0;
        long floodStarted = System.nanoTime();
        for (int i = 0; i < IDLE_VERIFIED; i++) {
            RawTcpPeer raw = new RawTcpPeer("idle-" + i, metadata);
            opened.add(raw);
            raw.send(raw.provenHello(null, metadata.instanceId()));
            if (raw.in.readNBytes(TcpWire.ACK_BYTES).length == TcpWire.ACK_BYTES) {
                answered++;
            }
        }
        long directGrowth = directMemoryUsed() - directBefore;
        // the peer at work and MAX_ESTABLISHED - 1 idle ones; the rest were closed unanswered
        long floodMillis = (System.nanoTime() - floodStarted) / 1_000_000;
        assertEquals(TcpAdmission.MAX_ESTABLISHED - 1, answered, () -> "idle verified connections answered (the flood took " + floodMillis + " ms)");
        assertEquals(TcpAdmission.MAX_ESTABLISHED, victim.loop().owner().call(() -> victim.loop().admission().establishedCount()));
        assertTrue(directGrowth < MAX_ESTABLISHED_DIRECT, () -> "verified connections grew direct memory by " + directGrowth + " bytes");
        atWork.transfer((byte) 2);

        // once the idle ones have been idle for connect-timeout-ms, a newcomer displaces the oldest of them
        Thread.sleep(5_200);
        new Worker(open("newcomer", Map.of(), null), victim, memory).transfer((byte) 3);
        atWork.transfer((byte) 4);
        assertEquals(Optional.empty(), victim.problem(), "idle verified connections turned the victim's health");
    }

    /** A real instance connected to the victim, which writes block 0 and reads block 1 on the same connection each time. */
    private final class Worker
    {
        private final TcpTransferBackend backend;
        private final MemorySegment victimMemory;
        private final MemorySegment own;
        private final Peer peer;

        Worker(TcpTransferBackend backend, TcpTransferBackend victim, MemorySegment victimMemory)
        {
            this.backend = backend;
            this.victimMemory = victimMemory;
            this.own = arena.allocate(2L * BLOCK, 4096);
            backend.register(Allocation.host(own));
            this.peer = backend.connect(victim.localMetadata());
        }

        void transfer(byte value)
        {
            own.fill(value);
            TcpConnectionFloodTest.transfer(backend, TransferOp.WRITE, backend.prepareLocal(blocks(own, 0)), backend.prepareRemote(peer, blocks(victimMemory, 0)));
            assertEquals(-1, victimMemory.asSlice(0, BLOCK).mismatch(own.asSlice(0, BLOCK)), "the WRITE's bytes");
            TcpConnectionFloodTest.transfer(backend, TransferOp.READ, backend.prepareLocal(blocks(own, 1)), backend.prepareRemote(peer, blocks(victimMemory, 1)));
            assertEquals(-1, own.asSlice(BLOCK, BLOCK).mismatch(victimMemory.asSlice(BLOCK, BLOCK)), "the READ's bytes");
        }
    }

    /** {@return connections pending, counted on the owner thread, whose pools they are} */
    private static int pending(TcpTransferBackend victim)
    {
        return victim.loop().owner().call(() -> victim.loop().admission().pendingCount());
    }

    private static long directMemoryUsed()
    {
        return ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream().filter(pool -> pool.getName().equals("direct"))
                .mapToLong(BufferPoolMXBean::getMemoryUsed).sum();
    }

    /** A real instance with the key writes block 0 with {@code value} and reads block 1. */
    private void assertLegitimatePeerServed(TcpTransferBackend victim, MemorySegment memory, byte value)
    {
        TcpTransferBackend legitimate = open("legitimate", Map.of());
        MemorySegment own = arena.allocate(2L * BLOCK, 4096).fill(value);
        legitimate.register(Allocation.host(own));
        Peer toVictim = legitimate.connect(victim.localMetadata());
        transfer(legitimate, TransferOp.WRITE, legitimate.prepareLocal(blocks(own, 0)), legitimate.prepareRemote(toVictim, blocks(memory, 0)));
        assertEquals(-1, memory.asSlice(0, BLOCK).mismatch(own.asSlice(0, BLOCK)), "the legitimate WRITE's bytes");
        transfer(legitimate, TransferOp.READ, legitimate.prepareLocal(blocks(own, 1)), legitimate.prepareRemote(toVictim, blocks(memory, 1)));
        assertEquals(-1, own.asSlice(BLOCK, BLOCK).mismatch(memory.asSlice(BLOCK, BLOCK)), "the legitimate READ's bytes");
        legitimate.close();
    }

    private static void transfer(TransferBackend initiator, TransferOp op, PreparedList local, PreparedList remote)
    {
        long handle = initiator.post(new TransferRequest().start(op).local(local, new int[] {0}).remote(remote, new int[] {0}).count(1)
                .grantKey(GRANT_KEY));
        long deadline = System.nanoTime() + 10_000_000_000L;
        TransferStatus status;
        while (!(status = initiator.status(handle)).terminal() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(100_000);
        }
        String failure = initiator.failure(handle).map(Throwable::getMessage).orElse("");
        initiator.release(handle);
        assertEquals(TransferStatus.DONE, status, () -> "legitimate " + op + ": " + failure);
    }

    private TcpTransferBackend open(String name, Map<String, String> options)
    {
        return open(name, options, CONNECTION_KEY);
    }

    private TcpTransferBackend open(String name, Map<String, String> options, byte[] connectionKey)
    {
        Map<String, String> config = new java.util.HashMap<>(options);
        config.put("host", "127.0.0.1");
        TcpTransferBackend backend = (TcpTransferBackend) new TcpBackendFactory().create(config,
                TcpAuthenticationTest.context(name + "-" + UUID.randomUUID(), connectionKey));
        opened.add(backend);
        return backend;
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
