package io.kvbridge.backend.ucx;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * What one UCX transport instance tells its peers: who it is, its worker address, and every
 * registered host range with the packed remote key that lets a peer address it (empty from an
 * {@code access=granted} instance, which no peer addresses one-sided). Decoding treats
 * the bytes as untrusted: every length is bounded, every range checked, nothing is left over.
 *
 * <pre>
 *   int     magic 0x4B565543 ("KVUC")     short version (2)
 *   long    instance id                   short name length, name (UTF-8)
 *   int     worker address length         worker address bytes
 *   int     tcp segment (bytes; 0 where the instance leaves TCP out)
 *   int     region count
 *   region: long address, long length, short packed key length, packed key bytes
 * </pre>
 * All numbers are big-endian.
 *
 * @param instanceId random id of the instance, unique per incarnation.
 * @param agentName the instance's agent name.
 * @param workerAddress the UCP worker address.
 * @param tcpSegmentBytes the instance's UCX tcp receive segment ({@link UcxOptions#tcpSegmentBytes()}).
 * @param regions registered ranges sorted by address, without overlaps.
 */
record UcxMetadata(long instanceId, String agentName, byte[] workerAddress, int tcpSegmentBytes, List<Region> regions)
{
    static final int MAGIC = 0x4B565543;
    static final short VERSION = 2;
    static final int MAX_NAME_BYTES = 1024;
    static final int MAX_WORKER_ADDRESS_BYTES = 64 * 1024;
    static final int MAX_REGIONS = 1 << 20;
    static final int MAX_TCP_SEGMENT_BYTES = 64 * 1024 * 1024;
    static final int MAX_PACKED_KEY_BYTES = 16 * 1024;

    /** Validates and copies. */
    UcxMetadata
    {
        requireNonNull(agentName, "agentName is null");
        workerAddress = requireNonNull(workerAddress, "workerAddress is null").clone();
        regions = List.copyOf(regions);
    }

    /**
     * One registered range.
     *
     * @param address first byte, in the owner's address space.
     * @param length bytes.
     * @param packedKey the range's packed remote key; empty where the owner grants access instead.
     */
    record Region(long address, long length, byte[] packedKey)
    {
        /** Validates and copies. */
        Region
        {
            packedKey = requireNonNull(packedKey, "packedKey is null").clone();
        }

        boolean contains(long start, long bytes)
        {
            return start >= address && bytes >= 0 && bytes <= address + length - start;
        }

        boolean sameAs(Region other)
        {
            return address == other.address && length == other.length && java.util.Arrays.equals(packedKey, other.packedKey);
        }
    }

    /** @return the encoded bytes. */
    byte[] encode()
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + workerAddress.length + regions.size() * 48);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeShort(VERSION);
            out.writeLong(instanceId);
            byte[] name = agentName.getBytes(StandardCharsets.UTF_8);
            out.writeShort(name.length);
            out.write(name);
            out.writeInt(workerAddress.length);
            out.write(workerAddress);
            out.writeInt(tcpSegmentBytes);
            out.writeInt(regions.size());
            for (Region region : regions) {
                out.writeLong(region.address());
                out.writeLong(region.length());
                out.writeShort(region.packedKey().length);
                out.write(region.packedKey());
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * Decodes and checks metadata a peer sent.
     *
     * @param bytes untrusted bytes.
     * @return the metadata.
     * @throws KvBridgeException {@code PROTOCOL_ERROR} naming the first problem.
     */
    static UcxMetadata decode(byte[] bytes)
    {
        requireNonNull(bytes, "peerMetadata is null");
        ByteBuffer in = ByteBuffer.wrap(bytes);
        try {
            int magic = in.getInt();
            if (magic != MAGIC) {
                throw malformed("magic=0x%08x is not UCX transport metadata (expected 0x%08x); was it produced by another transport?", magic, MAGIC);
            }
            short version = in.getShort();
            if (version != VERSION) {
                throw malformed("version=%d is not supported (expected %d); use the same kvbridge version on both sides", version, VERSION);
            }
            long instanceId = in.getLong();
            int nameLength = Short.toUnsignedInt(in.getShort());
            if (nameLength == 0 || nameLength > MAX_NAME_BYTES) {
                throw malformed("agent name length=%d is outside [1, %d]", nameLength, MAX_NAME_BYTES);
            }
            String agentName = utf8(in, nameLength);
            int addressLength = in.getInt();
            if (addressLength <= 0 || addressLength > MAX_WORKER_ADDRESS_BYTES) {
                throw malformed("worker address length=%d is outside [1, %d]", addressLength, MAX_WORKER_ADDRESS_BYTES);
            }
            byte[] workerAddress = new byte[addressLength];
            in.get(workerAddress);
            int tcpSegment = in.getInt();
            if (tcpSegment < 0 || tcpSegment > MAX_TCP_SEGMENT_BYTES) {
                throw malformed("tcp segment=%d is outside [0, %d]", tcpSegment, MAX_TCP_SEGMENT_BYTES);
            }
            int regionCount = in.getInt();
            // each region takes at least 18 bytes: a count beyond what remains is a lie
            if (regionCount < 0 || regionCount > MAX_REGIONS || (long) regionCount * 18 > in.remaining()) {
                throw malformed("region count=%d is outside [0, %d] or exceeds the %d bytes left", regionCount, MAX_REGIONS, in.remaining());
            }
            List<Region> regions = new ArrayList<>(regionCount);
            for (int i = 0; i < regionCount; i++) {
                long address = in.getLong();
                long length = in.getLong();
                if (address <= 0 || length <= 0 || address > Long.MAX_VALUE - length) {
                    throw malformed("region %d: address=0x%x length=%d is not a valid range", i, address, length);
                }
                int keyLength = Short.toUnsignedInt(in.getShort());
                if (keyLength > MAX_PACKED_KEY_BYTES) {
                    throw malformed("region %d: packed key length=%d is outside [0, %d]", i, keyLength, MAX_PACKED_KEY_BYTES);
                }
                byte[] key = new byte[keyLength];
                in.get(key);
                regions.add(new Region(address, length, key));
            }
            if (in.hasRemaining()) {
                throw malformed("%d unexpected bytes after the last region", in.remaining());
            }
            regions.sort(Comparator.comparingLong(Region::address));
            for (int i = 1; i < regions.size(); i++) {
                Region previous = regions.get(i - 1);
                if (regions.get(i).address() < previous.address() + previous.length()) {
                    throw malformed("regions at 0x%x and 0x%x overlap", previous.address(), regions.get(i).address());
                }
            }
            return new UcxMetadata(instanceId, agentName, workerAddress, tcpSegment, regions);
        }
        catch (BufferUnderflowException e) {
            throw malformed("truncated after %d of %d bytes", in.position(), bytes.length);
        }
    }

    private static String utf8(ByteBuffer in, int length)
    {
        if (length > in.remaining()) {
            throw new BufferUnderflowException();
        }
        ByteBuffer slice = in.slice(in.position(), length);
        in.position(in.position() + length);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(slice).toString();
        }
        catch (CharacterCodingException e) {
            throw malformed("agent name is not valid UTF-8");
        }
    }

    private static KvBridgeException malformed(String format, Object... args)
    {
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "malformed UCX transport metadata: " + String.format(Locale.ROOT, format, args));
    }
}
