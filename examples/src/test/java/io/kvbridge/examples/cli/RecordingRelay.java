package io.kvbridge.examples.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP relay on loopback that passes every connection it accepts on to one address and keeps a copy
 * of every byte in both directions: what someone capturing the wire between the two would see.
 */
final class RecordingRelay implements AutoCloseable
{
    private final ServerSocket server;
    private final InetSocketAddress target;
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    private RecordingRelay(ServerSocket server, InetSocketAddress target)
    {
        this.server = server;
        this.target = target;
        this.acceptor = Thread.ofVirtual().name("relay-accept").start(this::acceptAll);
    }

    /**
     * Starts relaying to a port on 127.0.0.1.
     *
     * @param port the port connections are passed on to.
     * @return the relay, listening on a port of its own.
     */
    static RecordingRelay to(int port) throws IOException
    {
        ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        return new RecordingRelay(server, new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    }

    /** {@return the port initiators connect to} */
    int port()
    {
        return server.getLocalPort();
    }

    /** {@return every byte relayed so far, both directions interleaved as they came} */
    byte[] captured()
    {
        synchronized (captured) {
            return captured.toByteArray();
        }
    }

    private void acceptAll()
    {
        while (!server.isClosed()) {
            try {
                Socket inbound = server.accept();
                Socket outbound = new Socket();
                sockets.add(inbound);
                sockets.add(outbound);
                outbound.connect(target, 10_000);
                Thread.ofVirtual().start(() -> pump(inbound, outbound));
                Thread.ofVirtual().start(() -> pump(outbound, inbound));
            }
            catch (IOException e) {
                // closed, or a connection that failed: the next one is relayed anew
            }
        }
    }

    private void pump(Socket from, Socket to)
    {
        byte[] buffer = new byte[16 << 10];
        try (InputStream in = from.getInputStream()) {
            OutputStream out = to.getOutputStream();
            for (int read = in.read(buffer); read >= 0; read = in.read(buffer)) {
                synchronized (captured) {
                    captured.write(buffer, 0, read);
                }
                out.write(buffer, 0, read);
                out.flush();
            }
        }
        catch (IOException e) {
            // one end closed or reset: the other end learns of it below
        }
        finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void closeQuietly(Socket socket)
    {
        try {
            socket.close();
        }
        catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException, InterruptedException
    {
        server.close();
        for (Socket socket : sockets) {
            closeQuietly(socket);
        }
        acceptor.join(10_000);
    }
}
