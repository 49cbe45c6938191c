package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.backend.ucx.ffm.UcpContext;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** What the UCX transport adds to the common contract: its own allocations, metadata refresh, limits and timeouts. */
@Timeout(120)
final class UcxTransferBackendTest extends UcxInstancesTest
{
    private static final int BLOCKS = 16;
    private static final int BLOCK_BYTES = 64 * 1024;
    private static final long DEADLINE_NANOS = 30_000_000_000L;
    // the consumers grant their blocks for WRITE under this key (access=granted, the default)
    private static final byte[] KEY = "test-request".getBytes(StandardCharsets.UTF_8);


    private TransferBackend backend(String tls, String... options)
    {
        Map<String, String> config = new HashMap<>();
        config.put("tls", tls);
        if (tls.equals("tcp")) {
            config.put("net-devices", "lo");
            config.put(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true");
        }
        for (int i = 0; i < options.length; i += 2) {
            config.put(options[i], options[i + 1]);
        }
        String name = "test-" + UUID.randomUUID();
        TransferBackend backend = new UcxBackendFactory().create(config, () -> name);
        backends.add(backend);
        return backend;
    }

    private MemorySegment registered(TransferBackend backend, int seed)
    {
        MemorySegment memory = arena.allocate((long) BLOCKS * BLOCK_BYTES, 4096);
        TransferProcess.fill(memory, seed);
        backend.register(Allocation.host(memory));
        return memory;
    }

    private static DescriptorList blocksOf(long address, int blocks)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, blocks);
        for (int b = 0; b < blocks; b++) {
            builder.add(address + (long) b * BLOCK_BYTES, BLOCK_BYTES);
        }
        return builder.build();
    }

    /** Lets peers that present {@link #KEY} write every block at {@code address}. */
    private static void grantAll(TransferBackend target, long address)
    {
        target.grant(KEY, TransferOp.WRITE, target.prepareLocal(blocksOf(address, BLOCKS)), allBlocks(), BLOCKS);
    }

    private static int[] allBlocks()
    {
        int[] all = new int[BLOCKS];
        for (int i = 0; i < BLOCKS; i++) {
            all[i] = i;
        }
        return all;
    }

    /** A producer connected to a consumer, each with registered memory, and lists over all blocks. */
    private record Pair(TransferBackend producer, TransferBackend consumer, MemorySegment source, MemorySegment destination, Peer peer,
            PreparedList local, PreparedList remote)
    {
    }

    private Pair pair(String tls, String... producerOptions)
    {
        return pair(tls, new String[0], producerOptions);
    }

    private Pair pair(String tls, String[] consumerOptions, String... producerOptions)
    {
        TransferBackend producer = backend(tls, producerOptions);
        TransferBackend consumer = backend(tls, consumerOptions);
        MemorySegment source = registered(producer, 1);
        MemorySegment destination = registered(consumer, 0);
        grantAll(consumer, destination.address());
        Peer peer = producer.connect(consumer.localMetadata());
        return new Pair(producer, consumer, source, destination, peer, producer.prepareLocal(blocksOf(source.address(), BLOCKS)),
                producer.prepareRemote(peer, blocksOf(destination.address(), BLOCKS)));
    }


    private static KvBridgeException assertCode(ErrorCode code, org.junit.jupiter.api.function.Executable executable)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, executable);
        assertEquals(code, e.code(), e::getMessage);
        return e;
    }

    @Test
    void memoryTheTransportAllocatesIsRegisteredMovedAndFreed()
    {
        TransferBackend producer = backend("sm");
        TransferBackend consumer = backend("sm");
        long bytes = (long) BLOCKS * BLOCK_BYTES;
        Allocation source = producer.allocate(bytes, MemoryKind.HOST, 0);
        Allocation destination = consumer.allocate(bytes, MemoryKind.HOST, 0);
        assertEquals(new BackendResources(1, 0, 0, 0), producer.resources());
        MemorySegment sourceBytes = MemorySegment.ofAddress(source.address()).reinterpret(bytes);
        MemorySegment destinationBytes = MemorySegment.ofAddress(destination.address()).reinterpret(bytes);
        TransferProcess.fill(sourceBytes, 1);
        TransferProcess.fill(destinationBytes, 0);
        grantAll(consumer, destination.address());
        Peer peer = producer.connect(consumer.localMetadata());
        PreparedList local = producer.prepareLocal(blocksOf(source.address(), BLOCKS));
        PreparedList remote = producer.prepareRemote(peer, blocksOf(destination.address(), BLOCKS));
        long handle = producer.post(new TransferRequest().start(TransferOp.WRITE).local(local, allBlocks()).remote(remote, allBlocks()).count(BLOCKS)
                .notification("ready".getBytes(StandardCharsets.UTF_8)).grantKey(KEY));
        assertEquals(TransferStatus.DONE, awaitTerminal(producer, handle), () -> producer.failure(handle).toString());
        producer.release(handle);
        assertEquals(-1, sourceBytes.mismatch(destinationBytes));
        List<String> received = new ArrayList<>();
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (received.isEmpty() && System.nanoTime() < deadline) {
            consumer.drainNotifications((sender, message) -> received.add(sender + ":" + new String(message, StandardCharsets.UTF_8)));
        }
        assertEquals(List.of(producer.agentName() + ":ready"), received);
        producer.deregister(source);
        assertEquals(0, producer.resources().registrations());
        assertCode(ErrorCode.NOT_REGISTERED, () -> producer.deregister(source));
    }

    @Test
    void allocationsStartPagesIntoTheirMappingUnlessToldNotTo() throws IOException
    {
        long bytes = 4L << 20;
        Allocation plain = backend("sm", "stagger-allocations", "false").allocate(bytes, MemoryKind.HOST, 0);
        assertEquals(0, offsetInMapping(plain.address()), "with stagger-allocations=false the memory starts where UCX mapped it");
        TransferBackend backend = backend("sm");
        Set<Long> offsets = new HashSet<>();
        for (int i = 0; i < 3; i++) {
            Allocation allocation = backend.allocate(bytes, MemoryKind.HOST, 0);
            long offset = offsetInMapping(allocation.address());
            assertTrue(offset >= AllocationStagger.MIN_PAGES * AllocationStagger.PAGE_BYTES && offset <= AllocationStagger.MAX_PAGES * AllocationStagger.PAGE_BYTES
                    && offset % AllocationStagger.PAGE_BYTES == 0, () -> allocation + " starts " + offset + " bytes into its mapping");
            offsets.add(offset);
            // every byte asked for is there, up to the last
            MemorySegment memory = MemorySegment.ofAddress(allocation.address()).reinterpret(bytes);
            memory.fill((byte) 7);
            assertEquals(7, memory.get(ValueLayout.JAVA_BYTE, bytes - 1));
        }
        assertEquals(3, offsets.size(), "successive allocations take different offsets: " + offsets);
    }

    // how far into the mapping that holds it an address lies, from /proc/self/maps
    private static long offsetInMapping(long address) throws IOException
    {
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            String[] range = line.substring(0, line.indexOf(' ')).split("-");
            long start = Long.parseUnsignedLong(range[0], 16);
            long end = Long.parseUnsignedLong(range[1], 16);
            if (Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0) {
                return address - start;
            }
        }
        return fail("no mapping holds 0x" + Long.toHexString(address));
    }

    @Test
    void onlyHostMemoryOfPositiveSizeIsAllocated()
    {
        TransferBackend backend = backend("sm");
        assertCode(ErrorCode.MEMORY_KIND_UNSUPPORTED, () -> backend.allocate(4096, MemoryKind.DEVICE, 0));
        assertCode(ErrorCode.INVALID_ARGUMENT, () -> backend.allocate(0, MemoryKind.HOST, 0));
    }

    @Test
    void deviceMemoryIsRefused()
    {
        TransferBackend backend = backend("sm");
        KvBridgeException e = assertCode(ErrorCode.MEMORY_KIND_UNSUPPORTED, () -> backend.register(new Allocation(0x10000, 4096, MemoryKind.DEVICE, 0)));
        assertTrue(e.getMessage().contains("host memory only"), e.getMessage());
        assertCode(ErrorCode.MEMORY_KIND_UNSUPPORTED, () -> backend.prepareLocal(DescriptorList.builder(MemoryKind.DEVICE, 0, 1).add(0x10000, 64).build()));
    }

    @Test
    void newerMetadataRefreshesTheSamePeer()
    {
        TransferBackend producer = backend("sm");
        TransferBackend consumer = backend("sm");
        MemorySegment source = registered(producer, 1);
        MemorySegment first = registered(consumer, 0);
        Peer peer = producer.connect(consumer.localMetadata());
        PreparedList local = producer.prepareLocal(blocksOf(source.address(), BLOCKS));
        PreparedList intoFirst = producer.prepareRemote(peer, blocksOf(first.address(), BLOCKS));
        MemorySegment second = registered(consumer, 0);
        grantAll(consumer, first.address());
        grantAll(consumer, second.address());
        assertCode(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, () -> producer.prepareRemote(peer, blocksOf(second.address(), BLOCKS)));
        assertSame(peer, producer.connect(consumer.localMetadata()), "connecting again refreshes the connected peer");
        PreparedList intoSecond = producer.prepareRemote(peer, blocksOf(second.address(), BLOCKS));
        for (PreparedList remote : List.of(intoFirst, intoSecond)) {
            long handle = producer.post(new TransferRequest().start(TransferOp.WRITE).local(local, allBlocks()).remote(remote, allBlocks())
                    .count(BLOCKS).grantKey(KEY));
            assertEquals(TransferStatus.DONE, awaitTerminal(producer, handle), () -> producer.failure(handle).toString());
            producer.release(handle);
        }
        assertEquals(-1, source.mismatch(first));
        assertEquals(-1, source.mismatch(second));
        consumer.deregister(Allocation.host(first));
        producer.connect(consumer.localMetadata());
        KvBridgeException e = assertCode(ErrorCode.NOT_REGISTERED, () -> producer.post(new TransferRequest().start(TransferOp.WRITE).local(local, allBlocks()).remote(intoFirst, allBlocks()).count(BLOCKS).grantKey(KEY)));
        assertTrue(e.getMessage().contains("no longer advertises"), e.getMessage());
    }

    @Test
    void malformedMetadataIsRefused()
    {
        TransferBackend backend = backend("sm");
        assertCode(ErrorCode.PROTOCOL_ERROR, () -> backend.connect(new byte[] {1, 2, 3}));
        byte[] valid = backend("sm").localMetadata();
        assertCode(ErrorCode.PROTOCOL_ERROR, () -> backend.connect(java.util.Arrays.copyOf(valid, valid.length - 1)));
        assertEquals(0, backend.resources().peers());
    }

    @Test
    void peersWithoutACommonTransportCannotConnect()
    {
        TransferBackend overTcp = backend("tcp");
        TransferBackend overSharedMemory = backend("sm");
        KvBridgeException e = assertCode(ErrorCode.PEER_UNKNOWN, () -> overTcp.connect(overSharedMemory.localMetadata()));
        assertTrue(e.getMessage().contains("tls=tcp"), e.getMessage());
    }

    @Test
    void peersWithDifferentTcpSegmentsAreRefusedEitherWay()
    {
        TransferBackend standard = backend("tcp");
        TransferBackend larger = backend("tcp", "tcp-segment", "1048576");
        for (TransferBackend[] pair : new TransferBackend[][] {{standard, larger}, {larger, standard}}) {
            KvBridgeException e = assertCode(ErrorCode.CONFIG_INVALID, () -> pair[0].connect(pair[1].localMetadata()));
            assertTrue(e.getMessage().contains("segments of " + (pair[1] == larger ? 1048576 : 524288) + " bytes"), e.getMessage());
            assertTrue(e.getMessage().contains("the same tcp-segment option"), e.getMessage());
            assertEquals(0, pair[0].resources().peers());
        }
        // the same setting on both sides connects; an instance that leaves TCP out publishes no segment
        TransferBackend alsoLarger = backend("tcp", "tcp-segment", "1048576");
        larger.connect(alsoLarger.localMetadata());
        assertEquals(1, larger.resources().peers());
        assertEquals(0, UcxMetadata.decode(backend("sm").localMetadata()).tcpSegmentBytes());
        assertEquals(UcxOptions.parse(Map.of("tls", "tcp", UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true")).tcpSegmentBytes(), UcxMetadata.decode(standard.localMetadata()).tcpSegmentBytes());
    }

    @Test
    void oversizedNotificationsAreRefused()
    {
        Pair pair = pair("sm");
        byte[] tooLarge = new byte[UcxTransferBackend.MAX_NOTIFICATION_BYTES + 1];
        assertCode(ErrorCode.INVALID_ARGUMENT, () -> pair.producer().notify(pair.peer(), tooLarge));
        assertCode(ErrorCode.INVALID_ARGUMENT, () -> pair.producer().post(new TransferRequest().start(TransferOp.WRITE).local(pair.local(), new int[] {0}).remote(pair.remote(), new int[] {0}).count(1).notification(tooLarge)));
        assertEquals(0, pair.producer().resources().transfers());
    }

    @Test
    void postsBeyondMaxInFlightAreRefusedUntilAHandleIsReleased()
    {
        Pair pair = pair("sm", "max-in-flight", "1");
        TransferBackend producer = pair.producer();
        long first = producer.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local(), allBlocks()).remote(pair.remote(), allBlocks())
                .count(BLOCKS).grantKey(KEY));
        KvBridgeException e = assertCode(ErrorCode.TRANSFER_FAILED,
                () -> producer.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local(), allBlocks()).remote(pair.remote(), allBlocks())
                        .count(BLOCKS).grantKey(KEY)));
        assertTrue(e.getMessage().contains("max-in-flight=1"), e.getMessage());
        assertEquals(TransferStatus.DONE, awaitTerminal(producer, first), () -> producer.failure(first).toString());
        producer.release(first);
        long second = producer.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local(), allBlocks()).remote(pair.remote(), allBlocks())
                .count(BLOCKS).grantKey(KEY));
        assertEquals(TransferStatus.DONE, awaitTerminal(producer, second), () -> producer.failure(second).toString());
        producer.release(second);
        assertEquals(-1, pair.source().mismatch(pair.destination()));
    }

    @Test
    void aDisconnectedPeerCanNoLongerBeUsed()
    {
        TransferBackend producer = backend("tcp");
        TransferBackend consumer = backend("tcp");
        MemorySegment destination = registered(consumer, 0);
        grantAll(consumer, destination.address());
        Peer peer = producer.connect(consumer.localMetadata());
        producer.disconnect(peer);
        producer.disconnect(peer);
        assertCode(ErrorCode.PEER_UNKNOWN, () -> producer.notify(peer, new byte[] {1}));
        assertCode(ErrorCode.PEER_UNKNOWN, () -> producer.prepareRemote(peer, blocksOf(destination.address(), 1)));
        assertEquals(0, producer.resources().peers());
    }

    @ParameterizedTest(name = "access={0}")
    @ValueSource(strings = {"registered", "granted"})
    void aTransferToAPeerThatWentAwayFailsInTime(String access)
    {
        // the consumer never connects back, so it cannot say goodbye
        Pair pair = pair("sm", new String[] {"access", access}, "transfer-timeout-ms", "300", "access", access);
        TransferBackend producer = pair.producer();
        PreparedList local = pair.local();
        PreparedList remote = pair.remote();
        pair.consumer().close();
        long started = System.nanoTime();
        long handle = producer.post(new TransferRequest().start(TransferOp.WRITE).local(local, allBlocks()).remote(remote, allBlocks()).count(BLOCKS)
                .grantKey(KEY));
        assertEquals(TransferStatus.FAILED, awaitTerminal(producer, handle));
        long elapsedMillis = (System.nanoTime() - started) / 1_000_000;
        KvBridgeException failure = producer.failure(handle).orElseThrow();
        if (access.equals("registered") && UcpContext.version().startsWith("1.13.")) {
            // on UCX 1.13, unpacking the consumer's keys set up lanes that outlive it: only the timeout ends the transfer
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, failure.code(), failure::getMessage);
        }
        else {
            // a granted endpoint, and UCX 1.22's registered one, attach the consumer's shared memory when they first send, and find it gone
            assertTrue(failure.code() == ErrorCode.DEADLINE_EXCEEDED || failure.code() == ErrorCode.TRANSFER_FAILED, failure::getMessage);
        }
        if (failure.code() == ErrorCode.DEADLINE_EXCEEDED) {
            assertTrue(elapsedMillis >= 300, () -> "failed after " + elapsedMillis + " ms");
        }
        assertTrue(elapsedMillis < 10_000, () -> "failed after " + elapsedMillis + " ms");
        producer.release(handle);
        assertCode(ErrorCode.PEER_UNKNOWN, () -> producer.post(new TransferRequest().start(TransferOp.WRITE).local(local, allBlocks())
                .remote(remote, allBlocks()).count(BLOCKS).grantKey(KEY)));
    }

    @Test
    void deregisteringDuringATransferLetsItEndAndUnmapsAfterwards()
    {
        Pair pair = pair("tcp");
        TransferBackend producer = pair.producer();
        long handle = producer.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local(), allBlocks()).remote(pair.remote(), allBlocks())
                .count(BLOCKS).grantKey(KEY));
        producer.deregister(Allocation.host(pair.source()));
        assertTrue(awaitTerminal(producer, handle).terminal());
        producer.release(handle);
        assertEquals(new BackendResources(0, 2, 1, 0), producer.resources());
        assertCode(ErrorCode.NOT_REGISTERED, () -> producer.post(new TransferRequest().start(TransferOp.WRITE).local(pair.local(), allBlocks())
                .remote(pair.remote(), allBlocks()).count(BLOCKS).grantKey(KEY)));
    }
}
