package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.backend.ucx.ffm.UcpAm;
import io.kvbridge.backend.ucx.ffm.UcpContext;
import io.kvbridge.backend.ucx.ffm.UcpEndpoint;
import io.kvbridge.backend.ucx.ffm.UcpStatus;
import io.kvbridge.backend.ucx.ffm.UcpWorker;
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
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

/**
 * A peer that lies and probes gets nothing with {@code access=granted}, over shared memory and over
 * TCP: the victim registers eight blocks followed by four it never registered, grants two for
 * WRITE and two for READ, and an attacker tries every way around the grants. Each attempt fails
 * with {@code NOT_GRANTED}, no byte of the victim changes outside what a grant allowed, no READ
 * brings the attacker a byte, the victim counts the refusals and names the attacker, and a
 * legitimate peer is served afterwards. Malformed active messages sent with the raw binding are
 * dropped and counted.
 */
@Timeout(120)
final class UcxHostilePeerTest extends UcxInstancesTest
{
    static final int BLOCK = 64 * 1024;
    static final int REGISTERED_BLOCKS = 8;
    static final int ALL_BLOCKS = 12;
    static final byte SENTINEL = (byte) 0x5A;
    static final byte ATTACK = (byte) 0x66;
    private static final long DEADLINE_NANOS = 30_000_000_000L;
    static final byte[] WRITE_KEY = "write-key-of-request-1".getBytes(StandardCharsets.UTF_8);
    private static final byte[] READ_KEY = "read-key-of-request-2".getBytes(StandardCharsets.UTF_8);
    private static final byte[] WRONG_KEY = "guessed-key".getBytes(StandardCharsets.UTF_8);


    private UcxTransferBackend backend(String tls, String name)
    {
        return backend(tls, name, Map.of());
    }

    private UcxTransferBackend backend(String tls, String name, Map<String, String> options)
    {
        return open(backends, tls, name, options);
    }

    /** Opens an instance over {@code tls} (TCP on loopback) under a unique agent name, closed with the test's others. */
    static UcxTransferBackend open(List<TransferBackend> into, String tls, String name, Map<String, String> options)
    {
        Map<String, String> config = new HashMap<>(options);
        config.put("tls", tls);
        if (tls.equals("tcp")) {
            config.put("net-devices", "lo");
            config.put(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true");
        }
        String agent = name + "-" + UUID.randomUUID();
        UcxTransferBackend backend = (UcxTransferBackend) new UcxBackendFactory().create(config, () -> agent);
        into.add(backend);
        return backend;
    }

    /** Skips with the reason when UCX did not give the lane asked for. */
    static void assumeLane(UcxTransferBackend backend, String tls)
    {
        String transports = backend.transports();
        boolean lane = tls.equals("tcp") ? transports.contains("tcp/") : transports.contains("memory");
        assumeTrue(lane, () -> "UCX selected no " + tls + " lane on this host (it selected: " + transports + ")");
    }

    static DescriptorList blocks(long base, int... blocks)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, blocks.length);
        for (int block : blocks) {
            builder.add(base + (long) block * BLOCK, BLOCK);
        }
        return builder.build();
    }

    private static int[] indices(int count)
    {
        int[] all = new int[count];
        for (int i = 0; i < count; i++) {
            all[i] = i;
        }
        return all;
    }


    /** Posts, waits and expects NOT_GRANTED, naming the victim. */
    private static void assertRefused(TransferBackend attacker, TransferOp op, PreparedList local, PreparedList remote, byte[] key, String what)
    {
        int count = local.size();
        long handle = attacker.post(new TransferRequest().start(op).local(local, indices(count)).remote(remote, indices(count)).count(count)
                .grantKey(key));
        TransferStatus status = awaitTerminal(attacker, handle);
        assertEquals(TransferStatus.FAILED, status, what + ": the transfer should have been refused");
        var failure = attacker.failure(handle).orElseThrow();
        assertEquals(ErrorCode.NOT_GRANTED, failure.code(), () -> what + ": " + failure.getMessage());
        assertTrue(failure.getMessage().contains("refused by peer 'victim-"), failure::getMessage);
        attacker.release(handle);
    }

    private static void assertDone(TransferBackend initiator, TransferOp op, PreparedList local, PreparedList remote, byte[] key, String what)
    {
        int count = local.size();
        long handle = initiator.post(new TransferRequest().start(op).local(local, indices(count)).remote(remote, indices(count)).count(count)
                .grantKey(key));
        TransferStatus status = awaitTerminal(initiator, handle);
        assertEquals(TransferStatus.DONE, status, () -> what + ": " + initiator.failure(handle).map(Throwable::getMessage).orElse(""));
        initiator.release(handle);
    }

    /** {@return what the victim's block holds before any attack: its number in registered blocks, else the sentinel} */
    static byte victimByte(int block)
    {
        return (byte) (block < REGISTERED_BLOCKS ? 0x10 + block : SENTINEL);
    }

    static void assertBytes(MemorySegment memory, int block, byte expected, String what)
    {
        MemorySegment slice = memory.asSlice((long) block * BLOCK, BLOCK);
        for (long i = 0; i < BLOCK; i++) {
            if (slice.get(ValueLayout.JAVA_BYTE, i) != expected) {
                fail(what + ": block " + block + " byte " + i + " is " + slice.get(ValueLayout.JAVA_BYTE, i) + ", expected " + expected);
            }
        }
    }

    static void fillBlock(MemorySegment memory, int block, byte value)
    {
        memory.asSlice((long) block * BLOCK, BLOCK).fill(value);
    }

    @ParameterizedTest(name = "tls={0}")
    @ValueSource(strings = {"sm", "tcp"})
    void anAttackerReachesNothingBeyondItsGrantsAndTheVictimKeepsServing(String tls)
    {
        UcxTransferBackend victim = backend(tls, "victim");
        assumeLane(victim, tls);
        UcxTransferBackend attacker = backend(tls, "attacker");
        MemorySegment victimMemory = arena.allocate((long) ALL_BLOCKS * BLOCK, 4096);
        for (int block = 0; block < ALL_BLOCKS; block++) {
            fillBlock(victimMemory, block, victimByte(block));
        }
        victim.register(Allocation.host(victimMemory.asSlice(0, (long) REGISTERED_BLOCKS * BLOCK)));
        long base = victimMemory.address();
        PreparedList writable = victim.prepareLocal(blocks(base, 2, 3));
        PreparedList readable = victim.prepareLocal(blocks(base, 4, 5));
        long writeGrant = victim.grant(WRITE_KEY, TransferOp.WRITE, writable, indices(2), 2);
        victim.grant(READ_KEY, TransferOp.READ, readable, indices(2), 2);

        MemorySegment attackerMemory = arena.allocate((long) ALL_BLOCKS * BLOCK, 4096);
        attackerMemory.fill(ATTACK);
        attacker.register(Allocation.host(attackerMemory));
        long own = attackerMemory.address();
        PreparedList two = attacker.prepareLocal(blocks(own, 0, 1));
        Peer peer = attacker.connect(victim.localMetadata());
        victim.connect(attacker.localMetadata());

        // (a) no key, (b) a wrong key: neither op reaches the granted blocks
        PreparedList grantedForWrite = attacker.prepareRemote(peer, blocks(base, 2, 3));
        PreparedList grantedForRead = attacker.prepareRemote(peer, blocks(base, 4, 5));
        assertRefused(attacker, TransferOp.WRITE, two, grantedForWrite, null, "WRITE without a key");
        assertRefused(attacker, TransferOp.READ, two, grantedForRead, null, "READ without a key");
        assertRefused(attacker, TransferOp.WRITE, two, grantedForWrite, WRONG_KEY, "WRITE with a wrong key");
        assertRefused(attacker, TransferOp.READ, two, grantedForRead, WRONG_KEY, "READ with a wrong key");
        // (c) the right keys, registered memory outside the grants
        assertRefused(attacker, TransferOp.WRITE, two, attacker.prepareRemote(peer, blocks(base, 0, 1)), WRITE_KEY, "WRITE outside the grant");
        assertRefused(attacker, TransferOp.READ, two, attacker.prepareRemote(peer, blocks(base, 6, 7)), READ_KEY, "READ outside the grant");
        // a run that starts inside the grant and runs past it
        assertRefused(attacker, TransferOp.WRITE, two, attacker.prepareRemote(peer, blocks(base, 3, 4)), WRITE_KEY, "WRITE across the grant's end");
        // (f) the READ key used for WRITE
        assertRefused(attacker, TransferOp.WRITE, two, grantedForRead, READ_KEY, "WRITE with the READ key");

        // (d) forged metadata: the attacker's copy of the victim's region now covers the unregistered blocks
        UcxMetadata real = UcxMetadata.decode(victim.localMetadata());
        UcxMetadata.Region region = real.regions().getFirst();
        UcxMetadata forged = new UcxMetadata(real.instanceId(), real.agentName(), real.workerAddress(), real.tcpSegmentBytes(),
                List.of(new UcxMetadata.Region(region.address(), (long) ALL_BLOCKS * BLOCK, region.packedKey())));
        Peer forgedPeer = attacker.connect(forged.encode());
        assertRefused(attacker, TransferOp.WRITE, two, attacker.prepareRemote(forgedPeer, blocks(base, 8, 9)), WRITE_KEY, "WRITE into unregistered memory");
        assertRefused(attacker, TransferOp.READ, two, attacker.prepareRemote(forgedPeer, blocks(base, 10, 11)), READ_KEY, "READ of unregistered memory");

        // the attacker's own buffer received nothing, and no victim byte changed
        for (int block = 0; block < ALL_BLOCKS; block++) {
            assertBytes(attackerMemory, block, ATTACK, "attacker buffer after refused READs");
            assertBytes(victimMemory, block, victimByte(block), "victim after refused accesses");
        }

        // (e) the write grant works while it lives (the check above could see a change), then not after revoke;
        // the refreshed metadata replaced the region the first lists were prepared against
        grantedForWrite = attacker.prepareRemote(forgedPeer, blocks(base, 2, 3));
        assertDone(attacker, TransferOp.WRITE, two, grantedForWrite, WRITE_KEY, "WRITE under a live grant");
        assertBytes(victimMemory, 2, ATTACK, "granted block 2 written");
        assertBytes(victimMemory, 3, ATTACK, "granted block 3 written");
        fillBlock(victimMemory, 2, (byte) 0x12);
        fillBlock(victimMemory, 3, (byte) 0x13);
        victim.revoke(writeGrant);
        assertRefused(attacker, TransferOp.WRITE, two, grantedForWrite, WRITE_KEY, "WRITE after revoke");
        assertBytes(victimMemory, 2, (byte) 0x12, "revoked block 2");
        assertBytes(victimMemory, 3, (byte) 0x13, "revoked block 3");

        // the WRITE after revoke came under a key revoked lately: refused like the others, counted apart
        int refused = 10;
        assertEquals(refused, victim.refusals(), "refusals the victim counted");
        assertEquals(1, victim.lateRefusals(), "late accesses the victim counted");
        Optional<String> problem = victim.peerReport();
        assertTrue(problem.isPresent() && problem.get().contains("attacker-") && problem.get().contains("refused " + refused + " peer accesses"),
                () -> "victim report: " + problem);
        assertEquals(Optional.empty(), victim.problem(), "refused peer accesses turned the victim's health");

        // a legitimate peer is still served, both ways
        UcxTransferBackend legitimate = backend(tls, "legitimate");
        MemorySegment legitimateMemory = arena.allocate(2L * BLOCK, 4096);
        legitimateMemory.fill((byte) 0x77);
        legitimate.register(Allocation.host(legitimateMemory));
        PreparedList legitimateLocal = legitimate.prepareLocal(blocks(legitimateMemory.address(), 0, 1));
        Peer toVictim = legitimate.connect(victim.localMetadata());
        byte[] legitimateKey = "legitimate-request".getBytes(StandardCharsets.UTF_8);
        victim.grant(legitimateKey, TransferOp.WRITE, victim.prepareLocal(blocks(base, 6, 7)), indices(2), 2);
        assertDone(legitimate, TransferOp.WRITE, legitimateLocal, legitimate.prepareRemote(toVictim, blocks(base, 6, 7)), legitimateKey, "legitimate WRITE");
        assertBytes(victimMemory, 6, (byte) 0x77, "legitimately written block 6");
        assertBytes(victimMemory, 7, (byte) 0x77, "legitimately written block 7");
        assertDone(legitimate, TransferOp.READ, legitimateLocal, legitimate.prepareRemote(toVictim, blocks(base, 4, 5)), READ_KEY, "legitimate READ");
        assertBytes(legitimateMemory, 0, (byte) 0x14, "legitimately read block 4");
        assertBytes(legitimateMemory, 1, (byte) 0x15, "legitimately read block 5");
        for (int block = REGISTERED_BLOCKS; block < ALL_BLOCKS; block++) {
            assertBytes(victimMemory, block, SENTINEL, "unregistered block at the end");
        }
    }

    @ParameterizedTest(name = "tls={0}")
    @ValueSource(strings = {"sm", "tcp"})
    void malformedActiveMessagesAreDroppedAndCounted(String tls)
    {
        UcxTransferBackend victim = backend(tls, "victim");
        assumeLane(victim, tls);
        MemorySegment victimMemory = arena.allocate(2L * BLOCK, 4096);
        victimMemory.fill(SENTINEL);
        victim.register(Allocation.host(victimMemory));
        byte[] key = "a-key".getBytes(StandardCharsets.UTF_8);
        victim.grant(key, TransferOp.WRITE, victim.prepareLocal(blocks(victimMemory.address(), 0, 1)), indices(2), 2);

        int sent = sendMalformed(tls, UcxMetadata.decode(victim.localMetadata()).workerAddress(), victimMemory.address());
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (victim.malformedMessages() < sent && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(sent, victim.malformedMessages(), "malformed messages the victim dropped");
        assertBytes(victimMemory, 0, SENTINEL, "victim after malformed WRITE headers");
        assertBytes(victimMemory, 1, SENTINEL, "victim after malformed WRITE headers");
        assertTrue(victim.peerReport().orElse("").contains("dropped " + sent + " malformed active messages"), () -> "report: " + victim.peerReport());
        assertEquals(Optional.empty(), victim.problem(), "malformed messages from a peer turned the victim's health");

        // and it still serves a peer that follows the protocol
        UcxTransferBackend legitimate = backend(tls, "legitimate");
        MemorySegment legitimateMemory = arena.allocate(2L * BLOCK, 4096);
        legitimateMemory.fill((byte) 0x77);
        legitimate.register(Allocation.host(legitimateMemory));
        Peer toVictim = legitimate.connect(victim.localMetadata());
        assertDone(legitimate, TransferOp.WRITE, legitimate.prepareLocal(blocks(legitimateMemory.address(), 0, 1)),
                legitimate.prepareRemote(toVictim, blocks(victimMemory.address(), 0, 1)), key, "legitimate WRITE after malformed messages");
        assertBytes(victimMemory, 0, (byte) 0x77, "legitimately written block");
    }

    /**
     * Sends headers no kvbridge instance sends from a bare UCX worker of this thread: too short, a
     * wrong version, a key length past the header, a run length that disagrees with the data, a
     * run index past the run count, message ids that are not kvbridge's. {@return how many were sent}
     */
    private static int sendMalformed(String tls, byte[] victimAddress, long target)
    {
        long context = rawContext(tls, "malformed-sender");
        long worker = UcpWorker.workerCreate(context, "malformed-sender");
        try (Arena scratch = Arena.ofConfined()) {
            long endpoint = UcpEndpoint.epCreate(worker, victimAddress, UcpEndpoint.newEndpointToken(), (token, status) -> { });
            MemorySegment param = UcpWorker.newRequestParam(scratch);
            UcpAm.setSend(param, UcpAm.SEND_FLAG_REPLY, 0);
            MemorySegment data = scratch.allocate(BLOCK);
            data.fill(ATTACK);
            List<MemorySegment> headers = new ArrayList<>();
            List<Integer> ids = new ArrayList<>();
            // too short for a WRITE
            headers.add(scratch.allocate(8));
            ids.add(UcxActiveMessages.AM_WRITE);
            // a WRITE of the right size with a wrong version
            headers.add(write(scratch, 9, 0, 1, target, BLOCK));
            ids.add(UcxActiveMessages.AM_WRITE);
            // a run length that disagrees with the data's
            headers.add(write(scratch, UcxActiveMessages.VERSION, 0, 1, target, 2L * BLOCK));
            ids.add(UcxActiveMessages.AM_WRITE);
            // a run index past the run count
            headers.add(write(scratch, UcxActiveMessages.VERSION, 5, 1, target, BLOCK));
            ids.add(UcxActiveMessages.AM_WRITE);
            // a READ request whose run list length disagrees with its count
            headers.add(scratch.allocate(UcxActiveMessages.READ_KEY));
            ids.add(UcxActiveMessages.AM_READ);
            // one of our ids with a garbage header
            headers.add(scratch.allocate(3));
            ids.add(UcxActiveMessages.AM_RESULT);
            for (int i = 0; i < headers.size(); i++) {
                MemorySegment header = headers.get(i);
                long request = UcpAm.sendNbx(endpoint, ids.get(i), header.address(), header.byteSize(), data.address(), BLOCK, param.address());
                awaitRequest(worker, request);
            }
            // ids that are not ours, up to the highest, in messages of one piece: one past UCX's
            // handler table (30000) crashed the whole process
            int[] foreign = {0, 1000, 30000, UcpAm.MAX_ID};
            for (int id : foreign) {
                awaitRequest(worker, UcpAm.sendNbx(endpoint, id, data.address(), 8, data.address(), 64, param.address()));
            }
            long flush = UcpEndpoint.epFlushNbx(endpoint, UcpWorker.newRequestParam(scratch));
            awaitRequest(worker, flush);
            long close = UcpEndpoint.epCloseNbx(endpoint, false, 0);
            awaitRequest(worker, close);
            return headers.size() + foreign.length;
        }
        finally {
            UcpWorker.workerDestroy(worker);
            UcpContext.cleanup(context);
        }
    }

    /** A bare UCX context for active messages on the lane asked for, outside any kvbridge instance. */
    private static long rawContext(String tls, String name)
    {
        // the settings of an instance on that lane: UCX aborts a receiver sent tcp pieces larger than its own segment
        Map<String, String> options = tls.equals("tcp") ? Map.of("tls", tls, "net-devices", "lo", UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true") : Map.of("tls", tls);
        long config = UcpContext.configRead(UcxOptions.parse(options).ucxOverrides(), UcxOptions.UCX_SPELLINGS);
        try {
            return UcpContext.init(config, UcpContext.FEATURE_AM, name);
        }
        finally {
            UcpContext.configRelease(config);
        }
    }

    /**
     * A process that learns a transfer's public handle (its number in {@code status()} calls) but
     * sees none of its messages cannot answer it: the handle on the wire differs in 32 keyed bits.
     * The target is a bare UCX worker that receives the WRITE and never answers (its handler drops it),
     * standing in for a peer that is slow to answer; it then sends a forged RESULT naming the
     * public handle. The transfer must not end DONE; it fails by its deadline, having written
     * nothing anyone checked.
     */
    @ParameterizedTest(name = "tls={0}")
    @ValueSource(strings = {"sm", "tcp"})
    void anAnswerForgedWithTheTransfersPublicHandleIsNotTaken(String tls)
    {
        UcxTransferBackend shape = backend(tls, "shape");
        assumeLane(shape, tls);
        MemorySegment targetMemory = arena.allocate(BLOCK, 4096);
        shape.register(Allocation.host(targetMemory));
        // eager, so the WRITE's send completes without the silent target taking part
        UcxTransferBackend initiator = backend(tls, "initiator", Map.of("transfer-timeout-ms", "1500", "eager-max", Integer.toString(BLOCK)));
        MemorySegment initiatorMemory = arena.allocate(BLOCK, 4096);
        initiatorMemory.fill((byte) 0x11);
        initiator.register(Allocation.host(initiatorMemory));

        long context = rawContext(tls, "silent-target");
        long worker = UcpWorker.workerCreate(context, "silent-target");
        try (Arena scratch = Arena.ofConfined()) {
            // UCX 1.13 dereferences a worker's handler table for an eager message in one piece, and a
            // worker without any handler crashes there (the whole WRITE is one piece of a 512 KiB tcp segment)
            UcpAm.setHandler(worker, UcxActiveMessages.AM_WRITE, UcpAm.stub((id, header, headerLength, data, length, param) -> UcpStatus.OK, arena));
            UcxMetadata real = UcxMetadata.decode(shape.localMetadata());
            UcxMetadata silent = new UcxMetadata(real.instanceId() + 1, "silent-target", UcpWorker.workerAddress(worker), real.tcpSegmentBytes(), real.regions());
            // the bare worker must progress for UCX's connection setup to finish: on a thread of its
            // own until connect() returns, then on this one (never both at once)
            var connected = new java.util.concurrent.atomic.AtomicBoolean();
            Thread progress = Thread.ofPlatform().start(() -> {
                while (!connected.get()) {
                    UcpWorker.workerProgress(worker);
                }
            });
            Peer toSilent;
            try {
                toSilent = initiator.connect(silent.encode());
            }
            finally {
                connected.set(true);
                joinQuietly(progress);
            }
            long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(initiator.prepareLocal(blocks(initiatorMemory.address(), 0)), indices(1)).remote(initiator.prepareRemote(toSilent, blocks(targetMemory.address(), 0)), indices(1)).count(1).grantKey(WRITE_KEY));

            long endpoint = UcpEndpoint.epCreate(worker, UcxMetadata.decode(initiator.localMetadata()).workerAddress(), UcpEndpoint.newEndpointToken(),
                    (token, status) -> { });
            MemorySegment result = scratch.allocate(UcxActiveMessages.RESULT_BYTES);
            result.set(ValueLayout.JAVA_BYTE, 0, UcxActiveMessages.VERSION);
            result.set(ValueLayout.JAVA_BYTE, 1, UcxActiveMessages.RESULT_OK);
            UcpAm.putLong(result, 8, handle);
            MemorySegment param = UcpWorker.newRequestParam(scratch);
            UcpAm.setSend(param, 0, 0);
            awaitRequest(worker, UcpAm.sendNbx(endpoint, UcxActiveMessages.AM_RESULT, result.address(), result.byteSize(), 0, 0, param.address()));
            awaitRequest(worker, UcpEndpoint.epFlushNbx(endpoint, UcpWorker.newRequestParam(scratch)));

            long deadline = System.nanoTime() + DEADLINE_NANOS;
            TransferStatus status;
            while (!(status = initiator.status(handle)).terminal() && System.nanoTime() < deadline) {
                UcpWorker.workerProgress(worker);
            }
            assertEquals(TransferStatus.FAILED, status, "a transfer answered only by a forged RESULT");
            var failure = initiator.failure(handle).orElseThrow();
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, failure.code(), failure::getMessage);
            initiator.release(handle);
            awaitRequest(worker, UcpEndpoint.epCloseNbx(endpoint, true, 0));
        }
        finally {
            UcpWorker.workerDestroy(worker);
            UcpContext.cleanup(context);
        }
    }

    /**
     * A peer whose admitted WRITE never completes cannot hold a revoke: a bare UCX worker over TCP
     * sends a well-formed rendezvous WRITE under a live key and then stops progressing, so the
     * victim's receive waits for data that never comes. Revoking the grant waits
     * {@code close-timeout-ms}, then cuts that peer off; its data, sent once it progresses again,
     * lands nowhere, and the victim serves a legitimate peer afterwards.
     */
    @org.junit.jupiter.api.Test
    void aRevokeCutsOffAPeerWhoseAccessOutlastsIt()
    {
        String tls = "tcp";
        UcxTransferBackend victim = backend(tls, "victim", Map.of("close-timeout-ms", "300"));
        assumeLane(victim, tls);
        MemorySegment victimMemory = arena.allocate(2L * BLOCK, 4096);
        victimMemory.fill(SENTINEL);
        victim.register(Allocation.host(victimMemory));
        long grant = victim.grant(WRITE_KEY, TransferOp.WRITE, victim.prepareLocal(blocks(victimMemory.address(), 0)), indices(1), 1);

        long context = rawContext(tls, "stalling-peer");
        long worker = UcpWorker.workerCreate(context, "stalling-peer");
        try (Arena scratch = Arena.ofConfined()) {
            long endpoint = UcpEndpoint.epCreate(worker, UcxMetadata.decode(victim.localMetadata()).workerAddress(), UcpEndpoint.newEndpointToken(),
                    (token, status) -> { });
            MemorySegment param = UcpWorker.newRequestParam(scratch);
            // set the connection up first (this message is refused for its length), so the WRITE's
            // rendezvous request leaves inside the send call, with no progress of this worker
            UcpAm.setSend(param, UcpAm.SEND_FLAG_REPLY, 0);
            MemorySegment shortHeader = scratch.allocate(8);
            awaitRequest(worker, UcpAm.sendNbx(endpoint, UcxActiveMessages.AM_WRITE, shortHeader.address(), 8, 0, 0, param.address()));
            awaitRequest(worker, UcpEndpoint.epFlushNbx(endpoint, UcpWorker.newRequestParam(scratch)));

            MemorySegment header = scratch.allocate(UcxActiveMessages.WRITE_KEY + WRITE_KEY.length);
            header.set(ValueLayout.JAVA_BYTE, 0, UcxActiveMessages.VERSION);
            header.set(ValueLayout.JAVA_BYTE, 1, (byte) WRITE_KEY.length);
            UcpAm.putInt(header, 8, 1);
            UcpAm.putLong(header, 16, 77);
            UcpAm.putLong(header, 32, victimMemory.address());
            UcpAm.putLong(header, 40, BLOCK);
            MemorySegment.copy(WRITE_KEY, 0, header, ValueLayout.JAVA_BYTE, UcxActiveMessages.WRITE_KEY, WRITE_KEY.length);
            MemorySegment data = scratch.allocate(BLOCK);
            data.fill(ATTACK);
            UcpAm.setSend(param, UcpAm.SEND_FLAG_REPLY | UcpAm.SEND_FLAG_RNDV, 0);
            long write = UcpAm.sendNbx(endpoint, UcxActiveMessages.AM_WRITE, header.address(), header.byteSize(), data.address(), BLOCK, param.address());
            assertTrue(write != 0 && !UcpStatus.isError(write), "a rendezvous WRITE should still be in progress: " + write);

            long deadline = System.nanoTime() + DEADLINE_NANOS;
            while (victim.grantedAccessesInFlight() == 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(1, victim.grantedAccessesInFlight(), "the victim admitted the stalled WRITE");

            long started = System.nanoTime();
            victim.revoke(grant);
            long revokeMillis = (System.nanoTime() - started) / 1_000_000;
            assertTrue(revokeMillis >= 250 && revokeMillis < 5_000, "revoke took " + revokeMillis + " ms with close-timeout-ms=300");
            System.out.printf("revoke with a stalled access returned after %d ms (close-timeout-ms=300)%n", revokeMillis);

            // the stalled peer progresses again: whatever it sends now lands nowhere
            long until = System.nanoTime() + 300_000_000L;
            while (System.nanoTime() < until && UcpWorker.requestStatus(write) == UcpStatus.IN_PROGRESS) {
                UcpWorker.workerProgress(worker);
            }
            long settle = System.nanoTime() + DEADLINE_NANOS;
            while (victim.grantedAccessesInFlight() > 0 && System.nanoTime() < settle) {
                UcpWorker.workerProgress(worker);
            }
            assertEquals(0, victim.grantedAccessesInFlight(), "the cut-off access ended");
            assertBytes(victimMemory, 0, SENTINEL, "victim block after the revoke cut the stalled writer off");
            awaitRequest(worker, UcpEndpoint.epCloseNbx(endpoint, true, 0));
            UcpWorker.requestFree(write);
        }
        finally {
            UcpWorker.workerDestroy(worker);
            UcpContext.cleanup(context);
        }

        // a legitimate peer, under a fresh grant, is served
        UcxTransferBackend legitimate = backend(tls, "legitimate");
        MemorySegment legitimateMemory = arena.allocate(BLOCK, 4096);
        legitimateMemory.fill((byte) 0x77);
        legitimate.register(Allocation.host(legitimateMemory));
        byte[] fresh = "fresh-key".getBytes(StandardCharsets.UTF_8);
        victim.grant(fresh, TransferOp.WRITE, victim.prepareLocal(blocks(victimMemory.address(), 1)), indices(1), 1);
        Peer toVictim = legitimate.connect(victim.localMetadata());
        assertDone(legitimate, TransferOp.WRITE, legitimate.prepareLocal(blocks(legitimateMemory.address(), 0)),
                legitimate.prepareRemote(toVictim, blocks(victimMemory.address(), 1)), fresh, "legitimate WRITE after the cut-off");
        assertBytes(victimMemory, 1, (byte) 0x77, "legitimately written block");
    }

    private static void joinQuietly(Thread thread)
    {
        try {
            thread.join();
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            fail("interrupted while the bare worker's progress thread ended");
        }
    }

    private static MemorySegment write(Arena scratch, int version, int run, int runs, long address, long length)
    {
        MemorySegment header = scratch.allocate(UcxActiveMessages.WRITE_KEY + 5);
        header.set(ValueLayout.JAVA_BYTE, 0, (byte) version);
        header.set(ValueLayout.JAVA_BYTE, 1, (byte) 5);
        UcpAm.putInt(header, 4, run);
        UcpAm.putInt(header, 8, runs);
        UcpAm.putLong(header, 32, address);
        UcpAm.putLong(header, 40, length);
        MemorySegment.copy("a-key".getBytes(StandardCharsets.UTF_8), 0, header, ValueLayout.JAVA_BYTE, UcxActiveMessages.WRITE_KEY, 5);
        return header;
    }

    private static void awaitRequest(long worker, long request)
    {
        if (request == 0 || UcpStatus.isError(request)) {
            return;
        }
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (UcpWorker.requestStatus(request) == UcpStatus.IN_PROGRESS) {
            if (System.nanoTime() > deadline) {
                fail("a raw UCX request did not complete within 30 s");
            }
            UcpWorker.workerProgress(worker);
        }
        UcpWorker.requestFree(request);
    }
}
