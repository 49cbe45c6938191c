package io.kvbridge.backend.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;

/**
 * One connection's outgoing stream: a queue of sources, each of which makes frames when it reaches
 * the head (a transfer's runs, a READ's data, or small frames already encoded in the control
 * buffer), written without blocking as far as the socket takes them. A frame's header and the first
 * part of its payload go out in one gathering write; the payload is written straight from
 * registered memory, never copied.
 *
 * <p>Threads: the owner thread only.
 */
final class FrameWriter
{
    /** What makes frames at the head of the queue. */
    interface Source
    {
        /**
         * Makes the next frame into {@code writer} ({@link #frame()} and, for a payload,
         * {@link #payload} or {@link #zeros}).
         *
         * @param writer the writer, its frame buffer cleared.
         * @param queuedHandle the handle the source was queued under.
         * @return false when the source has no frame left: it leaves the queue.
         */
        boolean nextFrame(FrameWriter writer, long queuedHandle);

        /** The source left the queue: every frame it made was written, or the connection closed. */
        void left(FrameWriter writer, long queuedHandle, boolean written);
    }

    private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(64 * 1024);
    private static final int CONTROL_BYTES = 16 * 1024;

    final TcpConnection connection;
    private final SocketChannel channel;
    /** A frame buffer that holds a READ with its longest run list: what an initiator sends. */
    static final int REQUEST_FRAME_BYTES = TcpWire.READ_BYTES + TcpWire.MAX_READ_RUNS * TcpWire.READ_RUN_BYTES;
    /** A frame buffer that holds the largest header a target sends (its payloads come from memory). */
    static final int ANSWER_FRAME_BYTES = Math.max(TcpWire.DATA_BYTES, TcpWire.RESULT_BYTES);

    private final ByteBuffer frame;
    private final ByteBuffer[] gather = new ByteBuffer[2];
    private ByteBuffer control = ByteBuffer.allocateDirect(CONTROL_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    private int controlStart;

    // the queue: a source, or null for control bytes (their count in sizes)
    private Source[] sources = new Source[16];
    private long[] handles = new long[16];
    private int[] sizes = new int[16];
    private int head;
    private int count;

    // the frame being written: header bytes in frame, then payload from memory or zeros
    private boolean writing;
    private TcpRegistration payloadMemory;
    private long payloadAddress;
    private long payloadRemaining;
    private boolean payloadZeros;
    private Object payloadOwner;

    FrameWriter(TcpConnection connection, SocketChannel channel, int frameBytes)
    {
        this.connection = connection;
        this.channel = channel;
        this.frame = ByteBuffer.allocateDirect(frameBytes).order(ByteOrder.LITTLE_ENDIAN);
        control.limit(0);
    }

    /** {@return the frame buffer a source encodes its next header (and READ run list) into} */
    ByteBuffer frame()
    {
        return frame;
    }

    /** Sets the payload of the frame being made: bytes of registered memory. */
    void payload(TcpRegistration memory, long address, long length, Object owner)
    {
        payloadMemory = memory;
        payloadAddress = address;
        payloadRemaining = length;
        payloadZeros = false;
        payloadOwner = owner;
    }

    /**
     * The memory of the payload being written must not be read any more (its transfer was released):
     * the rest of the frame goes out as zeros, which keeps the stream in step.
     */
    void stopReading(Object owner)
    {
        if (payloadOwner == owner && payloadRemaining > 0) {
            payloadZeros = true;
            payloadMemory = null;
        }
    }

    /** {@return true while the payload being written belongs to {@code owner}} */
    boolean writingFor(Object owner)
    {
        return payloadOwner == owner && payloadRemaining > 0;
    }

    /** Queues a source behind everything queued. */
    void add(Source source, long handle)
    {
        push(source, handle, 0);
    }

    /**
     * {@return the control buffer positioned at its end, with room for {@code bytes}}: encode one
     * small frame there and call {@link #controlAdded}.
     */
    ByteBuffer control(int bytes)
    {
        int end = control.limit();
        if (control.capacity() - end < bytes) {
            int used = end - controlStart;
            control.position(controlStart);
            if (used + bytes <= control.capacity()) {
                control.compact();
                control.flip();
            }
            else {
                ByteBuffer grown = ByteBuffer.allocateDirect(Math.max(control.capacity() * 2, used + bytes)).order(ByteOrder.LITTLE_ENDIAN);
                grown.put(control);
                grown.flip();
                control = grown;
            }
            controlStart = 0;
            end = used;
        }
        control.limit(end + bytes).position(end);
        return control;
    }

    /** Queues the frame just encoded in the control buffer. */
    void controlAdded(int bytes)
    {
        int last = (head + count - 1) & (sources.length - 1);
        if (count > 0 && sources[last] == null) {
            sizes[last] += bytes;
            return;
        }
        push(null, 0, bytes);
    }

    private void push(Source source, long handle, int size)
    {
        if (count == sources.length) {
            Source[] grownSources = new Source[count * 2];
            long[] grownHandles = new long[count * 2];
            int[] grownSizes = new int[count * 2];
            for (int i = 0; i < count; i++) {
                int at = (head + i) & (count - 1);
                grownSources[i] = sources[at];
                grownHandles[i] = handles[at];
                grownSizes[i] = sizes[at];
            }
            sources = grownSources;
            handles = grownHandles;
            sizes = grownSizes;
            head = 0;
        }
        int tail = (head + count) & (sources.length - 1);
        sources[tail] = source;
        handles[tail] = handle;
        sizes[tail] = size;
        count++;
    }

    /** {@return sources and control frames queued, the one being written included} */
    int queued()
    {
        return count;
    }

    /** {@return bytes of control frames not yet written} */
    int controlBacklog()
    {
        return control.limit() - controlStart;
    }

    /**
     * Writes until the queue is empty or the socket takes no more.
     *
     * @return true when everything was written; false when the socket is full.
     * @throws IOException when the connection failed.
     */
    boolean flush() throws IOException
    {
        while (count > 0) {
            Source source = sources[head];
            if (source == null) {
                if (!writeControl()) {
                    return false;
                }
                continue;
            }
            if (!writing) {
                frame.clear();
                payloadRemaining = 0;
                payloadOwner = null;
                if (!source.nextFrame(this, handles[head])) {
                    pop(true);
                    continue;
                }
                frame.flip();
                writing = true;
            }
            if (!writeFrame()) {
                return false;
            }
            writing = false;
        }
        return true;
    }

    private boolean writeControl() throws IOException
    {
        int size = sizes[head];
        int end = control.limit();
        control.limit(controlStart + size).position(controlStart);
        int written = channel.write(control);
        control.limit(end);
        controlStart += written;
        if (written < size) {
            sizes[head] = size - written;
            return false;
        }
        if (controlStart == control.limit()) {
            controlStart = 0;
            control.limit(0);
        }
        pop(true);
        return true;
    }

    private boolean writeFrame() throws IOException
    {
        while (frame.hasRemaining() || payloadRemaining > 0) {
            if (payloadRemaining == 0) {
                if (channel.write(frame) == 0) {
                    return false;
                }
                continue;
            }
            ByteBuffer from;
            if (payloadZeros) {
                from = ZEROS.duplicate();
                from.limit((int) Math.min(from.capacity(), payloadRemaining));
            }
            else {
                from = payloadMemory.window(payloadAddress, payloadRemaining);
            }
            int start = from.position();
            long written;
            if (frame.hasRemaining()) {
                gather[0] = frame;
                gather[1] = from;
                written = channel.write(gather, 0, 2);
                gather[1] = null;
            }
            else {
                written = channel.write(from);
            }
            int moved = from.position() - start;
            payloadAddress += moved;
            payloadRemaining -= moved;
            if (written == 0) {
                return false;
            }
        }
        payloadOwner = null;
        return true;
    }

    private void pop(boolean written)
    {
        Source source = sources[head];
        long handle = handles[head];
        sources[head] = null;
        head = (head + 1) & (sources.length - 1);
        count--;
        if (source != null) {
            source.left(this, handle, written);
        }
    }

    /** Empties the queue when the connection closes: every source is told it was not written. */
    void abandon()
    {
        writing = false;
        payloadOwner = null;
        payloadMemory = null;
        while (count > 0) {
            pop(false);
        }
        control.limit(0);
        controlStart = 0;
    }

    /** {@return the queued sources, for a sweep; index 0 is the head} */
    Source sourceAt(int i)
    {
        return sources[(head + i) & (sources.length - 1)];
    }

    /** {@return the handle source {@code i} was queued under} */
    long handleAt(int i)
    {
        return handles[(head + i) & (sources.length - 1)];
    }
}
