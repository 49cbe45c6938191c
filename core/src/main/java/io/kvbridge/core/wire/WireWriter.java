package io.kvbridge.core.wire;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Writes msgpack into memory. Maps are written with string keys, enums with their lower-case names,
 * byte arrays as msgpack binary: the shapes {@link WireDecoder} and {@link WireMap} read.
 */
public final class WireWriter
{
    private final MessageBufferPacker packer = MessagePack.newDefaultBufferPacker();

    /** Creates a writer with an empty buffer. */
    public WireWriter()
    {
    }

    /**
     * Starts a map.
     *
     * @param entries number of key-value pairs that follow.
     * @return this writer.
     */
    public WireWriter map(int entries)
    {
        return pack(() -> packer.packMapHeader(entries));
    }

    /**
     * Starts an array.
     *
     * @param entries number of values that follow.
     * @return this writer.
     */
    public WireWriter array(int entries)
    {
        return pack(() -> packer.packArrayHeader(entries));
    }

    /**
     * Writes a string (also used for map keys).
     *
     * @param value the string.
     * @return this writer.
     */
    public WireWriter string(String value)
    {
        return pack(() -> packer.packString(value));
    }

    /**
     * Writes a signed integer.
     *
     * @param value the integer.
     * @return this writer.
     */
    public WireWriter integer(long value)
    {
        return pack(() -> packer.packLong(value));
    }

    /**
     * Writes nil.
     *
     * @return this writer.
     */
    public WireWriter nil()
    {
        return pack(() -> packer.packNil());
    }

    /**
     * Writes a boolean.
     *
     * @param value the boolean.
     * @return this writer.
     */
    public WireWriter bool(boolean value)
    {
        return pack(() -> packer.packBoolean(value));
    }

    /**
     * Writes binary data.
     *
     * @param value the bytes.
     * @return this writer.
     */
    public WireWriter binary(byte[] value)
    {
        return pack(() -> {
            packer.packBinaryHeader(value.length);
            packer.writePayload(value);
        });
    }

    /**
     * Writes an enum constant as its lower-case name.
     *
     * @param value the constant.
     * @return this writer.
     */
    public WireWriter enumValue(Enum<?> value)
    {
        return string(WireMap.wireName(value));
    }

    /**
     * Writes a tree of maps with string keys, lists, strings, integers, booleans, byte arrays, enum
     * constants and null (as nil).
     *
     * @param value the tree.
     * @return this writer.
     */
    public WireWriter value(Object value)
    {
        switch (value) {
            case null -> nil();
            case String string -> string(string);
            case Long number -> integer(number);
            case Integer number -> integer(number);
            case Boolean bool -> bool(bool);
            case byte[] bytes -> binary(bytes);
            case Enum<?> constant -> enumValue(constant);
            case Map<?, ?> map -> {
                map(map.size());
                map.forEach((key, entry) -> string((String) key).value(entry));
            }
            case List<?> list -> {
                array(list.size());
                list.forEach(this::value);
            }
            default -> throw new IllegalArgumentException("cannot encode " + value.getClass().getName() + " as msgpack");
        }
        return this;
    }

    /**
     * Returns what was written.
     *
     * @return a new array.
     */
    public byte[] toByteArray()
    {
        return packer.toByteArray();
    }

    /** One call to the packer. */
    @FunctionalInterface
    private interface Packing
    {
        void run()
                throws IOException;
    }

    private WireWriter pack(Packing packing)
    {
        try {
            packing.run();
        }
        catch (IOException e) {
            throw failed(e);
        }
        return this;
    }

    private static KvBridgeException failed(IOException e)
    {
        // the packer writes to memory: this only happens when memory runs out
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "cannot encode msgpack: " + e.getMessage(), e);
    }
}
