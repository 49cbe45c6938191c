package io.kvbridge.backend.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferOp;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A target on a plain server socket that speaks the tcp frames by hand: it takes one initiator's
 * hello and answers it with the magic and version it was given, reads the requests, and sends
 * whatever answers a test makes, lies included; reads time out rather than hang.
 */
final class RawTcpTarget implements AutoCloseable
{
    final String name;
    final long instanceId = ThreadLocalRandom.current().nextLong();
    private final long regionAddress;
    private final long regionBytes;
    private final ServerSocket server = new ServerSocket();
    private final CompletableFuture<Socket> accepted = new CompletableFuture<>();
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
    private Socket socket;
    private InputStream in;
    // the initiator's view of this target, set by the test
    Peer peer;
    PreparedList remote;

    /** How a test makes the target answer the request for {@code handle}. */
    interface Answer
    {
        void to(RawTcpTarget target, long handle) throws IOException;
    }

    /** A request frame: a READ's runs or a WRITE's extent as address, length pairs, and a WRITE's payload once read. */
    record Request(byte type, long handle, int run, int runCount, long[] runs, byte[] key, byte[] payload)
    {
    }

    RawTcpTarget(String name, int magic, byte version, long regionAddress, long regionBytes) throws IOException
    {
        this.name = name;
        this.regionAddress = regionAddress;
        this.regionBytes = regionBytes;
        // a small window: a large WRITE backs up in the initiator while this side reads nothing
        server.setReceiveBufferSize(64 * 1024);
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        Thread.ofPlatform().daemon().name(name).start(() -> {
            try {
                Socket s = server.accept();
                s.setSoTimeout(5_000);
                s.setTcpNoDelay(true);
                // no connection key: an unkeyed challenge, and zeros for the answer's proof
                s.getOutputStream().write(ByteBuffer.allocate(TcpWire.CHALLENGE_BYTES).order(ByteOrder.LITTLE_ENDIAN).putInt(TcpWire.MAGIC)
                        .put(TcpWire.VERSION).array());
                ByteBuffer hello = ByteBuffer.wrap(s.getInputStream().readNBytes(TcpWire.HELLO_BYTES)).order(ByteOrder.LITTLE_ENDIAN);
                int nameBytes = hello.get(5) & 0xff;
                if (hello.getInt(0) != TcpWire.MAGIC || hello.get(4) != TcpWire.VERSION || hello.getLong(16) != instanceId || nameBytes == 0
                        || s.getInputStream().readNBytes(nameBytes).length != nameBytes) {
                    s.close();
                    throw new IOException("a hello that is not for " + name);
                }
                s.getOutputStream().write(ByteBuffer.allocate(TcpWire.ACK_BYTES).order(ByteOrder.LITTLE_ENDIAN).putInt(magic).put(version)
                        .put(TcpWire.ACK_OK).putShort((short) 0).putLong(instanceId).array());
                accepted.complete(s);
            }
            catch (Throwable e) {
                accepted.completeExceptionally(e);
            }
        });
    }

    int port()
    {
        return server.getLocalPort();
    }

    /** {@return metadata naming this target, with one region that is no memory at all: the initiator never touches it itself} */
    byte[] metadata()
    {
        return new TcpMetadata(instanceId, name, "127.0.0.1", port(), List.of(new TcpMetadata.Region(regionAddress, regionBytes))).encode();
    }

    /** Waits for the connection whose hello was answered. */
    RawTcpTarget attached() throws IOException
    {
        try {
            socket = accepted.get(5, TimeUnit.SECONDS);
        }
        catch (Exception e) {
            throw new IOException(name + ": no initiator said hello", e);
        }
        in = socket.getInputStream();
        return this;
    }

    private ByteBuffer receive(int bytes) throws IOException
    {
        byte[] read = in.readNBytes(bytes);
        assertEquals(bytes, read.length, () -> name + ": the initiator closed the connection");
        return ByteBuffer.wrap(read).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** A request's header, with a READ's run list. */
    Request header() throws IOException
    {
        ByteBuffer header = receive(TcpWire.WRITE_BYTES);
        byte type = header.get(0);
        assertTrue(type == TcpWire.READ || type == TcpWire.WRITE, () -> name + ": request type " + type);
        byte[] key = new byte[header.get(2) & 0xff];
        header.get(TcpWire.KEY_AT, key);
        if (type == TcpWire.WRITE) {
            return new Request(type, header.getLong(16), header.getInt(4), header.getInt(8), new long[] {header.getLong(24), header.getLong(32)}, key, null);
        }
        ByteBuffer list = receive(header.getInt(8) * TcpWire.READ_RUN_BYTES);
        long[] runs = new long[list.capacity() / 8];
        list.asLongBuffer().get(runs);
        return new Request(type, header.getLong(16), header.getInt(4), header.getInt(12), runs, key, null);
    }

    /** A whole request, a WRITE's payload included. */
    Request request() throws IOException
    {
        Request header = header();
        return header.type() == TcpWire.READ ? header
                : new Request(header.type(), header.handle(), header.run(), header.runCount(), header.runs(), header.key(),
                        receive((int) header.runs()[1]).array());
    }

    /** Reads {@code bytes} of payload; {@return how many of them were {@code value}} */
    long drain(long bytes, byte value) throws IOException
    {
        byte[] chunk = new byte[64 * 1024];
        long matching = 0;
        for (long left = bytes; left > 0;) {
            int read = in.read(chunk, 0, (int) Math.min(chunk.length, left));
            assertTrue(read > 0, () -> name + ": the initiator closed the connection mid-payload");
            for (int i = 0; i < read; i++) {
                matching += chunk[i] == value ? 1 : 0;
            }
            left -= read;
        }
        return matching;
    }

    /** Adds a DATA frame with {@code max(length, 0)} bytes of {@code value}; what was added goes out at {@link #send}. */
    RawTcpTarget data(long handle, int run, long length, int flag, byte value)
    {
        pending.writeBytes(ByteBuffer.allocate(TcpWire.DATA_BYTES).order(ByteOrder.LITTLE_ENDIAN).put(TcpWire.DATA).put(TcpWire.VERSION)
                .put((byte) flag).put((byte) 0).putInt(run).putLong(handle).putLong(length).array());
        pending.writeBytes(filled((int) Math.max(length, 0), value));
        return this;
    }

    static byte[] filled(int length, byte value)
    {
        byte[] bytes = new byte[length];
        Arrays.fill(bytes, value);
        return bytes;
    }

    RawTcpTarget result(long handle, byte result, TransferOp op, int run, long address, long length)
    {
        pending.writeBytes(ByteBuffer.allocate(TcpWire.RESULT_BYTES).order(ByteOrder.LITTLE_ENDIAN).put(TcpWire.RESULT).put(TcpWire.VERSION)
                .put(result).put((byte) op.ordinal()).putInt(run).putLong(handle).putLong(address).putLong(length).array());
        return this;
    }

    /** Sends what was added in one write: the initiator may close the connection as soon as it reads a bad frame. */
    void send() throws IOException
    {
        socket.getOutputStream().write(pending.toByteArray());
        pending.reset();
    }

    /** The initiator closed the connection: the stream ends, or is reset where it left bytes unread. */
    void assertClosedByInitiator()
    {
        try {
            while (in.read() >= 0) {
                // what it sent before it closed
            }
        }
        catch (SocketTimeoutException e) {
            fail(name + ": the initiator kept the connection open");
        }
        catch (IOException e) {
            // reset: closed too
        }
    }

    @Override
    public void close() throws IOException
    {
        server.close();
        if (accepted.isDone() && !accepted.isCompletedExceptionally()) {
            accepted.join().close();
        }
    }
}
