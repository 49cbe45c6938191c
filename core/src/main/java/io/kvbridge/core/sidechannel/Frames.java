package io.kvbridge.core.sidechannel;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Locale;

/**
 * Length-prefixed frames: a 4-byte big-endian unsigned length, then that many bytes. The length is
 * checked against the receiver's limit before anything is allocated, so a header claiming 4 GiB
 * costs the receiver four bytes of reading.
 */
final class Frames
{
    static final int HEADER_BYTES = 4;

    private Frames()
    {
    }

    /**
     * Writes one frame and flushes.
     *
     * @param out the stream.
     * @param body the frame's content; not empty.
     */
    static void write(OutputStream out, byte[] body)
            throws IOException
    {
        int length = body.length;
        out.write(new byte[] {(byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8), (byte) length});
        out.write(body);
        out.flush();
    }

    /**
     * Reads one frame.
     *
     * @param in the stream.
     * @param maxBytes largest frame accepted.
     * @param what names the frame in errors, e.g. {@code reply}.
     * @return the frame's content, or null when the stream ended cleanly before a frame began.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} for an empty, oversized or
     *     truncated frame.
     */
    static byte[] read(InputStream in, int maxBytes, String what)
            throws IOException
    {
        long length = readLength(in, what);
        if (length < 0) {
            return null;
        }
        if (length > maxBytes) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "%s frame length=%d exceeds the limit of %d bytes; refused without reading it (is the peer speaking this protocol?)",
                    what, length, maxBytes));
        }
        return readBody(in, length, what);
    }

    /**
     * Reads one frame header.
     *
     * @return the body's length (positive), or -1 when the stream ended cleanly before a frame began.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} for an empty frame or a truncated header.
     */
    static long readLength(InputStream in, String what)
            throws IOException
    {
        byte[] header = in.readNBytes(HEADER_BYTES);
        if (header.length == 0) {
            return -1;
        }
        if (header.length < HEADER_BYTES) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "%s frame header truncated after %d of %d bytes", what, header.length, HEADER_BYTES));
        }
        long length = (header[0] & 0xffL) << 24 | (header[1] & 0xffL) << 16 | (header[2] & 0xffL) << 8 | header[3] & 0xffL;
        if (length == 0) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, what + " frame is empty (expected: a msgpack envelope)");
        }
        return length;
    }

    /**
     * Reads the body of a frame whose length the caller checked against its limits.
     *
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} when the stream ends first.
     */
    static byte[] readBody(InputStream in, long length, String what)
            throws IOException
    {
        byte[] body = in.readNBytes((int) length);
        if (body.length < length) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "%s frame truncated: the stream ended after %d of length=%d bytes", what, body.length, length));
        }
        return body;
    }
}
