package io.kvbridge.backend.tcp;

import io.kvbridge.transport.PeerText;
import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One TCP connection of an instance, in one of two roles: this side's connection to a peer it
 * connected to ({@link InitiatorConnection}: its transfers and notifications go out, answers and
 * READ data come back), or a peer's connection to this side ({@link TargetConnection}: its
 * requests come in and are checked against the grants). The stream is read and written by the
 * owner thread only, without blocking; a connection that fails, ends or breaks the protocol is
 * closed, and everything it carried ends with it.
 *
 * <p>Threads: the owner thread, except {@link #closedReason()}.
 */
abstract class TcpConnection implements FrameReader.Handler
{
    private static final Logger LOG = LoggerFactory.getLogger(TcpConnection.class);

    final TcpOwnerLoop loop;
    final SocketChannel channel;
    // null until the streams open: a target opens them only for a peer that proved who it is
    FrameWriter writer;
    FrameReader reader;
    SelectionKey key;
    private volatile String closedReason;

    TcpConnection(TcpOwnerLoop loop, SocketChannel channel)
    {
        this.loop = loop;
        this.channel = channel;
    }

    /** Makes the stream buffers. */
    final void openStreams(int frameBytes)
    {
        writer = new FrameWriter(this, channel, frameBytes);
        reader = new FrameReader(channel, this);
    }

    /**
     * Reads the handshake while the streams are not open yet; the target's, which reads nothing
     * more than the hello before the peer proved who it is.
     */
    void readBeforeStreams() throws IOException
    {
        throw new IllegalStateException("a connection of this role opens its streams at once");
    }

    /** {@return who is at the other end, for messages} */
    abstract String peerName();

    /** {@return why the connection was closed, or null while open} */
    final String closedReason()
    {
        return closedReason;
    }

    final boolean closed()
    {
        return closedReason != null;
    }

    /**
     * Reads what arrived; closes the connection at the end of the stream or on failure. A peer's
     * bytes must never stop the owner thread, which serves every other peer too: whatever a frame
     * makes this side throw closes that peer's connection as a protocol violation, not the owner.
     */
    final void readable()
    {
        try {
            if (reader == null) {
                readBeforeStreams();
                return;
            }
            if (!reader.read()) {
                close("the peer closed the connection");
                return;
            }
        }
        catch (IOException e) {
            close("reading failed: " + e.getMessage());
            return;
        }
        catch (RuntimeException e) {
            // the violation is logged, rate-limited; the trace only at debug, since a peer could repeat it at will
            LOG.debug("{}: the frames of '{}' made this side fail", loop.description(), PeerText.printable(peerName()), e);
            violation("its frames made this side fail: " + e);
            return;
        }
        flush();
    }

    @Override
    public final void unknownFrame(byte type)
    {
        violation("frame type " + type + ", which this protocol does not have");
    }

    /** Writes what is queued; asks for a writable event when the socket is full. */
    final void flush()
    {
        if (closed() || writer == null) {
            return;
        }
        try {
            boolean all = writer.flush();
            int wanted = all || !backlogged() ? SelectionKey.OP_READ : 0;
            interest(all ? wanted : wanted | SelectionKey.OP_WRITE);
        }
        catch (IOException e) {
            close("writing failed: " + e.getMessage());
        }
    }

    private void interest(int ops)
    {
        if (key != null && key.isValid() && key.interestOps() != ops) {
            key.interestOps(ops);
        }
    }

    /** {@return true when this side stops reading until what it queued for the peer was written} */
    boolean backlogged()
    {
        return false;
    }

    /** Closes the connection once: what it carried ends ({@link #ended}), the socket is closed. */
    final void close(String reason)
    {
        if (closedReason != null) {
            return;
        }
        closedReason = reason;
        LOG.debug("{}: connection with '{}' closed: {}", loop.description(), PeerText.printable(peerName()), reason);
        if (reader != null) {
            reader.close();
        }
        ended(reason);
        if (writer != null) {
            writer.abandon();
        }
        if (key != null) {
            key.cancel();
        }
        try {
            channel.close();
        }
        catch (IOException e) {
            LOG.debug("closing a socket failed", e);
        }
        loop.forget(this);
    }

    /** The connection closed: end or drop everything it carried. */
    abstract void ended(String reason);

    /** A peer broke the protocol: counted, and the connection closed. */
    final void violation(String what)
    {
        loop.malformed(peerName(), what);
        close("the peer broke the protocol: " + what);
    }
}
