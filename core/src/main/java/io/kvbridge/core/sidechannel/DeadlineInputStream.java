package io.kvbridge.core.sidechannel;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * Reads from a socket with two bounds: each read waits at most the read timeout, and no read starts
 * or waits past the deadline. A peer that sends one byte just before every read timeout therefore
 * still fails by the deadline. Not thread safe: one reader per socket.
 */
final class DeadlineInputStream
        extends InputStream
{
    private final Socket socket;
    private final InputStream in;
    private final long readTimeoutMillis;
    private long deadlineNanos;
    private boolean deadlineBound;

    DeadlineInputStream(Socket socket, long readTimeoutMillis, long deadlineNanos)
            throws IOException
    {
        this.socket = socket;
        this.in = socket.getInputStream();
        this.readTimeoutMillis = readTimeoutMillis;
        this.deadlineNanos = deadlineNanos;
    }

    /**
     * Moves the deadline.
     *
     * @param deadlineNanos new deadline on {@link System#nanoTime()}.
     */
    void deadline(long deadlineNanos)
    {
        this.deadlineNanos = deadlineNanos;
    }

    /**
     * Tells whether the last timeout came from the deadline rather than the read timeout.
     *
     * @return true when the deadline bounded the last read.
     */
    boolean deadlinePassed()
    {
        return deadlineBound;
    }

    private void arm()
            throws IOException
    {
        long leftMillis = (deadlineNanos - System.nanoTime()) / 1_000_000;
        if (leftMillis <= 0) {
            deadlineBound = true;
            throw new SocketTimeoutException("deadline passed");
        }
        deadlineBound = leftMillis < readTimeoutMillis;
        socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, Math.min(readTimeoutMillis, leftMillis))));
    }

    @Override
    public int read()
            throws IOException
    {
        arm();
        return in.read();
    }

    @Override
    public int read(byte[] buffer, int offset, int length)
            throws IOException
    {
        arm();
        return in.read(buffer, offset, length);
    }
}
