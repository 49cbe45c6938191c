package io.kvbridge.backend.cudaipc;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The transport contract across two JVMs over the fake driver: the target runs in a child process,
 * its test memory is host memory its instance allocated (a memfd, the memory this transport exports
 * to other processes) and is mapped in the test's process at the same address, so every test of the
 * suite moves bytes between two processes and checks them as it does in one. The tests of its own
 * check that the target is another process, that the bytes cross through the transport, that a
 * failure there comes back as it would in one process, and that a dead target is reported at once.
 */
final class CudaIpcFakeTwoProcessConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return FakeCuda.factory();
    }

    @Override
    protected boolean targetInChildProcess()
    {
        return true;
    }

    @Test
    void theTargetIsAnotherProcessAndTheInitiatorReachesItsMemoryThroughTheTransport() throws IOException
    {
        long childPid = targetProcessId();
        assertNotEquals(ProcessHandle.current().pid(), childPid, "the target runs in a process of its own");
        assertTrue(ProcessHandle.of(childPid).map(ProcessHandle::isAlive).orElse(false), "the target's process is alive: " + childPid);
        assertEquals(List.of(ProcessHandle.current().pid()),
                ProcessHandle.of(childPid).flatMap(ProcessHandle::parent).map(ProcessHandle::pid).stream().toList(), "the target's process is a child of the test's");

        // a byte written here at the target's address is what the child's instance holds, and a
        // write from the initiator lands where the test reads it, announced to the child
        targetMemory.set(ValueLayout.JAVA_LONG, 5L * BLOCK_BYTES, 0x0123_4567_89AB_CDEFL);
        PreparedList local = initiator.prepareLocal(blocksOf(initiatorMemory, BLOCKS, BLOCK_BYTES));
        PreparedList remote = initiator.prepareRemote(targetPeer, blocksOf(targetMemory, BLOCKS, BLOCK_BYTES));
        long read = initiator.post(new TransferRequest().start(TransferOp.READ).local(local, new int[] {0}).remote(remote, new int[] {5}).count(1)
                .grantKey(GRANT_KEY));
        assertEquals(TransferStatus.DONE, awaitTerminal(initiator, read), () -> String.valueOf(initiator.failure(read)));
        initiator.release(read);
        assertEquals(0x0123_4567_89AB_CDEFL, initiatorMemory.get(ValueLayout.JAVA_LONG, 0), "the initiator read what the test wrote in the child's memory");
        long write = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {7}).remote(remote, new int[] {9}).count(1)
                .notification("crossed".getBytes(StandardCharsets.UTF_8)).grantKey(GRANT_KEY));
        Received received = awaitNotification(target, (sender, message) -> { });
        assertEquals("crossed", new String(received.message(), StandardCharsets.UTF_8));
        assertEquals(TransferStatus.DONE, awaitTerminal(initiator, write));
        initiator.release(write);
        assertEquals(-1, MemorySegment.mismatch(targetMemory, 9L * BLOCK_BYTES, 10L * BLOCK_BYTES, initiatorMemory, 7L * BLOCK_BYTES, 8L * BLOCK_BYTES));

        // the initiator moved those bytes through its own mapping of the child's memfd, which the
        // child passed over the control socket, not through the test's mapping at the same address
        String inode = memfdInodeAt(targetMemory.address());
        long mappingsOfIt = Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(line -> inodeOf(line).equals(inode)).count();
        assertTrue(mappingsOfIt >= 2, "the target's memfd (inode " + inode + ") is mapped here by the test and by the initiator's transport: " + mappingsOfIt);
    }

    @Test
    void aFailureInTheTargetProcessComesBackWithItsCodeAndMessage()
    {
        Allocation mine = Allocation.host(initiatorMemory);
        Allocation theirs = Allocation.host(targetMemory);
        String here = assertCode(ErrorCode.ALREADY_REGISTERED, () -> initiator.register(mine)).getMessage();
        String there = assertCode(ErrorCode.ALREADY_REGISTERED, () -> target.register(theirs)).getMessage();
        assertTrue(there.contains(target.agentName()), () -> "the message names the target: " + there);
        assertEquals(here.replace(mine.toString(), "ALLOCATION").replace(initiator.agentName(), "AGENT"),
                there.replace(theirs.toString(), "ALLOCATION").replace(target.agentName(), "AGENT"), "the same message as in one process");
    }

    @Test
    void aTargetProcessThatDiesIsReportedAtOnceAndTransfersToItFail() throws Exception
    {
        PreparedList local = initiator.prepareLocal(blocksOf(initiatorMemory, 1, BLOCK_BYTES));
        PreparedList remote = initiator.prepareRemote(targetPeer, blocksOf(targetMemory, 1, BLOCK_BYTES));
        ProcessHandle child = ProcessHandle.of(targetProcessId()).orElseThrow();
        assertTrue(child.destroyForcibly(), "SIGKILL sent to the target's process");
        child.onExit().get(deadline().toSeconds(), TimeUnit.SECONDS);
        long asked = System.nanoTime();
        IllegalStateException gone = assertThrows(IllegalStateException.class, target::localMetadata);
        assertTrue(gone.getMessage().contains("pid " + child.pid()) && gone.getMessage().contains("gone"), gone::getMessage);
        assertTrue(System.nanoTime() - asked < TimeUnit.SECONDS.toNanos(5), "a dead target is reported at once, not after the call deadline");
        TransferStatus outcome;
        try {
            long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {0}).remote(remote, new int[] {0})
                    .count(1).grantKey(GRANT_KEY));
            outcome = awaitTerminal(initiator, handle);
            initiator.release(handle);
        }
        catch (KvBridgeException refused) {
            outcome = TransferStatus.FAILED;
        }
        assertEquals(TransferStatus.FAILED, outcome, "a transfer to a dead process fails or is refused");
    }

    /**
     * The target closes while copies into its memory run in this process: its close returns only
     * once this process unmapped that memory, after the last copy, so nothing lands afterwards.
     */
    @Test
    void theTargetsCloseReturnsOnlyOnceNoCopyIntoItsMemoryRunsAnyMore() throws Exception
    {
        assumeTrue(FakeCuda.loaded(), "this test slows the fake driver's copies");
        PreparedList local = initiator.prepareLocal(blocksOf(initiatorMemory, BLOCKS, BLOCK_BYTES));
        PreparedList remote = initiator.prepareRemote(targetPeer, blocksOf(targetMemory, BLOCKS, BLOCK_BYTES));
        long opening = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {1}).remote(remote, new int[] {1}).count(1)
                .grantKey(GRANT_KEY));
        assertEquals(TransferStatus.DONE, awaitTerminal(initiator, opening), () -> String.valueOf(initiator.failure(opening)));
        initiator.release(opening);
        // every other block: 8 separate copies of 200 ms each, into the target's memory
        int[] even = new int[8];
        for (int i = 0; i < even.length; i++) {
            even[i] = 2 * i + 2;
        }
        FakeCuda.set("copy_delay_us", 200_000);
        try {
            long slow = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, even).remote(remote, even).count(even.length)
                    .grantKey(GRANT_KEY));
            Thread.sleep(100);
            target.close();
            MemorySegment atClose = Arena.ofAuto().allocate(targetMemory.byteSize()).copyFrom(targetMemory);
            Thread.sleep(even.length * 200L + 500);
            assertEquals(-1, targetMemory.mismatch(atClose), "bytes landed in the target's memory after its close returned");
            awaitTerminal(initiator, slow);
            initiator.release(slow);
        }
        finally {
            FakeCuda.set("copy_delay_us", 0);
        }
    }

    private static String memfdInodeAt(long address) throws IOException
    {
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            String[] range = line.substring(0, line.indexOf(' ')).split("-");
            if (Long.parseUnsignedLong(range[0], 16) == address) {
                assertTrue(line.contains("/memfd:"), () -> "the target's memory is mapped here from a memfd: " + line);
                return inodeOf(line);
            }
        }
        throw new AssertionError(String.format("nothing is mapped here at the target's address 0x%x", address));
    }

    private static String inodeOf(String mapsLine)
    {
        String[] fields = mapsLine.trim().split("\\s+");
        return fields.length > 4 ? fields[4] : "";
    }
}
