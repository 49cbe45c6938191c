package io.kvbridge.core.sidechannel;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An attacker without credentials: holds a number of TCP connections to a side channel and renews
 * them continuously (closes the oldest, opens a new one), from several loopback source addresses,
 * the one legitimate clients use among them. A quarter of the sockets send the start of a frame
 * header and stop; the rest send nothing.
 */
public final class Flood
        implements AutoCloseable
{
    private static final int THREADS = 4;

    private final InetSocketAddress target;
    private final int sockets;
    private final long renewEveryNanos;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final AtomicLong opened = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final List<Thread> threads = new ArrayList<>();

    /**
     * Starts the flood and returns once every socket was opened once.
     *
     * @param target the side channel.
     * @param sockets how many connections to hold.
     * @param renewEveryMillis how often each connection is replaced by a new one.
     */
    public Flood(InetSocketAddress target, int sockets, long renewEveryMillis)
            throws InterruptedException
    {
        this.target = target;
        this.sockets = sockets;
        this.renewEveryNanos = renewEveryMillis * 1_000_000;
        java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(THREADS);
        for (int t = 0; t < THREADS; t++) {
            int share = sockets / THREADS + (t < sockets % THREADS ? 1 : 0);
            int thread = t;
            threads.add(Thread.ofPlatform().daemon().name("flood-" + t).start(() -> run(thread, share, ready)));
        }
        ready.await();
    }

    private void run(int thread, int share, java.util.concurrent.CountDownLatch ready)
    {
        ArrayDeque<Socket> held = new ArrayDeque<>(share);
        long n = 0;
        for (int i = 0; i < share; i++) {
            open(held, thread, n++);
        }
        ready.countDown();
        // renew one socket every renewEvery / share: the whole set once per interval
        long pauseNanos = Math.max(1, renewEveryNanos / Math.max(1, share));
        long next = System.nanoTime();
        while (running.get()) {
            next += pauseNanos;
            long wait = next - System.nanoTime();
            if (wait > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(wait);
            }
            Socket oldest = held.pollFirst();
            closeQuietly(oldest);
            open(held, thread, n++);
        }
        held.forEach(Flood::closeQuietly);
    }

    private void open(ArrayDeque<Socket> held, int thread, long n)
    {
        Socket socket = new Socket();
        try {
            // four source addresses per thread, 127.0.0.1 (the legitimate clients') among them
            int host = (int) ((thread * 4 + n % 4) % 16) + 1;
            socket.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, (byte) host}), 0));
            socket.connect(target, 1_000);
            if (n % 4 == 0) {
                socket.getOutputStream().write(new byte[] {0, 0});
            }
            opened.incrementAndGet();
        }
        catch (IOException e) {
            failed.incrementAndGet();
        }
        held.addLast(socket);
    }

    private static void closeQuietly(Socket socket)
    {
        if (socket == null) {
            return;
        }
        try {
            socket.setSoLinger(true, 0);
            socket.close();
        }
        catch (IOException e) {
            // the server closed it first
        }
    }

    /** @return connections opened so far. */
    public long opened()
    {
        return opened.get();
    }

    /** @return connection attempts that failed. */
    public long failed()
    {
        return failed.get();
    }

    /** @return connections held at once. */
    public int sockets()
    {
        return sockets;
    }

    @Override
    public void close()
            throws InterruptedException
    {
        running.set(false);
        for (Thread thread : threads) {
            thread.join(5_000);
        }
    }
}
