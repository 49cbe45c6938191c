package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.msgpack.core.ExtensionTypeHeader;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;

/**
 * Decodes one msgpack value from untrusted bytes into a small tree of maps, lists, strings, numbers
 * and byte arrays, enforcing {@link WireLimits} before every allocation: a length is accepted only
 * when it is within its limit and within the bytes that remain, so a forged header claiming
 * gigabytes fails at once instead of allocating. Nesting is bounded, so recursion is too.
 *
 * <p>Every failure is a {@link KvBridgeException} with {@link ErrorCode#PROTOCOL_ERROR}; msgpack's own
 * exceptions never escape.
 */
public final class WireDecoder
{
    /** Stands for an explicit msgpack nil; readers treat it as an absent key. */
    enum Nil
    {
        INSTANCE
    }

    /**
     * A msgpack extension value: kept only so that unknown keys holding one can be ignored.
     *
     * @param type extension type.
     * @param data payload.
     */
    record Extension(byte type, byte[] data)
    {
    }

    private final MessageUnpacker unpacker;
    private final long size;
    private final WireLimits limits;
    private final String what;
    // created on the first non-ASCII string, then reused
    private CharsetDecoder utf8;

    private WireDecoder(byte[] bytes, WireLimits limits, String what)
    {
        this.unpacker = MessagePack.newDefaultUnpacker(bytes);
        this.size = bytes.length;
        this.limits = limits;
        this.what = what;
    }

    /**
     * Decodes bytes that must hold exactly one msgpack map.
     *
     * @param bytes the untrusted input.
     * @param limits bounds to enforce.
     * @param what names the message in errors, e.g. {@code handshake payload}.
     * @return the map's entries with string keys (entries with other keys are dropped).
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} when the bytes are not one
     *     well-formed msgpack map within the limits.
     */
    public static WireMap decodeMap(byte[] bytes, WireLimits limits, String what)
    {
        requireNonNull(bytes, "bytes is null");
        requireNonNull(limits, "limits is null");
        requireNonNull(what, "what is null");
        if (bytes.length > limits.maxFrameBytes()) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "%s of %d bytes exceeds maxFrameBytes=%d", what, bytes.length, limits.maxFrameBytes()));
        }
        if (bytes.length == 0) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, what + " is empty (expected: a msgpack map)");
        }
        WireDecoder decoder = new WireDecoder(bytes, limits, what);
        try {
            Object value = decoder.value(0);
            if (!(value instanceof Map<?, ?> map)) {
                throw decoder.error("top-level value is " + describe(value) + " (expected: a msgpack map)");
            }
            if (decoder.remaining() != 0) {
                throw decoder.error(decoder.remaining() + " bytes follow the top-level map (expected: exactly one msgpack value)");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> entries = (Map<String, Object>) map;
            return new WireMap(what, "", entries);
        }
        catch (MessagePackException | IOException e) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT, "%s is not valid msgpack at byte %d of %d: %s",
                    what, decoder.unpacker.getTotalReadBytes(), decoder.size, e.getMessage() == null ? e.getClass().getSimpleName() : e.toString()), e);
        }
    }

    private Object value(int depth)
            throws IOException
    {
        MessageFormat format = unpacker.getNextFormat();
        return switch (format.getValueType()) {
            case NIL -> {
                unpacker.unpackNil();
                yield Nil.INSTANCE;
            }
            case BOOLEAN -> unpacker.unpackBoolean();
            case INTEGER -> integer(format);
            case FLOAT -> unpacker.unpackDouble();
            case STRING -> string(unpacker.unpackRawStringHeader());
            case BINARY -> payload(unpacker.unpackBinaryHeader(), limits.maxBinaryBytes(), "binary value", "maxBinaryBytes");
            case ARRAY -> array(depth);
            case MAP -> map(depth);
            case EXTENSION -> {
                ExtensionTypeHeader header = unpacker.unpackExtensionTypeHeader();
                yield new Extension(header.getType(), payload(header.getLength(), limits.maxBinaryBytes(), "extension value", "maxBinaryBytes"));
            }
        };
    }

    private Object integer(MessageFormat format)
            throws IOException
    {
        if (format == MessageFormat.UINT64) {
            BigInteger value = unpacker.unpackBigInteger();
            return value.bitLength() < Long.SIZE ? (Object) value.longValue() : value;
        }
        return unpacker.unpackLong();
    }

    private String string(int length)
            throws IOException
    {
        byte[] bytes = payload(length, limits.maxStringBytes(), "string", "maxStringBytes");
        // field names and layer names are ASCII: skip the strict decoder for them
        if (isAscii(bytes)) {
            return new String(bytes, StandardCharsets.US_ASCII);
        }
        if (utf8 == null) {
            utf8 = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        }
        try {
            return utf8.reset().decode(ByteBuffer.wrap(bytes)).toString();
        }
        catch (CharacterCodingException e) {
            throw error("string of " + length + " bytes is not valid UTF-8");
        }
    }

    private static boolean isAscii(byte[] bytes)
    {
        for (byte b : bytes) {
            if (b < 0) {
                return false;
            }
        }
        return true;
    }

    private byte[] payload(int length, int limit, String kind, String limitName)
            throws IOException
    {
        if (length < 0 || length > limit) {
            throw error(String.format(Locale.ROOT, "%s of %d bytes exceeds %s=%d", kind, Integer.toUnsignedLong(length), limitName, limit));
        }
        if (length > remaining()) {
            throw error(String.format(Locale.ROOT, "%s claims %d bytes but only %d remain (truncated message)", kind, length, remaining()));
        }
        return unpacker.readPayload(length);
    }

    private List<Object> array(int depth)
            throws IOException
    {
        int count = containerSize(unpacker.unpackArrayHeader(), depth, 1, "array");
        List<Object> list = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            list.add(value(depth + 1));
        }
        return list;
    }

    private Map<String, Object> map(int depth)
            throws IOException
    {
        int count = containerSize(unpacker.unpackMapHeader(), depth, 2, "map");
        Map<String, Object> map = new LinkedHashMap<>(Math.max(4, count * 2));
        for (int i = 0; i < count; i++) {
            Object key = value(depth + 1);
            Object value = value(depth + 1);
            // keys other than strings can never name a known field: ignored like any unknown key
            if (key instanceof String name && map.put(name, value) != null) {
                throw error("map has the key '" + name + "' twice");
            }
        }
        return map;
    }

    private int containerSize(int count, int depth, int minimumBytesPerEntry, String kind)
    {
        if (depth >= limits.maxNesting()) {
            throw error(String.format(Locale.ROOT, "%s nested %d deep exceeds maxNesting=%d", kind, depth + 1, limits.maxNesting()));
        }
        if (count < 0 || count > limits.maxListLength()) {
            throw error(String.format(Locale.ROOT, "%s of %d entries exceeds maxListLength=%d", kind, Integer.toUnsignedLong(count), limits.maxListLength()));
        }
        if ((long) count * minimumBytesPerEntry > remaining()) {
            throw error(String.format(Locale.ROOT, "%s claims %d entries but only %d bytes remain (truncated message)", kind, count, remaining()));
        }
        return count;
    }

    private long remaining()
    {
        return size - unpacker.getTotalReadBytes();
    }

    private KvBridgeException error(String problem)
    {
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT, "%s at byte %d of %d: %s",
                what, unpacker.getTotalReadBytes(), size, problem));
    }

    /**
     * Names the wire type of a decoded value, for messages.
     *
     * @param value a value of the decoded tree.
     * @return e.g. {@code a string}.
     */
    static String describe(Object value)
    {
        return switch (value) {
            case Nil ignored -> "nil";
            case Boolean ignored -> "a boolean";
            case Long ignored -> "an integer";
            case BigInteger ignored -> "an integer beyond the signed 64-bit range";
            case Double ignored -> "a float";
            case String ignored -> "a string";
            case byte[] ignored -> "binary";
            case List<?> ignored -> "an array";
            case Map<?, ?> ignored -> "a map";
            case Extension ignored -> "an extension value";
            default -> value.getClass().getSimpleName();
        };
    }
}
