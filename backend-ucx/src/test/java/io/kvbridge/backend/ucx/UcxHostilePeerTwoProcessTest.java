package io.kvbridge.backend.ucx;

import static io.kvbridge.backend.ucx.HostileVictimProcess.ALL_BLOCKS;
import static io.kvbridge.backend.ucx.HostileVictimProcess.BLOCK;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.ChildJvm;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The attack of {@link UcxHostilePeerTest} across processes, as it would come: the victim
 * ({@link HostileVictimProcess}) runs in a JVM of its own and this JVM is the attacker, holding the
 * victim's real metadata. Over shared memory the lane between two processes is UCX's {@code cma}
 * (or {@code posix}), which checks no bounds; over TCP it is software RMA. Every attempt outside the
 * grants is refused with {@code NOT_GRANTED}; the victim's blocks are compared byte for byte
 * afterwards, in its own process; the victim counts the refusals and names the attacker; the granted
 * WRITE and READ still work.
 */
@Timeout(120)
@ExtendWith(UcxInstalled.class)
final class UcxHostilePeerTwoProcessTest
{
    private static final Duration STEP = Duration.ofSeconds(60);
    private static final byte ATTACK = (byte) 0x66;

    @ParameterizedTest(name = "tls={0}")
    @ValueSource(strings = {"sm", "tcp"})
    void anAttackerInAnotherProcessReachesNothingBeyondItsGrants(String tls) throws Exception
    {
        Map<String, String> config = new HashMap<>(Map.of("tls", tls));
        if (tls.equals("tcp")) {
            config.put("net-devices", "lo");
            config.put(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true");
        }
        try (ChildJvm victim = ChildJvm.start("victim", HostileVictimProcess.class, "victim", tls);
                Arena arena = Arena.ofShared();
                TransferBackend attacker = new UcxBackendFactory().create(config, () -> "attacker")) {
            byte[] metadata = Base64.getDecoder().decode(victim.expect("METADATA", STEP).substring("METADATA ".length()));
            long base = Long.parseLong(victim.expect("REGION", STEP).substring("REGION ".length()).trim());
            MemorySegment own = arena.allocate((long) ALL_BLOCKS * BLOCK, 4096);
            own.fill(ATTACK);
            attacker.register(Allocation.host(own));
            Peer toVictim = attacker.connect(metadata);
            UcxHostilePeerTest.assumeLane((UcxTransferBackend) attacker, tls);

            // the real extent: one registered region of eight blocks
            PreparedList local = attacker.prepareLocal(blocks(own.address(), 0));
            PreparedList block0 = attacker.prepareRemote(toVictim, blocks(base, 0));
            PreparedList block4 = attacker.prepareRemote(toVictim, blocks(base, 4));
            PreparedList block2 = attacker.prepareRemote(toVictim, blocks(base, 2));
            byte[] wrong = "guessed-key".getBytes(StandardCharsets.UTF_8);
            refused(attacker, TransferOp.WRITE, local, block0, null, "WRITE without a key");
            refused(attacker, TransferOp.WRITE, local, block0, wrong, "WRITE under a guessed key");
            refused(attacker, TransferOp.WRITE, local, block4, HostileVictimProcess.WRITE_KEY, "WRITE outside the grant");
            refused(attacker, TransferOp.WRITE, local, block2, HostileVictimProcess.READ_KEY, "WRITE under a READ key");
            refused(attacker, TransferOp.READ, local, block4, HostileVictimProcess.READ_KEY, "READ outside the grant");
            refused(attacker, TransferOp.READ, local, block0, HostileVictimProcess.WRITE_KEY, "READ under a WRITE key");

            // a lie about the extent: the metadata rewritten to cover all twelve blocks
            UcxMetadata real = UcxMetadata.decode(metadata);
            UcxMetadata.Region region = real.regions().getFirst();
            UcxMetadata forged = new UcxMetadata(real.instanceId(), real.agentName(), real.workerAddress(), real.tcpSegmentBytes(),
                    List.of(new UcxMetadata.Region(region.address(), (long) ALL_BLOCKS * BLOCK, region.packedKey())));
            attacker.disconnect(toVictim);
            Peer lying = attacker.connect(forged.encode());
            refused(attacker, TransferOp.WRITE, local, attacker.prepareRemote(lying, blocks(base, 10)), HostileVictimProcess.WRITE_KEY,
                    "WRITE into unregistered memory under a forged extent");
            refused(attacker, TransferOp.READ, local, attacker.prepareRemote(lying, blocks(base, 9)), HostileVictimProcess.READ_KEY,
                    "READ of unregistered memory under a forged extent");
            assertEquals(ATTACK, own.get(ValueLayout.JAVA_BYTE, 0), "no READ brought the attacker a byte");

            // what was granted still works
            done(attacker, TransferOp.WRITE, local, attacker.prepareRemote(lying, blocks(base, 1)), HostileVictimProcess.WRITE_KEY);
            done(attacker, TransferOp.READ, attacker.prepareLocal(blocks(own.address(), 5)), attacker.prepareRemote(lying, blocks(base, 3)),
                    HostileVictimProcess.READ_KEY);
            assertEquals(HostileVictimProcess.READABLE, own.get(ValueLayout.JAVA_BYTE, 5L * BLOCK), "granted READ");

            victim.send("BLOCKS");
            assertEquals("BLOCKS 5a,66,42,42,5a,5a,5a,5a,5a,5a,5a,5a", victim.expect("BLOCKS", STEP),
                    "the victim's blocks: only block 1 written, by the one granted WRITE");
            victim.send("PROBLEM");
            String problem = victim.expect("PROBLEM", STEP);
            // the victim never connected to the attacker, so it names it by the instance id its messages carry
            String attackerId = String.format(java.util.Locale.ROOT, "unconnected instance %016x", UcxMetadata.decode(attacker.localMetadata()).instanceId());
            assertTrue(problem.contains("refused 8 peer accesses") && problem.contains(attackerId), () -> problem + " should name " + attackerId);
            assertTrue(problem.startsWith("PROBLEM health=none report="), () -> "refused accesses turned the victim's health: " + problem);
            victim.send("EXIT");
            assertEquals(0, victim.awaitExit(STEP), "the victim ends normally");
        }
    }

    /**
     * A peer in this process running {@code access=registered} (one-sided puts and gets) against the
     * granted victim in its own JVM, with the victim's extent widened and a remote key packed from its
     * own memory (the victim publishes none): between processes UCX's shared-memory lane for caller
     * memory is {@code cma}, which a victim opened with RMA let such a peer use. Every access fails
     * by the attacker's deadline, and the victim's blocks are as they were.
     */
    @ParameterizedTest(name = "tls={0}")
    @ValueSource(strings = {"sm", "tcp"})
    void aOneSidedAttackerInAnotherProcessReachesNothing(String tls) throws Exception
    {
        Map<String, String> config = new HashMap<>(Map.of("tls", tls, "access", "registered", "transfer-timeout-ms", "2000"));
        if (tls.equals("tcp")) {
            config.put("net-devices", "lo");
            config.put(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true");
        }
        // UCX warns on the victim's stdout, mid-line, of each emulated put it has no handler for
        Map<String, String> quiet = Map.of("UCX_LOG_LEVEL", "error");
        try (ChildJvm victim = ChildJvm.start("victim", ChildJvm.NATIVE_ACCESS, quiet, HostileVictimProcess.class, "victim", tls);
                Arena arena = Arena.ofShared();
                TransferBackend attacker = new UcxBackendFactory().create(config, () -> "attacker")) {
            byte[] metadata = Base64.getDecoder().decode(victim.expect("METADATA", STEP).substring("METADATA ".length()));
            long base = Long.parseLong(victim.expect("REGION", STEP).substring("REGION ".length()).trim());
            MemorySegment own = arena.allocate(BLOCK, 4096);
            own.fill(ATTACK);
            attacker.register(Allocation.host(own));
            UcxHostilePeerTest.assumeLane((UcxTransferBackend) attacker, tls);
            UcxMetadata real = UcxMetadata.decode(metadata);
            UcxMetadata.Region region = real.regions().getFirst();
            assertEquals(0, region.packedKey().length, "a granted victim publishes no remote key");
            byte[] forgedKey = UcxMetadata.decode(attacker.localMetadata()).regions().getFirst().packedKey();
            UcxMetadata forged = new UcxMetadata(real.instanceId(), real.agentName(), real.workerAddress(), real.tcpSegmentBytes(),
                    List.of(new UcxMetadata.Region(region.address(), (long) ALL_BLOCKS * BLOCK, forgedKey)));
            PreparedList local = attacker.prepareLocal(blocks(own.address(), 0));
            // a transfer past its deadline marks the peer dead, so each attempt connects again
            for (int block : new int[] {10, 4, 1}) {
                Peer lying = attacker.connect(forged.encode());
                fails(attacker, TransferOp.WRITE, local, attacker.prepareRemote(lying, blocks(base, block)), null, ErrorCode.DEADLINE_EXCEEDED,
                        "WRITE of block " + block);
            }
            for (int block : new int[] {9, 2}) {
                Peer lying = attacker.connect(forged.encode());
                fails(attacker, TransferOp.READ, local, attacker.prepareRemote(lying, blocks(base, block)), null, ErrorCode.DEADLINE_EXCEEDED,
                        "READ of block " + block);
            }
            for (long i = 0; i < BLOCK; i++) {
                assertEquals(ATTACK, own.get(ValueLayout.JAVA_BYTE, i), "no READ brought the attacker a byte");
            }
            victim.send("BLOCKS");
            assertEquals("BLOCKS 5a,5a,42,42,5a,5a,5a,5a,5a,5a,5a,5a", victim.expect("BLOCKS", STEP), "no victim block changed");
            victim.send("EXIT");
            assertEquals(0, victim.awaitExit(STEP), "the victim ends normally");
        }
    }

    private static DescriptorList blocks(long base, int block)
    {
        return DescriptorList.builder(MemoryKind.HOST, 0, 1).add(base + (long) block * BLOCK, BLOCK).build();
    }

    private static void refused(TransferBackend attacker, TransferOp op, PreparedList local, PreparedList remote, byte[] key, String what)
    {
        fails(attacker, op, local, remote, key, ErrorCode.NOT_GRANTED, what);
    }

    /** Posts one block and expects the transfer to fail with {@code code}. */
    private static void fails(TransferBackend attacker, TransferOp op, PreparedList local, PreparedList remote, byte[] key, ErrorCode code, String what)
    {
        long handle = attacker.post(new TransferRequest().start(op).local(local, new int[] {0}).remote(remote, new int[] {0}).count(1).grantKey(key));
        TransferStatus status = UcxInstancesTest.awaitTerminal(attacker, handle);
        assertEquals(TransferStatus.FAILED, status, what + ": should have failed");
        var failure = attacker.failure(handle).orElseThrow();
        assertEquals(code, failure.code(), () -> what + ": " + failure.getMessage());
        attacker.release(handle);
    }

    private static void done(TransferBackend attacker, TransferOp op, PreparedList local, PreparedList remote, byte[] key)
    {
        long handle = attacker.post(new TransferRequest().start(op).local(local, new int[] {0}).remote(remote, new int[] {0}).count(1).grantKey(key));
        assertEquals(TransferStatus.DONE, UcxInstancesTest.awaitTerminal(attacker, handle), () -> op + " under its grant: " + attacker.failure(handle));
        attacker.release(handle);
    }
}
