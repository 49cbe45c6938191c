package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class GrantsTest
{
    private static final InstanceGuard GUARD = new InstanceGuard("test", "agent");
    private static final long BASE = 1 << 20;
    private static final long BLOCK = 4096;

    /** Eight blocks of 4 KiB from {@link #BASE}, back to back. */
    private static final class Blocks extends OwnedPreparedList
    {
        Blocks()
        {
            super(GUARD, null, MemoryKind.HOST, 0, addresses(), lengths(), new int[8], new Registration[0]);
        }

        private static long[] addresses()
        {
            long[] addresses = new long[8];
            for (int i = 0; i < 8; i++) {
                addresses[i] = BASE + i * BLOCK;
            }
            return addresses;
        }

        private static long[] lengths()
        {
            long[] lengths = new long[8];
            java.util.Arrays.fill(lengths, BLOCK);
            return lengths;
        }
    }

    private static byte[] key(String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void coversOnlyTheGrantedBlocksForTheGrantedOperation()
    {
        Grants grants = new Grants("test 'agent'");
        grants.grant(key("req-1"), TransferOp.READ, new Blocks(), new int[] {5, 1, 2}, 3);
        Grants.Entry entry = grants.admit(key("req-1"), 5);
        assertNotNull(entry);
        assertEquals(1, grants.admitted());
        // blocks 1 and 2 merged into one range: a run across both is covered
        assertTrue(entry.covers(TransferOp.READ, BASE + BLOCK, 2 * BLOCK));
        assertTrue(entry.covers(TransferOp.READ, BASE + 5 * BLOCK + 100, 200));
        assertFalse(entry.covers(TransferOp.READ, BASE + 2 * BLOCK, 2 * BLOCK), "runs into ungranted block 3");
        assertFalse(entry.covers(TransferOp.READ, BASE, BLOCK), "block 0 was not granted");
        assertFalse(entry.covers(TransferOp.READ, BASE + 5 * BLOCK, BLOCK + 1), "one byte past block 5");
        assertFalse(entry.covers(TransferOp.READ, BASE + BLOCK - 1, 2), "one byte before block 1");
        assertFalse(entry.covers(TransferOp.WRITE, BASE + BLOCK, BLOCK), "granted for READ only");
        assertFalse(entry.covers(TransferOp.READ, Long.MAX_VALUE - 10, 100), "wraps around");
        assertFalse(entry.covers(TransferOp.READ, BASE + BLOCK, -1), "negative length");
        entry.done(grants);
        assertEquals(0, grants.admitted());
    }

    @Test
    void unknownAndRevokedKeysAdmitNothing()
    {
        Grants grants = new Grants("test 'agent'");
        long first = grants.grant(key("req-1"), TransferOp.WRITE, new Blocks(), new int[] {0}, 1);
        long second = grants.grant(key("req-1"), TransferOp.WRITE, new Blocks(), new int[] {3}, 1);
        assertNull(grants.admit(key("req-2"), 5));
        assertNull(grants.admit(key("req-1x"), 6));
        assertNull(grants.admit(key("req-1"), 0));
        assertTrue(grants.revoke(first, 0));
        Grants.Entry entry = grants.admit(key("req-1"), 5);
        assertFalse(entry.covers(TransferOp.WRITE, BASE, BLOCK), "revoked grant");
        assertTrue(entry.covers(TransferOp.WRITE, BASE + 3 * BLOCK, BLOCK), "the key's other grant stays");
        entry.done(grants);
        assertTrue(grants.revoke(second, 0));
        assertNull(grants.admit(key("req-1"), 5));
        assertEquals(0, grants.live());
        assertTrue(grants.revoke(second, 0), "revoking twice is harmless");
    }

    @Test
    void manyKeysSurviveGrowthAndDeletion()
    {
        Grants grants = new Grants("test 'agent'");
        long[] handles = new long[500];
        for (int i = 0; i < handles.length; i++) {
            handles[i] = grants.grant(key("r" + i), TransferOp.READ, new Blocks(), new int[] {i % 8}, 1);
        }
        for (int i = 0; i < handles.length; i += 2) {
            grants.revoke(handles[i], 0);
        }
        for (int i = 0; i < handles.length; i++) {
            Grants.Entry entry = grants.admit(key("r" + i), ("r" + i).length());
            if (i % 2 == 0) {
                assertNull(entry, "r" + i);
            }
            else {
                assertTrue(entry.covers(TransferOp.READ, BASE + (i % 8) * BLOCK, BLOCK), "r" + i);
                entry.done(grants);
            }
        }
        assertEquals(250, grants.live());
    }

    @Test
    void revokeWaitsForAdmittedAccesses() throws Exception
    {
        Grants grants = new Grants("test 'agent'");
        long handle = grants.grant(key("k"), TransferOp.READ, new Blocks(), new int[] {0}, 1);
        Grants.Entry entry = grants.admit(key("k"), 1);
        assertFalse(grants.revoke(handle, TimeUnit.MILLISECONDS.toNanos(20)), "an admitted access was still running");
        long again = grants.grant(key("k"), TransferOp.READ, new Blocks(), new int[] {0}, 1);
        Grants.Entry second = grants.admit(key("k"), 1);
        CompletableFuture<Boolean> revoked = CompletableFuture.supplyAsync(() -> grants.revoke(again, TimeUnit.SECONDS.toNanos(10)));
        Thread.sleep(50);
        assertFalse(revoked.isDone(), "revoke returned while an access was admitted");
        second.done(grants);
        assertTrue(revoked.get(10, TimeUnit.SECONDS));
        entry.done(grants);
    }

    @Test
    void aRevokeOutlastedByAnAccessHandsItsKeyToCutOff()
    {
        Grants grants = new Grants("test 'agent'");
        List<String> cutOff = new ArrayList<>();
        long idle = grants.grant(key("idle"), TransferOp.READ, new Blocks(), new int[] {0}, 1);
        grants.revoke(idle, 0, key -> cutOff.add(new String(key, StandardCharsets.UTF_8)));
        assertEquals(List.of(), cutOff, "no access was admitted: nobody to cut off");

        long busy = grants.grant(key("busy"), TransferOp.READ, new Blocks(), new int[] {0}, 1);
        Grants.Entry entry = grants.admit(key("busy"), 4);
        grants.revoke(busy, TimeUnit.MILLISECONDS.toNanos(20), key -> cutOff.add(new String(key, StandardCharsets.UTF_8)));
        assertEquals(List.of("busy"), cutOff, "the access outlasted the wait");
        assertNull(grants.admit(key("busy"), 4), "no access is admitted under the revoked grant");
        entry.done(grants);

        grants.revoke(busy, 0, key -> cutOff.add("again"));
        grants.revoke(TransferBackend.NO_GRANT, 0, key -> cutOff.add("none"));
        assertEquals(List.of("busy"), cutOff, "unknown handles are ignored");
    }

    @Test
    void refusalsAreCountedAndNamePeers()
    {
        Grants grants = new Grants("ucx 'victim'");
        assertTrue(grants.problem().isEmpty());
        grants.refused("mallory", "READ of 4096 bytes at 0x1000 under an unknown key");
        grants.refused("mallory", "WRITE of 1 byte at 0x2000 outside its grant");
        assertEquals(2, grants.refusals());
        String problem = grants.problem().orElseThrow();
        assertTrue(problem.contains("refused 2 peer accesses"), problem);
        assertTrue(problem.contains("'mallory': WRITE of 1 byte"), problem);
    }

    @Test
    void aPeersChosenNameReachesTheReportEscaped()
    {
        Grants grants = new Grants("tcp 'victim'");
        grants.refused("mallory\nkvbridge healthy\u001b[2J", "WRITE of 1 byte\r\n at 0x2000");
        String problem = grants.problem().orElseThrow();
        assertTrue(problem.contains("'mallory\\nkvbridge healthy\\u001b[2J': WRITE of 1 byte\\r\\n at 0x2000"), problem);
        assertFalse(problem.chars().anyMatch(Character::isISOControl), problem);
    }

    @Test
    void anAccessUnderALatelyRevokedKeyIsLateNotAProblem()
    {
        Grants grants = new Grants("ucx 'producer'");
        long handle = grants.grant(key("req-1"), TransferOp.READ, new Blocks(), new int[] {0}, 1);
        grants.revoke(handle, 0);
        byte[] buffer = java.util.Arrays.copyOf(key("req-1"), 64);
        grants.refusedKey("slow-consumer", buffer, 5, "READ of 4096 bytes under a key of 5 bytes: no live grant has that key");
        assertEquals(1, grants.lateRefusals());
        assertEquals(0, grants.refusals());
        assertTrue(grants.problem().isEmpty(), "a peer that came after its request ended is no attack");
        grants.refusedKey("mallory", key("req-2"), 5, "READ under a key never granted");
        assertEquals(1, grants.refusals());
        assertTrue(grants.problem().orElseThrow().contains("mallory"));
    }

    @Test
    void anAccessThatFindsSomeOfItsKeysGrantsRevokedIsLateToo()
    {
        // a request's grants (one per list of regions) are revoked one by one; an admitted access
        // whose range lay in one already gone is as late as one that finds the key gone
        Grants grants = new Grants("tcp 'producer'");
        long first = grants.grant(key("req-1"), TransferOp.READ, new Blocks(), new int[] {0}, 1);
        grants.grant(key("req-1"), TransferOp.READ, new Blocks(), new int[] {1}, 1);
        Grants.Entry entry = grants.admit(key("req-1"), 5);
        assertNotNull(entry);
        grants.revoke(first, 0);
        assertFalse(entry.covers(TransferOp.READ, BASE, BLOCK), "the revoked grant's block");
        assertTrue(entry.covers(TransferOp.READ, BASE + BLOCK, BLOCK), "the live grant's block");
        grants.refusedKey("slow-consumer", key("req-1"), 5, "READ of 4096 bytes under a key of 5 bytes: outside its grant for READ");
        entry.done(grants);
        assertEquals(1, grants.lateRefusals());
        assertEquals(0, grants.refusals());
        assertTrue(grants.problem().isEmpty(), () -> "problem: " + grants.problem());
        // a key none of whose grants went is no excuse for a range outside them
        grants.grant(key("req-2"), TransferOp.READ, new Blocks(), new int[] {2}, 1);
        grants.refusedKey("mallory", key("req-2"), 5, "READ outside its grant");
        assertEquals(1, grants.refusals());
    }

    @Test
    void badKeysAndIndicesAreRefused()
    {
        Grants grants = new Grants("test 'agent'");
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(KvBridgeException.class,
                () -> grants.grant(new byte[0], TransferOp.READ, new Blocks(), new int[] {0}, 1)).code());
        assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(KvBridgeException.class,
                () -> grants.grant(new byte[65], TransferOp.READ, new Blocks(), new int[] {0}, 1)).code());
        assertEquals(ErrorCode.INDEX_OUT_OF_RANGE, assertThrows(KvBridgeException.class,
                () -> grants.grant(key("k"), TransferOp.READ, new Blocks(), new int[] {8}, 1)).code());
        assertEquals(ErrorCode.INDEX_OUT_OF_RANGE, assertThrows(KvBridgeException.class,
                () -> grants.grant(key("k"), TransferOp.READ, new Blocks(), new int[] {0}, 2)).code());
    }
}
