package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;

/**
 * What a {@code nixl} instance tells its peers: its agent name, the allocations it registered (so
 * the initiator checks descriptors before NIXL sees them) and NIXL's own metadata blob, which stays
 * opaque. Big-endian:
 *
 * <pre>
 *   0  8 bytes  magic "KVBNIXL1"
 *   8  u16      format version (1)
 *  10  u16      agent name length N (1..1024), then N bytes of UTF-8
 *      u32      region count R (0..65536), then R regions of 24 bytes:
 *                 u8 kind (0 host, 1 device), 3 bytes zero, u32 device, u64 address, u64 length
 *      u32      blob length B (1..64 MiB), then B bytes: nixl_capi_get_local_md()
 * </pre>
 */
final class NixlMetadata
{
    static final int VERSION = 1;
    static final int MAX_NAME_BYTES = 1024;
    static final int MAX_REGIONS = 1 << 16;
    static final int MAX_BLOB_BYTES = 64 << 20;
    private static final byte[] MAGIC = "KVBNIXL1".getBytes(StandardCharsets.US_ASCII);
    private static final int REGION_BYTES = 24;

    private final String agentName;
    private final RegionTable regions;
    private final byte[] blob;

    NixlMetadata(String agentName, RegionTable regions, byte[] blob)
    {
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.regions = requireNonNull(regions, "regions is null");
        this.blob = requireNonNull(blob, "blob is null");
    }

    String agentName()
    {
        return agentName;
    }

    RegionTable regions()
    {
        return regions;
    }

    byte[] blob()
    {
        return blob;
    }

    byte[] encode()
    {
        byte[] name = agentName.getBytes(StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(MAGIC.length + 2 + 2 + name.length + 4 + regions.size() * REGION_BYTES + 4 + blob.length);
        out.put(MAGIC).putShort((short) VERSION).putShort((short) name.length).put(name).putInt(regions.size());
        for (int i = 0; i < regions.size(); i++) {
            out.put((byte) (regions.kind(i) == MemoryKind.HOST ? 0 : 1)).put((byte) 0).putShort((short) 0)
                    .putInt(regions.device(i)).putLong(regions.address(i)).putLong(regions.length(i));
        }
        out.putInt(blob.length).put(blob);
        return out.array();
    }

    /**
     * Parses metadata a peer sent; everything in it is checked.
     *
     * @param bytes untrusted bytes.
     * @return the metadata.
     * @throws KvBridgeException {@code PROTOCOL_ERROR} naming the first bad field.
     */
    static NixlMetadata decode(byte[] bytes)
    {
        if (bytes == null) {
            throw malformed("metadata is null (expected: the bytes a nixl transport's localMetadata() returned)");
        }
        try {
            ByteBuffer in = ByteBuffer.wrap(bytes);
            byte[] magic = new byte[MAGIC.length];
            in.get(magic);
            if (!Arrays.equals(magic, MAGIC)) {
                throw malformed("metadata does not start with 'KVBNIXL1': it is not from a nixl transport");
            }
            int version = Short.toUnsignedInt(in.getShort());
            if (version != VERSION) {
                throw malformed("version=" + version + " is not supported (expected: " + VERSION + "); run the same kvbridge version on both peers");
            }
            int nameLength = Short.toUnsignedInt(in.getShort());
            if (nameLength == 0 || nameLength > MAX_NAME_BYTES) {
                throw malformed("agent name length=" + nameLength + " is outside [1, " + MAX_NAME_BYTES + "]");
            }
            byte[] name = new byte[nameLength];
            in.get(name);
            String agentName = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(name)).toString();
            int count = in.getInt();
            if (count < 0 || count > MAX_REGIONS || (long) count * REGION_BYTES > in.remaining()) {
                throw malformed("region count=" + Integer.toUnsignedString(count) + " is outside [0, " + MAX_REGIONS + "] or exceeds the "
                        + in.remaining() + " bytes left");
            }
            MemoryKind[] kinds = new MemoryKind[count];
            int[] devices = new int[count];
            long[] addresses = new long[count];
            long[] lengths = new long[count];
            for (int i = 0; i < count; i++) {
                int kind = in.get();
                in.get();
                in.getShort();
                devices[i] = in.getInt();
                addresses[i] = in.getLong();
                lengths[i] = in.getLong();
                if (kind != 0 && kind != 1) {
                    throw malformed("region " + i + ": kind=" + kind + " (expected: 0 host or 1 device)");
                }
                kinds[i] = kind == 0 ? MemoryKind.HOST : MemoryKind.DEVICE;
                if (devices[i] < 0 || (kinds[i] == MemoryKind.HOST && devices[i] != 0)) {
                    throw malformed("region " + i + ": device=" + devices[i] + " for " + kinds[i] + " memory");
                }
                if (addresses[i] <= 0 || lengths[i] <= 0 || addresses[i] > Long.MAX_VALUE - lengths[i]) {
                    throw malformed(String.format(Locale.ROOT, "region %d: address=0x%x length=%d is not a valid range", i, addresses[i], lengths[i]));
                }
            }
            int blobLength = in.getInt();
            if (blobLength <= 0 || blobLength > MAX_BLOB_BYTES || blobLength != in.remaining()) {
                throw malformed("NIXL blob length=" + Integer.toUnsignedString(blobLength) + " but " + in.remaining()
                        + " bytes follow (expected: equal, in [1, " + MAX_BLOB_BYTES + "])");
            }
            byte[] blob = new byte[blobLength];
            in.get(blob);
            return new NixlMetadata(agentName, new RegionTable(kinds, devices, addresses, lengths), blob);
        }
        catch (BufferUnderflowException e) {
            throw malformed("metadata of " + bytes.length + " bytes ends early");
        }
        catch (CharacterCodingException e) {
            throw malformed("agent name is not valid UTF-8");
        }
    }

    private static KvBridgeException malformed(String message)
    {
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "nixl metadata: " + message);
    }
}
