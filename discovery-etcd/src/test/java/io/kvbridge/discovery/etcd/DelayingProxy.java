package io.kvbridge.discovery.etcd;

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
 * A loopback TCP proxy to a server that holds back the server's answers until a given instant, then
 * forwards everything: a server whose first answers are slow, as a loaded host makes them.
 */
final class DelayingProxy
        implements AutoCloseable
{
    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final long answersFromNanos;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();

    /**
     * @param target the server.
     * @param delayMillis how long from now the server's answers are held back.
     */
    DelayingProxy(InetSocketAddress target, long delayMillis)
            throws IOException
    {
        this.target = target;
        this.answersFromNanos = System.nanoTime() + delayMillis * 1_000_000L;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofPlatform().daemon().name("delaying-proxy").start(this::accept);
    }

    /** {@return the proxy's endpoint, {@code 127.0.0.1:port}} */
    String endpoint()
    {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    private void accept()
    {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(target.getAddress(), target.getPort());
                sockets.add(client);
                sockets.add(server);
                Thread.ofPlatform().daemon().start(() -> pump(client, server, false));
                Thread.ofPlatform().daemon().start(() -> pump(server, client, true));
            }
            catch (IOException e) {
                // closed
            }
        }
    }

    private void pump(Socket from, Socket to, boolean held)
    {
        byte[] buffer = new byte[16 << 10];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int read;
            while ((read = in.read(buffer)) >= 0) {
                long waitNanos = answersFromNanos - System.nanoTime();
                if (held && waitNanos > 0) {
                    Thread.sleep(waitNanos / 1_000_000L + 1);
                }
                out.write(buffer, 0, read);
                out.flush();
            }
        }
        catch (IOException | InterruptedException e) {
            // a side closed
        }
        finally {
            close(from);
            close(to);
        }
    }

    private static void close(Socket socket)
    {
        try {
            socket.close();
        }
        catch (IOException ignored) {
            // already closed
        }
    }

    @Override
    public void close()
            throws IOException
    {
        listener.close();
        sockets.forEach(DelayingProxy::close);
    }
}
