package io.kvbridge.core.sidechannel;

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
 * A fake side channel on loopback that answers every connection with a script: to play peers that
 * never answer, answer garbage, or drip bytes.
 */
final class TestingPeer
        implements AutoCloseable
{
    /** What the peer does with one accepted connection. */
    @FunctionalInterface
    interface Script
    {
        void run(InputStream in, OutputStream out)
                throws IOException, InterruptedException;
    }

    private final ServerSocket serverSocket;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Thread> connections = new CopyOnWriteArrayList<>();
    private final Thread acceptThread;

    TestingPeer(Script script)
            throws IOException
    {
        serverSocket = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        acceptThread = Thread.ofVirtual().start(() -> {
            while (!serverSocket.isClosed()) {
                try {
                    Socket socket = serverSocket.accept();
                    sockets.add(socket);
                    connections.add(Thread.ofVirtual().start(() -> {
                        try (socket) {
                            script.run(socket.getInputStream(), socket.getOutputStream());
                        }
                        catch (IOException | InterruptedException e) {
                            // the test closed the peer, or the client went away
                        }
                    }));
                }
                catch (IOException e) {
                    return;
                }
            }
        });
    }

    /** A peer that accepts connections and never sends a byte. */
    static TestingPeer silent()
            throws IOException
    {
        return new TestingPeer((in, out) -> Thread.sleep(60_000));
    }

    /** A peer that reads one request frame and answers with the given frame body. */
    static TestingPeer replying(byte[] replyBody)
            throws IOException
    {
        return new TestingPeer((in, out) -> {
            Frames.read(in, 1 << 20, "request");
            Frames.write(out, replyBody);
            Thread.sleep(60_000);
        });
    }

    InetSocketAddress address()
    {
        return new InetSocketAddress(serverSocket.getInetAddress(), serverSocket.getLocalPort());
    }

    @Override
    public void close()
            throws IOException
    {
        serverSocket.close();
        for (Socket socket : sockets) {
            socket.close();
        }
        acceptThread.interrupt();
        connections.forEach(Thread::interrupt);
    }
}
