package io.kvbridge.backend.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.spi.transfer.TransferOp;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A peer on a plain blocking socket that writes the tcp frames by hand, malformed ones included,
 * and parses what the target answers; reads time out rather than hang.
 */
final class RawTcpPeer implements AutoCloseable
{
    private static final int CHUNK = 64 * 1024;
    /** The most one DATA frame may carry before the answer is taken as broken. */
    private static final long MAX_DATA = 16L * CHUNK;

    final String name;
    final Socket socket = new Socket();
    final InputStream in;
    final OutputStream out;
    private final TcpMetadata target;
    private byte[] targetNonce;
    /** The challenge's flags, once read. */
    byte challengeFlags;

    /** Connects to the target {@code target} describes; says nothing yet. */
    RawTcpPeer(String name, TcpMetadata target) throws IOException
    {
        this.name = name;
        this.target = target;
        try {
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(10_000);
            socket.connect(new InetSocketAddress("127.0.0.1", target.port()), 10_000);
            in = socket.getInputStream();
            out = socket.getOutputStream();
        }
        catch (IOException e) {
            socket.close();
            throw e;
        }
    }

    /** Reads the target's challenge, which it sends on accepting. {@return its nonce} */
    byte[] challenge() throws IOException
    {
        if (targetNonce == null) {
            ByteBuffer challenge = receive(TcpWire.CHALLENGE_BYTES);
            assertEquals(TcpWire.MAGIC, challenge.getInt(0), "challenge magic");
            assertEquals(TcpWire.VERSION, challenge.get(4), "challenge version");
            challengeFlags = challenge.get(5);
            targetNonce = Arrays.copyOfRange(challenge.array(), TcpWire.CHALLENGE_NONCE_AT, TcpWire.CHALLENGE_NONCE_AT + TcpWire.NONCE_BYTES);
        }
        return targetNonce;
    }

    /** Says hello as this name to the target's instance, proving {@code key} (null: none); the target must accept it. */
    RawTcpPeer hello(byte[] key) throws IOException
    {
        send(provenHello(key, target.instanceId()));
        ByteBuffer ack = receive(TcpWire.ACK_BYTES);
        assertEquals(TcpWire.MAGIC, ack.getInt(0), "ack magic");
        assertEquals(TcpWire.ACK_OK, ack.get(5), "ack result");
        assertEquals(target.instanceId(), ack.getLong(8), "ack instance");
        return this;
    }

    /** Says hello without a key; the target must accept it. */
    RawTcpPeer hello() throws IOException
    {
        return hello(null);
    }

    /** A hello to instance {@code to} that answers this connection's challenge, proving {@code key} (null: none). */
    ByteBuffer provenHello(byte[] key, long to) throws IOException
    {
        byte[] nonce = new byte[TcpWire.NONCE_BYTES];
        Arrays.fill(nonce, (byte) 0x17);
        byte[] mac = new TcpHandshake(key).helloMac(challenge(), nonce, 0x4141, to, bytes(name));
        ByteBuffer hello = hello(name, to, TcpWire.MAGIC, TcpWire.VERSION);
        hello.put(TcpWire.HELLO_NONCE_AT, nonce).put(TcpWire.HELLO_MAC_AT, mac);
        return hello;
    }

    void send(ByteBuffer... frames) throws IOException
    {
        for (ByteBuffer frame : frames) {
            out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
        }
    }

    /** A payload of {@code length} bytes of {@code value}. */
    void payload(long length, byte value) throws IOException
    {
        byte[] chunk = filled((int) Math.min(length, CHUNK), value);
        for (long left = length; left > 0; left -= chunk.length) {
            out.write(chunk, 0, (int) Math.min(chunk.length, left));
        }
    }

    ByteBuffer receive(int bytes) throws IOException
    {
        byte[] read = in.readNBytes(bytes);
        assertEquals(bytes, read.length, () -> name + ": the victim closed the connection");
        return ByteBuffer.wrap(read).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * The answer for {@code handle}: its RESULT, with the bytes of every DATA frame before it, or for
     * a READ that succeeded, the bytes of its DATA frames up to the one flagged last.
     */
    Answer answer(long handle) throws IOException
    {
        byte[] data = new byte[0];
        while (true) {
            byte type = receive(1).get(0);
            if (type == TcpWire.DATA) {
                ByteBuffer header = receive(TcpWire.DATA_BYTES - 1);
                long length = header.getLong(15);
                assertTrue(length > 0 && length <= MAX_DATA, () -> name + ": DATA of " + length + " bytes");
                byte[] more = receive((int) length).array();
                data = Arrays.copyOf(data, data.length + more.length);
                System.arraycopy(more, 0, data, data.length - more.length, more.length);
                if (header.get(1) == TcpWire.DATA_LAST) {
                    assertEquals(handle, header.getLong(7), () -> name + ": the answer's transfer");
                    return new Answer(TcpWire.RESULT_OK, TransferOp.READ.ordinal(), header.getInt(3), data);
                }
                continue;
            }
            assertEquals(TcpWire.RESULT, type, () -> name + ": frame type " + type + " from the victim");
            ByteBuffer result = receive(TcpWire.RESULT_BYTES - 1);
            assertEquals(handle, result.getLong(7), () -> name + ": the answer's transfer");
            return new Answer(result.get(1), result.get(2), result.getInt(3), data);
        }
    }

    /** {@return the bytes that came before the victim closed the connection}; fails if it stays open. */
    int closedByVictim()
    {
        int bytes = 0;
        try {
            while (in.read() >= 0) {
                bytes++;
            }
        }
        catch (SocketTimeoutException e) {
            fail(name + ": the victim kept the connection open");
        }
        catch (IOException e) {
            // reset by the victim: closed too
        }
        return bytes;
    }

    @Override
    public void close() throws IOException
    {
        socket.close();
    }

    /** A RESULT: its code, op and refused run, and the bytes of the DATA frames before it. */
    record Answer(byte result, int op, int run, byte[] data)
    {
    }

    // ---- frames ----

    /** A request header: type, version, key length, the key at {@link TcpWire#KEY_AT}; little-endian, 128 bytes. */
    static ByteBuffer frame(byte type, byte[] key)
    {
        return ByteBuffer.allocate(TcpWire.WRITE_BYTES).order(ByteOrder.LITTLE_ENDIAN).put(0, type).put(1, TcpWire.VERSION).put(2, (byte) key.length)
                .put(TcpWire.KEY_AT, key);
    }

    static ByteBuffer writeFrame(byte[] key, int run, int runCount, long handle, long address, long length)
    {
        return frame(TcpWire.WRITE, key).putInt(4, run).putInt(8, runCount).putLong(16, handle).putLong(24, address).putLong(32, length);
    }

    /** A READ frame listing the runs given as address, length pairs. */
    static ByteBuffer readFrame(byte[] key, int first, int runCount, long handle, long... runs)
    {
        ByteBuffer frame = ByteBuffer.allocate(TcpWire.READ_BYTES + runs.length * 8).order(ByteOrder.LITTLE_ENDIAN).put(frame(TcpWire.READ, key))
                .putInt(4, first).putInt(8, runs.length / 2).putInt(12, runCount).putLong(16, handle);
        for (long value : runs) {
            frame.putLong(value);
        }
        return frame.flip();
    }

    static ByteBuffer hello(String name, long to, int magic, byte version)
    {
        byte[] bytes = bytes(name);
        return ByteBuffer.allocate(TcpWire.HELLO_BYTES + bytes.length).order(ByteOrder.LITTLE_ENDIAN).putInt(magic).put(version).put((byte) bytes.length)
                .putShort((short) 0).putLong(0x4141).putLong(to).put(TcpWire.HELLO_BYTES, bytes).clear();
    }

    static byte[] filled(int length, byte value)
    {
        byte[] bytes = new byte[length];
        Arrays.fill(bytes, value);
        return bytes;
    }

    static byte[] bytes(String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
