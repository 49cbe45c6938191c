package io.kvbridge.backend.ucx;

import static io.kvbridge.backend.ucx.UcxHostilePeerTest.ALL_BLOCKS;
import static io.kvbridge.backend.ucx.UcxHostilePeerTest.ATTACK;
import static io.kvbridge.backend.ucx.UcxHostilePeerTest.BLOCK;
import static io.kvbridge.backend.ucx.UcxHostilePeerTest.REGISTERED_BLOCKS;
import static io.kvbridge.backend.ucx.UcxHostilePeerTest.WRITE_KEY;
import static io.kvbridge.backend.ucx.UcxHostilePeerTest.assertBytes;
import static io.kvbridge.backend.ucx.UcxHostilePeerTest.fillBlock;
import static io.kvbridge.backend.ucx.UcxHostilePeerTest.victimByte;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A peer that skips the active messages and uses UCX's one-sided puts and gets against an
 * {@code access=granted} instance, as {@code access=registered} does, with the victim's extent
 * widened in its copy of the metadata and either the key the victim published or one the attacker
 * packed from its own memory. Granted instances open UCX without RMA and publish no remote keys,
 * so none of these reaches a byte: every attempt fails, no victim byte changes, no READ brings a
 * byte back, and a granted peer is served afterwards.
 */
@Timeout(120)
final class UcxOneSidedAttackTest extends UcxInstancesTest
{
    private UcxTransferBackend backend(String tls, String name, Map<String, String> options)
    {
        return UcxHostilePeerTest.open(backends, tls, name, options);
    }

    private static DescriptorList blocks(long base, int... blocks)
    {
        return UcxHostilePeerTest.blocks(base, blocks);
    }

    @ParameterizedTest(name = "tls={0}, key={1}")
    @CsvSource({"sm, published", "sm, forged", "tcp, published", "tcp, forged"})
    void oneSidedAccessReachesNothingOfAGrantedInstance(String tls, String keySource)
    {
        UcxTransferBackend victim = backend(tls, "victim", Map.of());
        UcxHostilePeerTest.assumeLane(victim, tls);
        MemorySegment victimMemory = arena.allocate((long) ALL_BLOCKS * BLOCK, 4096);
        for (int block = 0; block < ALL_BLOCKS; block++) {
            fillBlock(victimMemory, block, victimByte(block));
        }
        victim.register(Allocation.host(victimMemory.asSlice(0, (long) REGISTERED_BLOCKS * BLOCK)));
        long base = victimMemory.address();
        victim.grant(WRITE_KEY, TransferOp.WRITE, victim.prepareLocal(blocks(base, 2, 3)), new int[] {0, 1}, 2);

        // one-sided puts that reach no target complete only by the deadline
        UcxTransferBackend attacker = backend(tls, "attacker", Map.of("access", "registered", "transfer-timeout-ms", "2000"));
        MemorySegment attackerMemory = arena.allocate(2L * BLOCK, 4096);
        attackerMemory.fill(ATTACK);
        attacker.register(Allocation.host(attackerMemory));
        PreparedList own = attacker.prepareLocal(blocks(attackerMemory.address(), 0, 1));
        UcxMetadata real = UcxMetadata.decode(victim.localMetadata());
        UcxMetadata.Region region = real.regions().getFirst();
        byte[] key = keySource.equals("published") ? region.packedKey() : UcxMetadata.decode(attacker.localMetadata()).regions().getFirst().packedKey();
        UcxMetadata forged = new UcxMetadata(real.instanceId(), real.agentName(), real.workerAddress(), real.tcpSegmentBytes(),
                List.of(new UcxMetadata.Region(region.address(), (long) ALL_BLOCKS * BLOCK, key)));

        List<String> outcomes = new ArrayList<>();
        int[][] targets = {{8, 9}, {0, 1}, {2, 3}};
        for (TransferOp op : TransferOp.values()) {
            for (int[] target : targets) {
                outcomes.add(op + " of blocks " + target[0] + "-" + target[1] + ": " + attempt(attacker, forged, op, own, blocks(base, target)));
                for (int block = 0; block < ALL_BLOCKS; block++) {
                    assertBytes(victimMemory, block, victimByte(block), "victim block " + block + " after " + outcomes.getLast());
                }
                assertBytes(attackerMemory, 0, ATTACK, "attacker buffer after " + outcomes.getLast());
                assertBytes(attackerMemory, 1, ATTACK, "attacker buffer after " + outcomes.getLast());
            }
        }
        // what each attempt met, for the report: the victim's lanes, and how every access failed
        System.out.println("tls=" + tls + ", key " + keySource + ", victim lanes " + victim.transports() + ":\n  " + String.join("\n  ", outcomes));
        for (String outcome : outcomes) {
            assertNotEquals(-1, outcome.indexOf("refused"), outcome);
        }

        // the victim still serves a granted peer
        UcxTransferBackend legitimate = backend(tls, "legitimate", Map.of());
        MemorySegment legitimateMemory = arena.allocate(2L * BLOCK, 4096);
        legitimateMemory.fill((byte) 0x77);
        legitimate.register(Allocation.host(legitimateMemory));
        Peer toVictim = legitimate.connect(victim.localMetadata());
        long handle = legitimate.post(new TransferRequest().start(TransferOp.WRITE).local(legitimate.prepareLocal(blocks(legitimateMemory.address(), 0, 1)), new int[] {0, 1}).remote(legitimate.prepareRemote(toVictim, blocks(base, 2, 3)), new int[] {0, 1}).count(2).grantKey(WRITE_KEY));
        assertEquals(TransferStatus.DONE, awaitTerminal(legitimate, handle), () -> "granted WRITE: " + legitimate.failure(handle));
        assertBytes(victimMemory, 2, (byte) 0x77, "granted block 2");
        assertBytes(victimMemory, 3, (byte) 0x77, "granted block 3");
    }

    /** {@return how one one-sided access ended: "refused (...)" unless it reported success} */
    private static String attempt(TransferBackend attacker, UcxMetadata forged, TransferOp op, PreparedList own, DescriptorList remote)
    {
        long handle;
        try {
            Peer peer = attacker.connect(forged.encode());
            handle = attacker.post(new TransferRequest().start(op).local(own, new int[] {0, 1})
                    .remote(attacker.prepareRemote(peer, remote), new int[] {0, 1}).count(2));
        }
        catch (KvBridgeException e) {
            return "refused (" + e.code() + " before posting: " + e.getMessage() + ")";
        }
        TransferStatus status = awaitTerminal(attacker, handle);
        String outcome = status == TransferStatus.DONE ? "DONE" : "refused (" + status + ": " + attacker.failure(handle).map(Throwable::getMessage).orElse("") + ")";
        attacker.release(handle);
        return outcome;
    }
}
