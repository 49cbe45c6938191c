package io.kvbridge.backend.tcp;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What a {@code tcp} instance tells peers: its random instance id (the handshake checks it, so
 * stale metadata never reaches a newer instance on a reused port), agent name, the address its
 * listener accepts on, and the extent of each registered region. Extents only let the peer check
 * its own descriptors early: the target checks every access against its grants, whatever a peer
 * believes about its memory.
 *
 * @param instanceId random per instance.
 * @param agentName the instance's agent name.
 * @param host the address peers connect to.
 * @param port the listener's port.
 * @param regions registered extents.
 */
record TcpMetadata(long instanceId, String agentName, String host, int port, List<Region> regions)
{
    private static final int MAGIC = 0x4d54564b; // "KVTM"
    private static final byte FORMAT = 1;
    static final int MAX_REGIONS = 1 << 16;
    private static final int MAX_HOST_BYTES = 255;

    /**
     * One registered extent.
     *
     * @param address first byte.
     * @param length bytes.
     */
    record Region(long address, long length)
    {
    }

    TcpMetadata
    {
        regions = List.copyOf(regions);
    }

    byte[] encode()
    {
        byte[] name = agentName.getBytes(StandardCharsets.UTF_8);
        byte[] hostBytes = host.getBytes(StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(4 + 1 + 8 + 2 + name.length + 2 + hostBytes.length + 2 + 4 + regions.size() * 16).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(MAGIC).put(FORMAT).putLong(instanceId);
        out.putShort((short) name.length).put(name);
        out.putShort((short) hostBytes.length).put(hostBytes);
        out.putShort((short) port).putInt(regions.size());
        for (Region region : regions) {
            out.putLong(region.address()).putLong(region.length());
        }
        return out.array();
    }

    /** Decodes untrusted metadata; every length and extent is checked. */
    static TcpMetadata decode(byte[] bytes)
    {
        if (bytes == null) {
            throw malformed("metadata is null");
        }
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        try {
            if (in.getInt() != MAGIC) {
                throw malformed("it is not tcp transport metadata (wrong magic); was it made by another transport?");
            }
            byte format = in.get();
            if (format != FORMAT) {
                throw malformed("format " + format + ", this side reads format " + FORMAT);
            }
            long id = in.getLong();
            String name = string(in, TcpWire.MAX_NAME_BYTES, "agent name");
            String host = string(in, MAX_HOST_BYTES, "host");
            int port = Short.toUnsignedInt(in.getShort());
            int count = in.getInt();
            if (count < 0 || count > MAX_REGIONS || (long) count * 16 != in.remaining()) {
                throw malformed(String.format(Locale.ROOT, "%d regions in %d remaining bytes (at most %d regions of 16 bytes)", count, in.remaining(), MAX_REGIONS));
            }
            if (port == 0 || name.isEmpty() || host.isEmpty()) {
                throw malformed("port " + port + ", agent name '" + name + "', host '" + host + "'");
            }
            List<Region> regions = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                long address = in.getLong();
                long length = in.getLong();
                if (address == 0 || length <= 0 || address + length < address) {
                    throw malformed(String.format(Locale.ROOT, "region %d at 0x%x of %d bytes", i, address, length));
                }
                regions.add(new Region(address, length));
            }
            return new TcpMetadata(id, name, host, port, regions);
        }
        catch (BufferUnderflowException e) {
            throw malformed("it ends early (" + bytes.length + " bytes)");
        }
    }

    private static String string(ByteBuffer in, int max, String what)
    {
        int length = Short.toUnsignedInt(in.getShort());
        if (length > max || length > in.remaining()) {
            throw malformed(what + " of " + length + " bytes (at most " + max + ")");
        }
        byte[] bytes = new byte[length];
        in.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static KvBridgeException malformed(String why)
    {
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "tcp peer metadata is malformed: " + why);
    }
}
