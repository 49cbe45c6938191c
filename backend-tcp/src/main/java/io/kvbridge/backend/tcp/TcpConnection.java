package io.kvbridge.backend.tcp;

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
    /** Control bytes queued unwritten at which a connection stops reading requests until its peer reads answers. */
    static final int BACKLOG_BYTES = 4 << 20;

    final TcpOwnerLoop loop;
    final SocketChannel channel;
    final FrameWriter writer;
    final FrameReader reader;
    SelectionKey key;
    private volatile String closedReason;

    TcpConnection(TcpOwnerLoop loop, SocketChannel channel)
    {
        this.loop = loop;
        this.channel = channel;
        this.writer = new FrameWriter(this, channel);
        this.reader = new FrameReader(channel, this);
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

    /** Reads what arrived; closes the connection at the end of the stream or on failure. */
    final void readable()
    {
        try {
            if (!reader.read()) {
                close("the peer closed the connection");
                return;
            }
        }
        catch (IOException e) {
            close("reading failed: " + e.getMessage());
            return;
        }
        flush();
    }

    /** Writes what is queued; asks for a writable event when the socket is full. */
    final void flush()
    {
        if (closed()) {
            return;
        }
        try {
            boolean all = writer.flush();
            // a peer that sends requests but does not read the answers is not read from until it does
            int wanted = all || writer.controlBacklog() <= BACKLOG_BYTES ? SelectionKey.OP_READ : 0;
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

    /** Closes the connection once: what it carried ends ({@link #ended}), the socket is closed. */
    final void close(String reason)
    {
        if (closedReason != null) {
            return;
        }
        closedReason = reason;
        LOG.debug("{}: connection with '{}' closed: {}", loop.description(), peerName(), reason);
        reader.close();
        ended(reason);
        writer.abandon();
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
