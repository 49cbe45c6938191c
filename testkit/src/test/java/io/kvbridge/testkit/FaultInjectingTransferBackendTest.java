package io.kvbridge.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
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
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

final class FaultInjectingTransferBackendTest
{
    private Arena arena;
    private TransferBackend sender;
    private TransferBackend receiver;
    private PreparedList local;
    private PreparedList remote;

    private void pair(FaultPlan senderPlan, FaultPlan receiverPlan)
    {
        TestingTransferBackendFactory factory = new TestingTransferBackendFactory();
        sender = new FaultInjectingTransferBackend(factory.create(Map.of(), () -> "sender-" + System.nanoTime()), senderPlan);
        receiver = new FaultInjectingTransferBackend(factory.create(Map.of(), () -> "receiver-" + System.nanoTime()), receiverPlan);
        MemorySegment source = arena.allocate(4096, 64);
        MemorySegment destination = arena.allocate(4096, 64);
        sender.register(Allocation.host(source));
        receiver.register(Allocation.host(destination));
        Peer peer = sender.connect(receiver.localMetadata());
        local = sender.prepareLocal(DescriptorList.builder(MemoryKind.HOST, 0, 1).add(source.address(), 4096).build());
        remote = sender.prepareRemote(peer, DescriptorList.builder(MemoryKind.HOST, 0, 1).add(destination.address(), 4096).build());
    }

    @BeforeEach
    void setUp()
    {
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown()
    {
        if (sender != null) {
            sender.close();
            receiver.close();
        }
        arena.close();
    }

    private long write(int id)
    {
        return sender.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {0}).remote(remote, new int[] {0}).count(1)
                .notification(("req-" + id).getBytes(StandardCharsets.US_ASCII)));
    }

    private TransferStatus settle(long handle)
    {
        long deadline = System.nanoTime() + 5_000_000_000L;
        TransferStatus status = sender.status(handle);
        while (!status.terminal() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            status = sender.status(handle);
        }
        return status;
    }

    private List<String> drainAll(int drains)
    {
        List<String> messages = new ArrayList<>();
        for (int i = 0; i < drains; i++) {
            try {
                Thread.sleep(5);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            receiver.drainNotifications((from, message) -> messages.add(new String(message, StandardCharsets.US_ASCII)));
        }
        return messages;
    }

    @Test
    void anInjectedProblemIsReportedWhileCallsStillWork()
    {
        pair(FaultPlan.none(3), FaultPlan.none(4));
        FaultInjectingTransferBackend faulty = (FaultInjectingTransferBackend) sender;
        assertEquals(Optional.empty(), faulty.problem());
        faulty.injectProblem("owner thread died");
        assertEquals(Optional.of("injected: owner thread died"), faulty.problem());
        assertEquals(TransferStatus.DONE, settle(write(1)));
        faulty.injectProblem(null);
        assertEquals(Optional.empty(), faulty.problem());
        faulty.injectProblem("owner thread died");
        faulty.close();
        assertTrue(faulty.problem().orElseThrow().contains("is closed"), "the wrapped transport's own problem comes first");
    }

    @Test
    void everyPostFailsWhenTheProbabilityIsOne()
    {
        pair(FaultPlan.none(2).withFailedPosts(1), FaultPlan.none(3));
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> write(1));
        assertEquals(ErrorCode.TRANSFER_FAILED, e.code());
        assertEquals(1, ((FaultInjectingTransferBackend) sender).counters().failedPosts);
    }

    @Test
    void erroredTransferFailsAndNeverNotifies()
    {
        pair(FaultPlan.none(4).withTransferErrors(1), FaultPlan.none(5));
        long handle = write(1);
        assertEquals(TransferStatus.FAILED, settle(handle));
        assertTrue(sender.failure(handle).orElseThrow().getMessage().contains("injected transfer error"));
        assertEquals(List.of(), drainAll(5));
    }

    @Test
    void stalledTransferStaysInProgressUntilReleased()
    {
        pair(FaultPlan.none(6).withStalls(1), FaultPlan.none(7));
        long handle = write(1);
        long until = System.nanoTime() + 200_000_000L;
        while (System.nanoTime() < until) {
            assertEquals(TransferStatus.IN_PROGRESS, sender.status(handle));
        }
        sender.release(handle);
        assertThrows(KvBridgeException.class, () -> sender.status(handle));
        assertEquals(List.of(), drainAll(5));
    }

    @Test
    void droppedAndDuplicatedNotificationsFollowTheSeed()
    {
        pair(FaultPlan.none(8), FaultPlan.none(9).withDrops(0.3).withDuplicates(0.3));
        for (int i = 0; i < 40; i++) {
            settle(write(i));
        }
        List<String> messages = drainAll(3);
        FaultInjectingTransferBackend.FaultCounters counters = ((FaultInjectingTransferBackend) receiver).counters();
        assertTrue(counters.droppedNotifications > 0 && counters.duplicatedNotifications > 0, "40 draws at 0.3 each inject both faults");
        assertEquals(40 - counters.droppedNotifications + counters.duplicatedNotifications, messages.size());
    }

    @Test
    void delayedNotificationsArriveLaterAndOutOfOrder()
    {
        pair(FaultPlan.none(10), FaultPlan.none(11).withDelays(0.5, 3));
        for (int i = 0; i < 20; i++) {
            settle(write(i));
        }
        List<String> first = drainAll(1);
        List<String> all = new ArrayList<>(first);
        all.addAll(drainAll(4));
        assertEquals(20, all.size(), "delays lose nothing");
        assertTrue(first.size() < 20, "some notifications were held back past the first drain");
        assertTrue(!all.equals(all.stream().sorted((a, b) -> Integer.compare(Integer.parseInt(a.substring(4)), Integer.parseInt(b.substring(4)))).toList()),
                "held-back notifications arrive behind later ones");
    }
}
