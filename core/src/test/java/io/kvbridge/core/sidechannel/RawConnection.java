package io.kvbridge.core.sidechannel;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;

/** A client that writes whatever bytes a test gives it, to play a malformed or hostile peer. */
final class RawConnection
        implements AutoCloseable
{
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    RawConnection(InetSocketAddress address)
            throws IOException
    {
        socket = new Socket();
        socket.connect(address, 2_000);
        socket.setSoTimeout(5_000);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    RawConnection sendFrame(byte[] body)
            throws IOException
    {
        Frames.write(out, body);
        return this;
    }

    RawConnection sendRaw(byte[] bytes)
            throws IOException
    {
        out.write(bytes);
        out.flush();
        return this;
    }

    void shutdownOutput()
            throws IOException
    {
        socket.shutdownOutput();
    }

    /** Reads one frame; null when the peer closed the connection first. */
    byte[] readFrame()
            throws IOException
    {
        return Frames.read(in, 16 << 20, "reply");
    }

    /** Tells whether the peer closed the connection: true on end of stream within the read timeout. */
    boolean closedByPeer()
            throws IOException
    {
        try {
            return in.read() == -1;
        }
        catch (SocketTimeoutException e) {
            return false;
        }
        catch (IOException e) {
            // a reset also means the peer dropped the connection
            return true;
        }
    }

    void readTimeout(int millis)
            throws IOException
    {
        socket.setSoTimeout(millis);
    }

    @Override
    public void close()
            throws IOException
    {
        socket.close();
    }
}
