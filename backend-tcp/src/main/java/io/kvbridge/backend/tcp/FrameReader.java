package io.kvbridge.backend.tcp;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;

/**
 * One connection's incoming stream, read without blocking: headers through a small staging buffer
 * (many small answers per read), payloads straight into the memory the handler chose for them, or
 * into a scratch buffer to be dropped, or into the body buffer for a READ's run list or a
 * notification. Nothing is allocated per frame.
 *
 * <p>Threads: the owner thread only.
 */
final class FrameReader
{
    /** What the stream's frames mean: the connection's role. */
    interface Handler
    {
        /**
         * The handshake's message, while the connection still expects one.
         *
         * @param in the staged bytes, from {@code in.position()}.
         * @return bytes used, 0 while more are needed, or -1 once the handshake is over.
         */
        int handshake(ByteBuffer in);

        /**
         * A whole header: read it with absolute gets from {@code at}; for a payload call one of
         * {@link #toMemory}, {@link #discard}, {@link #toBody}.
         */
        void header(byte type, ByteBuffer in, int at);

        /** The payload asked for has all arrived. */
        void bodyDone(ByteBuffer body);

        /** A frame of a type this protocol does not have: nothing after its type byte can be read. */
        void unknownFrame(byte type);
    }

    private static final int HEADER_READ = 4096;
    /** Bytes one {@link #read()} takes from the socket before it lets the owner serve other connections. */
    static final int BUDGET = 4 << 20;
    private static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
    // owner thread only: every connection drops unwanted bytes into the same scratch
    private static final ByteBuffer SCRATCH = ByteBuffer.allocateDirect(64 * 1024);

    private static final int HEADER = 0;
    private static final int MEMORY = 1;
    private static final int DISCARD = 2;
    private static final int BODY = 3;

    private final SocketChannel channel;
    private final Handler handler;
    private final int budgetPerRead;
    private final ByteBuffer in = ByteBuffer.allocateDirect(64 * 1024).order(ByteOrder.LITTLE_ENDIAN);
    private final MemorySegment staged = MemorySegment.ofBuffer(in);
    // made at the first READ list or notification: a connection that sends neither never holds it
    private ByteBuffer body;
    private int state = HEADER;
    // bytes this read() may still take from the socket
    private int budget;
    private TcpRegistration memory;
    private long address;
    private long remaining;
    private Object owner;
    private boolean closed;

    FrameReader(SocketChannel channel, Handler handler)
    {
        this(channel, handler, BUDGET);
    }

    FrameReader(SocketChannel channel, Handler handler, int budgetPerRead)
    {
        this.channel = channel;
        this.handler = handler;
        this.budgetPerRead = budgetPerRead;
        in.limit(0);
    }

    /** The payload of the header just read lands in registered memory. */
    void toMemory(TcpRegistration into, long at, long length, Object forOwner)
    {
        state = MEMORY;
        memory = into;
        address = at;
        remaining = length;
        owner = forOwner;
    }

    /** The payload of the header just read is read and dropped. */
    void discard(long length)
    {
        state = DISCARD;
        remaining = length;
        owner = null;
    }

    /** The payload of the header just read (at most 64 KiB) is collected for {@link Handler#bodyDone}. */
    void toBody(int length)
    {
        state = BODY;
        if (body == null) {
            body = ByteBuffer.allocateDirect(Math.max(TcpWire.MAX_READ_RUNS * TcpWire.READ_RUN_BYTES, TcpWire.MAX_NOTIFICATION_BYTES))
                    .order(ByteOrder.LITTLE_ENDIAN);
        }
        body.clear().limit(length);
        remaining = length;
        owner = null;
    }

    /**
     * The memory the payload being read lands in must not be written any more (its transfer was
     * released): the rest of the payload is dropped.
     */
    void stopWriting(Object forOwner)
    {
        if (state == MEMORY && owner == forOwner) {
            state = DISCARD;
            memory = null;
            owner = null;
        }
    }

    /** Nothing more is handed to the handler: the connection is closing. */
    void close()
    {
        closed = true;
        memory = null;
        owner = null;
    }

    /**
     * Reads what the socket has, handing whole frames to the handler, until the socket has no more
     * or this call took its budget ({@link #BUDGET}) from it; then it still hands over every whole
     * frame already staged, because nothing would call it again for bytes no longer in the socket.
     *
     * @return false at the end of the stream.
     * @throws IOException when the connection failed.
     */
    boolean read() throws IOException
    {
        budget = budgetPerRead;
        while (!closed) {
            int moved = switch (state) {
                case HEADER -> header();
                case MEMORY -> intoMemory();
                case DISCARD -> dropped();
                default -> intoBody();
            };
            if (moved < 0) {
                return false;
            }
            if (moved == 0) {
                return true;
            }
        }
        return true;
    }

    /** {@return 1 after a header or handshake message, 0 when more bytes are needed, -1 at the end} */
    private int header() throws IOException
    {
        int shaken = handler.handshake(in);
        if (shaken > 0) {
            in.position(in.position() + shaken);
            return 1;
        }
        if (shaken == 0) {
            return fill(1);
        }
        if (in.remaining() < 1) {
            return fill(1);
        }
        byte type = in.get(in.position());
        int length = TcpWire.headerBytes(type);
        if (length == 0) {
            // only the type byte is known to be there: the handler is told the type, not handed a header
            handler.unknownFrame(type);
            return 1;
        }
        if (in.remaining() < length) {
            return fill(length);
        }
        int at = in.position();
        in.position(at + length);
        handler.header(type, in, at);
        if (state != HEADER && remaining == 0) {
            finishBody();
        }
        return 1;
    }

    /** {@return 1 when at least {@code need} bytes are staged after reading, 0 when the socket had too few, -1 at the end} */
    private int fill(int need) throws IOException
    {
        in.compact();
        in.limit(Math.max(HEADER_READ, need));
        int read = budgeted(in);
        in.flip();
        if (read < 0) {
            return -1;
        }
        return in.remaining() >= need && read > 0 ? 1 : 0;
    }

    private int intoMemory() throws IOException
    {
        int staged = stagedPart();
        if (staged > 0) {
            MemorySegment.copy(this.staged, in.position(), ALL, address, staged);
            in.position(in.position() + staged);
            advance(staged);
            return staged;
        }
        ByteBuffer window = memory.window(address, remaining);
        int start = window.position();
        int read = budgeted(window);
        if (read < 0) {
            return -1;
        }
        advance(window.position() - start);
        return read;
    }

    private int dropped() throws IOException
    {
        int staged = stagedPart();
        if (staged > 0) {
            in.position(in.position() + staged);
            advance(staged);
            return staged;
        }
        SCRATCH.clear().limit((int) Math.min(SCRATCH.capacity(), remaining));
        int read = budgeted(SCRATCH);
        if (read > 0) {
            advance(read);
        }
        return read;
    }

    private int intoBody() throws IOException
    {
        int staged = stagedPart();
        if (staged > 0) {
            int end = in.limit();
            in.limit(in.position() + staged);
            body.put(in);
            in.limit(end);
            advance(staged);
            return staged;
        }
        int read = budgeted(body);
        if (read > 0) {
            advance(read);
        }
        return read;
    }

    /** {@return bytes read from the socket into {@code into}, 0 once this read() spent its budget, -1 at the end} */
    private int budgeted(ByteBuffer into) throws IOException
    {
        if (budget <= 0) {
            return 0;
        }
        int read = channel.read(into);
        if (read > 0) {
            budget -= read;
        }
        return read;
    }

    private int stagedPart()
    {
        return (int) Math.min(in.remaining(), remaining);
    }

    private void advance(long moved)
    {
        address += moved;
        remaining -= moved;
        if (remaining == 0) {
            finishBody();
        }
    }

    private void finishBody()
    {
        int finished = state;
        state = HEADER;
        memory = null;
        owner = null;
        if (finished == BODY) {
            body.flip();
        }
        handler.bodyDone(body);
    }
}
