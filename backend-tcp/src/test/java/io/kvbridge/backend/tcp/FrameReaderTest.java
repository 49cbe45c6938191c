package io.kvbridge.backend.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The reader's byte budget never strands frames: when one call has taken its budget from the
 * socket, the frames already staged are handed over before it returns, because the selector
 * reports a socket readable only for bytes still in it. Each case writes a whole stream of small
 * WRITE frames into the socket first, then reads once.
 */
@Timeout(60)
final class FrameReaderTest
{
    private static final int PAYLOAD = 896;
    private static final int FRAME = TcpWire.WRITE_BYTES + PAYLOAD;
    // a small budget, so that the whole stream fits the socket's default buffers
    private static final int BUDGET = 64 * 1024;

    @Test
    void aReadThatUsedItsBudgetLeavesNoWholeFrameStaged() throws IOException
    {
        // around the frame count at which the stream passes the budget, so that for some counts the
        // budget runs out with the last frames staged and none left in the socket
        int first = BUDGET / FRAME - 2;
        for (int frames = first; frames < first + 12; frames++) {
            readOnce(frames);
        }
    }

    private static void readOnce(int frames) throws IOException
    {
        try (ServerSocketChannel server = ServerSocketChannel.open(); Selector selector = Selector.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            try (SocketChannel sender = SocketChannel.open()) {
                sender.connect(server.getLocalAddress());
                try (SocketChannel receiver = server.accept()) {
                    receiver.configureBlocking(false);
                    ByteBuffer stream = ByteBuffer.allocate(frames * FRAME).order(ByteOrder.LITTLE_ENDIAN);
                    for (int i = 0; i < frames; i++) {
                        int at = stream.position();
                        stream.put(TcpWire.WRITE).put(TcpWire.VERSION);
                        stream.putLong(at + 32, PAYLOAD);
                        stream.position(at + FRAME);
                    }
                    stream.flip();
                    while (stream.hasRemaining()) {
                        sender.write(stream);
                    }
                    awaitArrived(receiver, selector);

                    Counting handler = new Counting();
                    FrameReader reader = new FrameReader(receiver, handler, BUDGET);
                    handler.reader = reader;
                    assertTrue(reader.read(), "the stream is open");
                    boolean readable = selector.selectNow() > 0;
                    assertTrue(handler.frames == frames || readable, String.format(
                            "%d of %d frames were handed over and the socket is not readable: the rest is stranded in the reader", handler.frames, frames));
                    if (!readable) {
                        assertEquals(frames, handler.frames);
                    }
                }
            }
        }
    }

    /** Waits until the whole stream is in the receiver's socket, so that one read can see all of it. */
    private static void awaitArrived(SocketChannel receiver, Selector selector) throws IOException
    {
        receiver.register(selector, SelectionKey.OP_READ);
        // the receive queue is not observable from Java; loopback delivers the bytes once write() returned,
        // so a short wait for readability and a moment for the last segments is enough
        selector.select(5_000);
        selector.selectedKeys().clear();
        try {
            Thread.sleep(50);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static final class Counting implements FrameReader.Handler
    {
        FrameReader reader;
        int frames;

        @Override
        public int handshake(ByteBuffer in)
        {
            return -1;
        }

        @Override
        public void header(byte type, ByteBuffer in, int at)
        {
            reader.discard(in.getLong(at + 32));
        }

        @Override
        public void bodyDone(ByteBuffer body)
        {
            frames++;
        }

        @Override
        public void unknownFrame(byte type)
        {
            throw new AssertionError("every frame written is a WRITE, read type " + type);
        }
    }
}
