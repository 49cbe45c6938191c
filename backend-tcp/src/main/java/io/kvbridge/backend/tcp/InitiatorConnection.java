package io.kvbridge.backend.tcp;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferOp;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * This instance's connection to a peer it connected to: its transfers' frames and its
 * notifications go out in the order posted, and the peer's answers and READ data come back in
 * the same order, so the transfer an answer is for is always the oldest one waiting. What comes
 * back is checked against this side's own bookkeeping only: a run must be the next one of that
 * transfer, with its length, or the connection is closed.
 *
 * <p>Threads: the owner thread only, except {@link #awaitReady}.
 */
final class InitiatorConnection extends TcpConnection
{
    private final TcpPeer peer;
    private final Object readyLock = new Object();
    // read by awaitReady, to say why a peer that never challenged did not answer
    private volatile boolean challenged;
    private boolean acknowledged;
    private volatile String refusal;
    // set when the challenge came: what the answer's proof covers
    private byte[] targetNonce;
    private byte[] ownNonce;
    private long ownInstance;
    private String ownName;

    // transfers whose first frame went out, oldest first: their answers come in this order
    private TcpTransfer[] awaiting = new TcpTransfer[64];
    private long[] awaitingHandles = new long[64];
    private int awaitingHead;
    private int awaitingCount;
    // the transfer at the head of the write queue: how many of its frames went out
    private int headFrames;
    private boolean headCancelSent;
    private TcpTransfer dataFor;
    // the DATA frame being read is a READ's last run and answers it
    private boolean dataAnswers;

    InitiatorConnection(TcpOwnerLoop loop, SocketChannel channel, TcpPeer peer)
    {
        super(loop, channel);
        this.peer = peer;
        openStreams(FrameWriter.REQUEST_FRAME_BYTES);
    }

    @Override
    String peerName()
    {
        return peer.name();
    }

    TcpPeer peer()
    {
        return peer;
    }

    /** The socket is connected: the hello follows the target's challenge. */
    void connected(long instanceId, String agentName)
    {
        ownInstance = instanceId;
        ownName = agentName;
    }

    /** Answers the target's challenge with the hello, which proves the connection key where there is one. */
    private void hello(ByteBuffer in, int at)
    {
        targetNonce = new byte[TcpWire.NONCE_BYTES];
        in.get(at + TcpWire.CHALLENGE_NONCE_AT, targetNonce);
        ownNonce = TcpHandshake.nonce();
        byte[] name = ownName.getBytes(StandardCharsets.UTF_8);
        ByteBuffer hello = writer.control(TcpWire.HELLO_BYTES + name.length);
        hello.putInt(TcpWire.MAGIC).put(TcpWire.VERSION).put((byte) name.length).putShort((short) 0).putLong(ownInstance).putLong(peer.instanceId)
                .put(ownNonce).put(loop.handshake().helloMac(targetNonce, ownNonce, ownInstance, peer.instanceId, name)).put(name);
        writer.controlAdded(TcpWire.HELLO_BYTES + name.length);
    }

    /**
     * Waits for the peer's answer to the hello.
     *
     * @return null once accepted, else why not.
     */
    String awaitReady(long timeoutNanos) throws InterruptedException
    {
        long deadline = System.nanoTime() + timeoutNanos;
        synchronized (readyLock) {
            while (!acknowledged && closedReason() == null && refusal == null) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return "it did not answer within " + (timeoutNanos / 1_000_000) + " ms (connect-timeout-ms)" + (challenged ? ""
                            : "; it sent no challenge (a tcp transport of protocol version 2 or older sends none): run the same kvbridge version on both sides");
                }
                readyLock.wait(Math.max(1, left / 1_000_000));
            }
        }
        if (acknowledged && closedReason() == null) {
            return null;
        }
        if (refusal != null) {
            return refusal;
        }
        // a target closes a hello that does not prove its key without a word
        return loop.handshake().keyed() ? closedReason() + " before it answered the hello; a peer does so when the hello does not prove its"
                + " connection key: start both engines with the same shared secret" : closedReason();
    }

    private void signal()
    {
        synchronized (readyLock) {
            readyLock.notifyAll();
        }
    }

    @Override
    public int handshake(ByteBuffer in)
    {
        if (acknowledged) {
            return -1;
        }
        int at = in.position();
        if (!challenged) {
            if (in.remaining() < TcpWire.CHALLENGE_BYTES) {
                return 0;
            }
            challenged = true;
            boolean keyed = in.get(at + 5) == TcpWire.CHALLENGE_KEYED;
            if (in.getInt(at) != TcpWire.MAGIC || in.get(at + 4) != TcpWire.VERSION) {
                fail(String.format(Locale.ROOT, "it does not speak this tcp transport protocol (version %d): its first bytes are magic 0x%x, version %d",
                        TcpWire.VERSION, in.getInt(at), in.get(at + 4)), true);
            }
            else if (keyed != loop.handshake().keyed()) {
                fail(keyed ? "it requires a connection key, and this engine has none: start both engines with the same shared secret"
                        : "it has no connection key, and this engine requires one: start both engines with the same shared secret", false);
            }
            else {
                hello(in, at);
            }
            return TcpWire.CHALLENGE_BYTES;
        }
        if (in.remaining() < TcpWire.ACK_BYTES) {
            return 0;
        }
        byte result = in.get(at + 5);
        long instance = in.getLong(at + 8);
        if (in.getInt(at) != TcpWire.MAGIC || in.get(at + 4) != TcpWire.VERSION) {
            fail("it answered the hello with something that is not a tcp transport answer", true);
        }
        else if (!TcpHandshake.matches(loop.handshake().ackMac(targetNonce, ownNonce, instance, result), in, at + TcpWire.ACK_MAC_AT)) {
            fail("its answer does not prove the connection key: it is not an engine started with this engine's shared secret", true);
        }
        else if (result != TcpWire.ACK_OK) {
            fail(String.format(Locale.ROOT, "it is instance %x now, not the instance %x its metadata named; exchange metadata again", instance,
                    peer.instanceId), false);
        }
        else {
            acknowledged = true;
            signal();
        }
        return TcpWire.ACK_BYTES;
    }

    /** The handshake failed: connect() is told why; a peer that spoke another protocol is counted as a violation. */
    private void fail(String why, boolean violation)
    {
        refusal = why;
        if (violation) {
            violation(why);
        }
        else {
            close(why);
        }
        signal();
    }

    // ---- the write side ----

    /** Queues a posted transfer's frames. */
    void enqueue(TcpTransfer transfer)
    {
        writer.add(transfer, transfer.handle());
        flush();
    }

    /** Queues a notification. */
    void notification(byte[] message, int length)
    {
        ByteBuffer out = writer.control(TcpWire.NOTIFY_BYTES + length);
        out.put(TcpWire.NOTIFY).put(TcpWire.VERSION).putShort((short) 0).putInt(length).putLong(0).put(message, 0, length);
        writer.controlAdded(TcpWire.NOTIFY_BYTES + length);
    }

    /** The next frame of the transfer at the head of the write queue. */
    boolean nextFrame(TcpTransfer transfer, FrameWriter out, long queuedHandle)
    {
        if (transfer.handle() != queuedHandle || transfer.ended) {
            // released or failed while queued: frames already sent are called off
            if (headFrames > 0 && !headCancelSent) {
                headCancelSent = true;
                out.frame().put(TcpWire.CANCEL).put(TcpWire.VERSION).putShort((short) 0).putInt(0).putLong(queuedHandle);
                return true;
            }
            return false;
        }
        var copies = transfer.copies;
        int frames = transfer.op == TransferOp.WRITE ? copies.size() : transfer.readFrames();
        if (headFrames == frames) {
            return false;
        }
        if (headFrames == 0) {
            await(transfer);
        }
        ByteBuffer frame = out.frame();
        if (transfer.op == TransferOp.WRITE) {
            int run = headFrames;
            frame.put(TcpWire.WRITE).put(TcpWire.VERSION).put((byte) transfer.grantKeyLength).put((byte) 0).putInt(run).putInt(copies.size()).putInt(0)
                    .putLong(queuedHandle).putLong(copies.remoteAddress(run)).putLong(copies.length(run));
            key(frame, transfer);
            out.payload(transfer.localList.memory(copies.localRegion(run)), copies.localAddress(run), copies.length(run), transfer);
        }
        else {
            int first = headFrames * TcpWire.MAX_READ_RUNS;
            int here = Math.min(TcpWire.MAX_READ_RUNS, copies.size() - first);
            frame.put(TcpWire.READ).put(TcpWire.VERSION).put((byte) transfer.grantKeyLength).put((byte) 0).putInt(first).putInt(here).putInt(copies.size())
                    .putLong(queuedHandle);
            key(frame, transfer);
            for (int i = first; i < first + here; i++) {
                frame.putLong(copies.remoteAddress(i)).putLong(copies.length(i));
            }
        }
        headFrames++;
        return true;
    }

    /** Pads the header to the key, writes the key, pads to the header's end: no stale bytes leave. */
    private static void key(ByteBuffer frame, TcpTransfer transfer)
    {
        while (frame.position() < TcpWire.KEY_AT) {
            frame.put((byte) 0);
        }
        frame.put(transfer.grantKey, 0, transfer.grantKeyLength);
        while (frame.position() < TcpWire.WRITE_BYTES) {
            frame.put((byte) 0);
        }
    }

    /** The head transfer left the write queue. */
    void left()
    {
        headFrames = 0;
        headCancelSent = false;
    }

    private void await(TcpTransfer transfer)
    {
        if (awaitingCount == awaiting.length) {
            TcpTransfer[] grown = new TcpTransfer[awaitingCount * 2];
            long[] grownHandles = new long[awaitingCount * 2];
            for (int i = 0; i < awaitingCount; i++) {
                int at = (awaitingHead + i) & (awaitingCount - 1);
                grown[i] = awaiting[at];
                grownHandles[i] = awaitingHandles[at];
            }
            awaiting = grown;
            awaitingHandles = grownHandles;
            awaitingHead = 0;
        }
        int tail = (awaitingHead + awaitingCount) & (awaiting.length - 1);
        awaiting[tail] = transfer;
        awaitingHandles[tail] = transfer.handle();
        awaitingCount++;
    }

    // ---- the read side ----

    @Override
    public void header(byte type, ByteBuffer in, int at)
    {
        if (in.get(at + 1) != TcpWire.VERSION || (type != TcpWire.DATA && type != TcpWire.RESULT)) {
            violation("frame type " + type + " of version " + in.get(at + 1) + " towards the initiator");
            return;
        }
        long handle = in.getLong(at + 8);
        if (awaitingCount == 0 || awaitingHandles[awaitingHead] != handle) {
            violation(String.format(Locale.ROOT, "an answer for transfer %x, which is not the oldest one waiting", handle));
            return;
        }
        TcpTransfer transfer = awaiting[awaitingHead];
        boolean live = transfer.handle() == handle && !transfer.ended;
        if (type == TcpWire.DATA) {
            data(transfer, live, in, at);
            return;
        }
        popAwaiting();
        if (!live) {
            return;
        }
        byte result = in.get(at + 2);
        if (result == TcpWire.RESULT_OK) {
            if (transfer.op == TransferOp.READ) {
                // a READ that succeeded is answered by its last DATA frame
                loop.finish(transfer, new KvBridgeException(ErrorCode.TRANSFER_FAILED, String.format(Locale.ROOT,
                        "peer '%s' answered a READ of %d runs with a RESULT after %d of them", peer.name(), transfer.copies.size(), transfer.arrived)));
                violation("a RESULT answering a READ that succeeded");
                return;
            }
            done(transfer);
            return;
        }
        // answered before its payload is all out: the rest goes as zeros, since its memory is the caller's again once it ends
        writer.stopReading(transfer);
        loop.finish(transfer, refused(transfer, result, in.getInt(at + 4), in.getLong(at + 16), in.getLong(at + 24)));
    }

    /** A READ's run arrives, into its descriptors, or dropped when the transfer no longer waits for it. */
    private void data(TcpTransfer transfer, boolean live, ByteBuffer in, int at)
    {
        byte flag = in.get(at + 2);
        int run = in.getInt(at + 4);
        long length = in.getLong(at + 16);
        if ((flag != 0 && flag != TcpWire.DATA_LAST) || length <= 0) {
            violation(String.format(Locale.ROOT, "DATA of %d bytes with flag %d", length, flag));
            return;
        }
        dataAnswers = flag == TcpWire.DATA_LAST;
        if (!live) {
            reader.discard(length);
            return;
        }
        var copies = transfer.copies;
        if (transfer.op != TransferOp.READ || run != transfer.arrived || run >= copies.size() || length != copies.length(run)
                || dataAnswers != (run == copies.size() - 1)) {
            violation(String.format(Locale.ROOT, "DATA of run %d (%d bytes, %s) while the transfer waits for run %d of %d", run, length,
                    dataAnswers ? "last" : "not last", transfer.arrived, copies.size()));
            return;
        }
        dataFor = transfer;
        reader.toMemory(transfer.localList.memory(copies.localRegion(run)), copies.localAddress(run), length, transfer);
    }

    /** The oldest transfer waiting got its answer: it waits no more. {@return its handle then} */
    private long popAwaiting()
    {
        long handle = awaitingHandles[awaitingHead];
        awaiting[awaitingHead] = null;
        awaitingHead = (awaitingHead + 1) & (awaiting.length - 1);
        awaitingCount--;
        return handle;
    }

    /** A transfer ended DONE: its notification follows, written at the end of this read with those of other answers. */
    private void done(TcpTransfer transfer)
    {
        writer.stopReading(transfer);
        if (transfer.notification.present()) {
            notification(transfer.notification.bytes(), transfer.notification.length());
        }
        loop.finish(transfer, null);
    }

    private KvBridgeException refused(TcpTransfer transfer, byte result, int run, long address, long length)
    {
        String why = switch (result) {
            case TcpWire.RESULT_NO_GRANT -> transfer.grantKeyLength == 0 ? "no grant key was presented" : "it has no live grant under the key presented";
            case TcpWire.RESULT_OUTSIDE -> "no grant under the key presented covers that range for " + transfer.op;
            default -> "it could not complete the access";
        };
        ErrorCode code = result == TcpWire.RESULT_OUTSIDE || result == TcpWire.RESULT_NO_GRANT ? ErrorCode.NOT_GRANTED : ErrorCode.TRANSFER_FAILED;
        return new KvBridgeException(code, String.format(Locale.ROOT, "%s of %d runs was refused by peer '%s': run %d (%d bytes at its 0x%x): %s",
                transfer.op, transfer.copies.size(), peer.name(), run, length, address, why));
    }

    @Override
    public void bodyDone(ByteBuffer body)
    {
        if (dataFor != null) {
            dataFor.arrived++;
            dataFor = null;
        }
        if (dataAnswers) {
            // released or overdue while its last run arrived: it ended already, and this answer is dropped
            dataAnswers = false;
            TcpTransfer transfer = awaiting[awaitingHead];
            long handle = popAwaiting();
            if (transfer.handle() == handle && !transfer.ended) {
                done(transfer);
            }
        }
    }

    // ---- ending transfers early ----

    /**
     * Ends transfers that were released or ran past their deadline: their memory is no longer
     * touched (a payload being written continues as zeros, one being read is dropped), frames not
     * yet sent are called off, and their answers are dropped when they come.
     */
    void sweep(long now)
    {
        for (int i = 0; i < writer.queued(); i++) {
            if (writer.sourceAt(i) instanceof TcpTransfer transfer && transfer.handle() == writer.handleAt(i)) {
                check(transfer, now);
            }
        }
        for (int i = 0; i < awaitingCount; i++) {
            int at = (awaitingHead + i) & (awaiting.length - 1);
            TcpTransfer transfer = awaiting[at];
            if (transfer.handle() == awaitingHandles[at]) {
                check(transfer, now);
            }
        }
    }

    private void check(TcpTransfer transfer, long now)
    {
        if (transfer.ended) {
            return;
        }
        KvBridgeException failure = null;
        if (transfer.cancelled()) {
            failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "transfer was released before it finished");
        }
        else if (transfer.deadlineNanos != 0 && now - transfer.deadlineNanos > 0) {
            failure = new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, String.format(Locale.ROOT,
                    "%s of %d runs to peer '%s' (%s) did not finish within transfer-timeout-ms=%d", transfer.op, transfer.copies.size(), peer.name(),
                    peer.address, loop.options().transferTimeoutMillis()));
        }
        if (failure != null) {
            writer.stopReading(transfer);
            reader.stopWriting(transfer);
            if (dataFor == transfer) {
                dataFor = null;
            }
            loop.finish(transfer, failure);
        }
    }

    @Override
    void ended(String reason)
    {
        peer.markUnusable("its connection closed: " + reason);
        KvBridgeException failure = new KvBridgeException(ErrorCode.TRANSFER_FAILED, "peer '" + peer.name() + "' (" + peer.address + "): " + reason);
        for (int i = 0; i < writer.queued(); i++) {
            if (writer.sourceAt(i) instanceof TcpTransfer transfer && transfer.handle() == writer.handleAt(i) && !transfer.ended) {
                loop.finish(transfer, failure);
            }
        }
        while (awaitingCount > 0) {
            TcpTransfer transfer = awaiting[awaitingHead];
            if (transfer.handle() == awaitingHandles[awaitingHead] && !transfer.ended) {
                loop.finish(transfer, failure);
            }
            awaiting[awaitingHead] = null;
            awaitingHead = (awaitingHead + 1) & (awaiting.length - 1);
            awaitingCount--;
        }
        signal();
    }
}
