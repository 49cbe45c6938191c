package io.kvbridge.backend.tcp;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.Grants;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;

/**
 * A peer's connection to this instance, the side that holds the memory. Every header is untrusted:
 * a frame that breaks the protocol closes the connection. A WRITE's run lands in this side's memory
 * only after its key was admitted ({@link Grants#admit}) and the grant covers the run's range for
 * WRITE; otherwise its bytes are read and dropped. A READ's runs are all checked before any byte
 * leaves. Each transfer is answered once, after its last run, in the order transfers came.
 *
 * <p>Threads: the owner thread only.
 */
final class TargetConnection extends TcpConnection
{
    private static final byte NONE = 0;
    private static final byte WRITE_RUN = 1;
    private static final byte READ_LIST = 2;
    private static final byte NOTIFICATION = 3;
    /** Answer bytes queued unwritten at which this side stops reading the peer's requests. */
    static final int BACKLOG_BYTES = 4 << 20;
    /** READs checked and queued unsent at which this side stops reading: each holds its run list and its grant. */
    static final int BACKLOG_READS = 4096;

    private final long acceptedNanos;
    private final InetAddress address;
    private String peerName;
    private boolean ready;
    private long establishedNanos;
    // a frame came after the hello: a peer at work, never displaced for a newcomer
    private boolean requested;
    // until the hello is verified: this side's nonce and the hello read so far (heap, a few hundred bytes)
    private byte[] challengeNonce;
    private ByteBuffer hello;
    // the transfer whose frames are arriving: frames of one transfer come together
    private TcpExchange receiving;
    private byte body = NONE;
    private int listedRuns;
    private TcpExchange[] pool = new TcpExchange[4];
    private int pooled;

    TargetConnection(TcpOwnerLoop loop, SocketChannel channel, InetSocketAddress remote)
    {
        super(loop, channel);
        this.acceptedNanos = System.nanoTime();
        this.address = remote.getAddress();
        this.peerName = "an unidentified peer at " + remote;
        this.hello = ByteBuffer.allocate(TcpWire.HELLO_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }

    InetAddress address()
    {
        return address;
    }

    /** {@return true while a verified peer has sent nothing since its hello, for longer than {@code graceNanos}} */
    boolean idleSinceHello(long now, long graceNanos)
    {
        return ready && !requested && now - establishedNanos > graceNanos;
    }

    /** {@return true once a byte of the hello arrived} */
    boolean helloBegun()
    {
        return ready || hello.position() > 0;
    }

    /**
     * Sends the challenge: the first bytes on a fresh socket, which its buffer always takes whole.
     *
     * @return false when the socket did not take it; the caller closes the connection.
     */
    boolean challenge() throws IOException
    {
        challengeNonce = TcpHandshake.nonce();
        ByteBuffer out = ByteBuffer.allocate(TcpWire.CHALLENGE_BYTES).order(ByteOrder.LITTLE_ENDIAN).putInt(TcpWire.MAGIC).put(TcpWire.VERSION)
                .put(loop.handshake().keyed() ? TcpWire.CHALLENGE_KEYED : 0).put(TcpWire.CHALLENGE_NONCE_AT, challengeNonce);
        out.clear();
        return channel.write(out) == TcpWire.CHALLENGE_BYTES;
    }

    /**
     * Reads the hello, never a byte past it, and verifies it before anything is answered or any
     * stream buffer is made: a peer that does not prove the connection key learns nothing, not even
     * this instance's id, and is closed without a word.
     */
    @Override
    void readBeforeStreams() throws IOException
    {
        while (!ready && !closed()) {
            int read = channel.read(hello);
            if (read < 0) {
                loop.rejected(this, "it closed the connection before its hello was whole (" + hello.position() + " bytes)");
                close("the peer closed the connection before its hello");
                return;
            }
            if (hello.hasRemaining()) {
                return;
            }
            if (hello.capacity() == TcpWire.HELLO_BYTES) {
                int nameBytes = hello.get(5) & 0xff;
                if (hello.getInt(0) != TcpWire.MAGIC || hello.get(4) != TcpWire.VERSION || nameBytes == 0) {
                    reject(String.format(Locale.ROOT, "a hello of magic 0x%x, version %d, name of %d bytes", hello.getInt(0), hello.get(4), nameBytes));
                    return;
                }
                hello = ByteBuffer.allocate(TcpWire.HELLO_BYTES + nameBytes).order(ByteOrder.LITTLE_ENDIAN).put(hello.flip());
                continue;
            }
            verify();
        }
    }

    private void verify()
    {
        long from = hello.getLong(8);
        long to = hello.getLong(16);
        byte[] initiatorNonce = new byte[TcpWire.NONCE_BYTES];
        hello.get(TcpWire.HELLO_NONCE_AT, initiatorNonce);
        byte[] name = new byte[hello.capacity() - TcpWire.HELLO_BYTES];
        hello.get(TcpWire.HELLO_BYTES, name);
        TcpHandshake handshake = loop.handshake();
        if (handshake.keyed() && !TcpHandshake.matches(handshake.helloMac(challengeNonce, initiatorNonce, from, to, name), hello, TcpWire.HELLO_MAC_AT)) {
            reject("a hello that does not prove the connection key (is the peer's engine started with this engine's shared secret?)");
            return;
        }
        hello = null;
        establishedNanos = System.nanoTime();
        // kept as sent, since notifications name their sender with it; every log line and report escapes it
        peerName = new String(name, StandardCharsets.UTF_8);
        if (!loop.established(this)) {
            close("this instance holds " + TcpAdmission.MAX_ESTABLISHED + " verified connections already");
            return;
        }
        ready = true;
        boolean mine = to == loop.instanceId();
        byte result = mine ? TcpWire.ACK_OK : TcpWire.ACK_WRONG_INSTANCE;
        openStreams(FrameWriter.ANSWER_FRAME_BYTES);
        ByteBuffer ack = writer.control(TcpWire.ACK_BYTES);
        ack.putInt(TcpWire.MAGIC).put(TcpWire.VERSION).put(result).putShort((short) 0).putLong(loop.instanceId())
                .put(handshake.ackMac(challengeNonce, initiatorNonce, loop.instanceId(), result));
        writer.controlAdded(TcpWire.ACK_BYTES);
        flush();
        if (!mine) {
            close(String.format(Locale.ROOT, "its metadata names instance %x, this is %x (stale metadata)", to, loop.instanceId()));
        }
    }

    /** A hello that is not one, or proves nothing: counted apart from a verified peer's faults, closed without an answer. */
    private void reject(String what)
    {
        loop.rejected(this, what);
        close("its hello was refused: " + what);
    }

    @Override
    String peerName()
    {
        return peerName;
    }

    /** {@return true once the peer said who it is} */
    boolean ready()
    {
        return ready;
    }

    long acceptedNanos()
    {
        return acceptedNanos;
    }

    /**
     * A peer that sends requests but does not read the answers or READ data is not read from until
     * it does, so what it makes this side queue stays bounded. The initiator's side always reads:
     * stopping it could leave both sides waiting for the other to read.
     */
    @Override
    boolean backlogged()
    {
        return writer != null && (writer.controlBacklog() > BACKLOG_BYTES || writer.queued() > BACKLOG_READS);
    }

    /** The hello was read before the streams opened: nothing of the handshake is left for the frame reader. */
    @Override
    public int handshake(ByteBuffer in)
    {
        return -1;
    }

    @Override
    public void header(byte type, ByteBuffer in, int at)
    {
        requested = true;
        if (in.get(at + 1) != TcpWire.VERSION) {
            violation("a frame of version " + in.get(at + 1));
            return;
        }
        switch (type) {
            case TcpWire.WRITE -> onWrite(in, at);
            case TcpWire.READ -> onRead(in, at);
            case TcpWire.CANCEL -> onCancel(in.getLong(at + 8));
            case TcpWire.NOTIFY -> {
                int length = in.getInt(at + 4);
                if (length < 0 || length > TcpWire.MAX_NOTIFICATION_BYTES) {
                    violation("a notification of " + length + " bytes");
                    return;
                }
                body = NOTIFICATION;
                reader.toBody(length);
            }
            default -> violation("frame type " + type + " towards the target");
        }
    }

    private void onWrite(ByteBuffer in, int at)
    {
        int keyLength = in.get(at + 2) & 0xff;
        int run = in.getInt(at + 4);
        int runCount = in.getInt(at + 8);
        long handle = in.getLong(at + 16);
        long address = in.getLong(at + 24);
        long length = in.getLong(at + 32);
        if (keyLength > TcpWire.MAX_KEY || runCount <= 0 || runCount > TcpWire.MAX_RUNS || run < 0 || run >= runCount || length <= 0) {
            violation(String.format(Locale.ROOT, "WRITE run %d of %d, %d bytes, key of %d bytes", run, runCount, length, keyLength));
            return;
        }
        TcpExchange exchange = continued(handle, TransferOp.WRITE, run, runCount, in, at + TcpWire.KEY_AT, keyLength);
        if (exchange == null) {
            return;
        }
        body = WRITE_RUN;
        if (exchange.result == TcpWire.RESULT_OK) {
            if (!exchange.entry.covers(TransferOp.WRITE, address, length)) {
                refuse(exchange, TcpWire.RESULT_OUTSIDE, run, address, length);
            }
            else {
                TcpRegistration memory = loop.registrations().find(address, length, MemoryKind.HOST, 0);
                if (memory != null) {
                    reader.toMemory(memory, address, length, exchange);
                    return;
                }
                refuse(exchange, TcpWire.RESULT_FAILED, run, address, length);
            }
        }
        reader.discard(length);
    }

    private void onRead(ByteBuffer in, int at)
    {
        int keyLength = in.get(at + 2) & 0xff;
        int first = in.getInt(at + 4);
        int here = in.getInt(at + 8);
        int runCount = in.getInt(at + 12);
        long handle = in.getLong(at + 16);
        if (keyLength > TcpWire.MAX_KEY || here <= 0 || here > TcpWire.MAX_READ_RUNS || runCount <= 0 || runCount > TcpWire.MAX_RUNS || first < 0
                || first > runCount - here) {
            violation(String.format(Locale.ROOT, "READ of runs %d+%d of %d, key of %d bytes", first, here, runCount, keyLength));
            return;
        }
        TcpExchange exchange = continued(handle, TransferOp.READ, first, runCount, in, at + TcpWire.KEY_AT, keyLength);
        if (exchange == null) {
            return;
        }
        body = READ_LIST;
        listedRuns = here;
        reader.toBody(here * TcpWire.READ_RUN_BYTES);
    }

    /**
     * The exchange a request frame continues, or a new one for a transfer's first frame (its key
     * admitted then); null after a violation.
     */
    private TcpExchange continued(long handle, TransferOp op, int run, int runCount, ByteBuffer in, int keyAt, int keyLength)
    {
        TcpExchange exchange = receiving;
        if (exchange == null) {
            if (run != 0) {
                violation(op + " of transfer " + Long.toHexString(handle) + " starts at run " + run);
                return null;
            }
            exchange = take();
            exchange.reset(this, handle, op, runCount);
            in.get(keyAt, exchange.key, 0, keyLength);
            exchange.keyLength = keyLength;
            exchange.entry = loop.grants().admit(exchange.key, keyLength);
            if (exchange.entry == null) {
                refuse(exchange, TcpWire.RESULT_NO_GRANT, 0, 0, 0);
            }
            receiving = exchange;
            return exchange;
        }
        if (exchange.op != op || exchange.handle != handle || exchange.runCount != runCount || exchange.received != run
                || !exchange.sameKey(in, keyAt, keyLength)) {
            violation(String.format(Locale.ROOT, "%s frame of transfer %x at run %d of %d while %s of transfer %x waits for run %d of %d", op,
                    handle, run, runCount, exchange.op, exchange.handle, exchange.received, exchange.runCount));
            return null;
        }
        return exchange;
    }

    private void onCancel(long handle)
    {
        TcpExchange exchange = receiving;
        if (exchange != null && exchange.handle == handle) {
            if (exchange.result == TcpWire.RESULT_OK) {
                exchange.result = TcpWire.RESULT_FAILED;
            }
            receiving = null;
            answer(exchange);
        }
    }

    @Override
    public void bodyDone(ByteBuffer bytes)
    {
        byte finished = body;
        body = NONE;
        TcpExchange exchange = receiving;
        if (finished == NOTIFICATION) {
            byte[] message = new byte[bytes.remaining()];
            bytes.get(message);
            loop.notified(peerName, message);
        }
        else if (finished == WRITE_RUN) {
            exchange.received++;
            if (exchange.received == exchange.runCount) {
                receiving = null;
                answer(exchange);
            }
        }
        else if (finished == READ_LIST) {
            checkRuns(exchange, bytes, listedRuns);
            exchange.received += listedRuns;
            if (exchange.received == exchange.runCount) {
                receiving = null;
                if (exchange.result == TcpWire.RESULT_OK) {
                    // its data and answer go out behind what is queued, at the read's flush; the entry is held until then
                    writer.add(exchange, exchange.handle);
                }
                else {
                    answer(exchange);
                }
            }
        }
    }

    /** Every run of a READ is checked before any of its bytes leave. */
    private void checkRuns(TcpExchange exchange, ByteBuffer list, int count)
    {
        for (int i = 0; i < count && exchange.result == TcpWire.RESULT_OK; i++) {
            long address = list.getLong(i * TcpWire.READ_RUN_BYTES);
            long length = list.getLong(i * TcpWire.READ_RUN_BYTES + 8);
            int run = exchange.received + i;
            if (length <= 0 || !exchange.entry.covers(TransferOp.READ, address, length)) {
                refuse(exchange, TcpWire.RESULT_OUTSIDE, run, address, length);
                return;
            }
            TcpRegistration memory = loop.registrations().find(address, length, MemoryKind.HOST, 0);
            if (memory == null) {
                refuse(exchange, TcpWire.RESULT_FAILED, run, address, length);
                return;
            }
            exchange.addRun(address, length, memory);
        }
    }

    private void refuse(TcpExchange exchange, byte result, int run, long address, long length)
    {
        exchange.result = result;
        exchange.refused.set(run, address, length);
        String reason = exchange.refused.describe(exchange.op, exchange.keyLength, result == TcpWire.RESULT_NO_GRANT ? "no live grant has that key"
                : result == TcpWire.RESULT_OUTSIDE ? "outside its grant for " + exchange.op : "the granted memory is no longer registered");
        if (result == TcpWire.RESULT_NO_GRANT || result == TcpWire.RESULT_OUTSIDE) {
            // outside: the range may have been granted until the request's grants began to go
            loop.grants().refusedKey(peerName, exchange.key, exchange.keyLength, reason);
        }
        else {
            loop.grants().refused(peerName, reason);
        }
        letGo(exchange);
    }

    private void letGo(TcpExchange exchange)
    {
        if (exchange.entry != null) {
            exchange.entry.done(loop.grants());
            exchange.entry = null;
        }
    }

    /** Queues the answer; the read that made it flushes once at its end, so answers read together leave in one write. */
    private void answer(TcpExchange exchange)
    {
        writer.control(TcpWire.RESULT_BYTES).put(TcpWire.RESULT).put(TcpWire.VERSION).put(exchange.result).put((byte) exchange.op.ordinal())
                .putInt(exchange.refused.run()).putLong(exchange.handle).putLong(exchange.refused.address()).putLong(exchange.refused.length());
        writer.controlAdded(TcpWire.RESULT_BYTES);
        release(exchange);
    }

    /** Ends an exchange: its grant entry is let go, and it returns to the pool. */
    void release(TcpExchange exchange)
    {
        letGo(exchange);
        Arrays.fill(exchange.memories, 0, exchange.runs, null);
        if (pooled == pool.length) {
            pool = Arrays.copyOf(pool, pooled * 2);
        }
        pool[pooled++] = exchange;
    }

    private TcpExchange take()
    {
        return pooled > 0 ? pool[--pooled] : new TcpExchange();
    }

    /** {@return true while an access admitted under {@code key} is still in progress here} */
    boolean holds(byte[] key)
    {
        if (holds(receiving, key)) {
            return true;
        }
        for (int i = 0; writer != null && i < writer.queued(); i++) {
            if (writer.sourceAt(i) instanceof TcpExchange exchange && holds(exchange, key)) {
                return true;
            }
        }
        return false;
    }

    private static boolean holds(TcpExchange exchange, byte[] key)
    {
        return exchange != null && exchange.entry != null && exchange.keyLength == key.length && Arrays.equals(exchange.key, 0, key.length, key, 0,
                key.length);
    }

    @Override
    void ended(String reason)
    {
        if (receiving != null) {
            release(receiving);
            receiving = null;
        }
    }
}
