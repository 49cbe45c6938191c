package io.kvbridge.core.tools;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.wire.WireDecoder;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireMap;
import io.kvbridge.core.wire.WireWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.List;

/**
 * One message of a tool's own request-reply connection in the side channel's wire format: a
 * msgpack map whose {@code type} says what it is, decoded within the side channel's limits
 * ({@code WireLimits.DEFAULT}), since it comes from another host. The getters refuse a missing or
 * mistyped field with a {@link ErrorCode#PROTOCOL_ERROR} naming it. Immutable.
 */
public final class ControlMessage
{
    private final WireMap map;

    private ControlMessage(WireMap map)
    {
        this.map = map;
    }

    /**
     * Decodes a message.
     *
     * @param content the bytes an envelope held.
     * @param what what the message is, for errors (for example {@code "bench reply"}).
     * @return the message.
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} when it is not a map within the limits.
     */
    public static ControlMessage decode(byte[] content, String what)
    {
        requireNonNull(content, "content is null");
        requireNonNull(what, "what is null");
        return new ControlMessage(WireDecoder.decodeMap(content, WireLimits.DEFAULT, what));
    }

    /**
     * Starts a message.
     *
     * @param type its {@code type}, written first.
     * @return a builder.
     */
    public static Builder builder(String type)
    {
        return new Builder(type);
    }

    /**
     * {@return the message's type}
     *
     * @throws KvBridgeException when it has none.
     */
    public String type()
    {
        return map.requireString("type");
    }

    /**
     * Reads a string.
     *
     * @param key the field.
     * @return its value.
     * @throws KvBridgeException when it is missing or not a string.
     */
    public String requireString(String key)
    {
        return map.requireString(key);
    }

    /**
     * Reads an optional string.
     *
     * @param key the field.
     * @param defaultValue returned when it is absent.
     * @return its value.
     * @throws KvBridgeException when it is present but not a string.
     */
    public String optionalString(String key, String defaultValue)
    {
        return map.optionalString(key, defaultValue);
    }

    /**
     * Reads an integer.
     *
     * @param key the field.
     * @return its value.
     * @throws KvBridgeException when it is missing or not a 64-bit integer.
     */
    public long requireLong(String key)
    {
        return map.requireLong(key);
    }

    /**
     * Reads an integer in the {@code int} range.
     *
     * @param key the field.
     * @return its value.
     * @throws KvBridgeException when it is missing, not an integer or outside the range.
     */
    public int requireInt(String key)
    {
        return map.requireInt(key);
    }

    /**
     * Reads an optional boolean.
     *
     * @param key the field.
     * @param defaultValue returned when it is absent.
     * @return its value.
     * @throws KvBridgeException when it is present but not a boolean.
     */
    public boolean optionalBoolean(String key, boolean defaultValue)
    {
        return map.optionalBoolean(key, defaultValue);
    }

    /**
     * Reads bytes.
     *
     * @param key the field.
     * @return a copy of its value.
     * @throws KvBridgeException when it is missing or not binary.
     */
    public byte[] requireBinary(String key)
    {
        return map.requireBinary(key);
    }

    /**
     * Reads an optional error code, written as its lower-case name.
     *
     * @param key the field.
     * @param defaultValue returned when it is absent.
     * @return the code.
     * @throws KvBridgeException when it is present but names no code.
     */
    public ErrorCode optionalErrorCode(String key, ErrorCode defaultValue)
    {
        return map.optionalEnum(key, ErrorCode.class, defaultValue);
    }

    /** Builds a message: its {@code type} first, then the fields in the order they were put. Not thread-safe. */
    public static final class Builder
    {
        private final List<String> keys = new ArrayList<>();
        private final List<Object> values = new ArrayList<>();

        private Builder(String type)
        {
            put("type", requireNonNull(type, "type is null"));
        }

        /**
         * Adds a string.
         *
         * @param key the field.
         * @param value its value.
         * @return this builder.
         */
        public Builder put(String key, String value)
        {
            return add(key, requireNonNull(value, "value is null"));
        }

        /**
         * Adds an integer.
         *
         * @param key the field.
         * @param value its value.
         * @return this builder.
         */
        public Builder put(String key, long value)
        {
            return add(key, value);
        }

        /**
         * Adds a boolean.
         *
         * @param key the field.
         * @param value its value.
         * @return this builder.
         */
        public Builder put(String key, boolean value)
        {
            return add(key, value);
        }

        /**
         * Adds bytes.
         *
         * @param key the field.
         * @param value its value.
         * @return this builder.
         */
        public Builder put(String key, byte[] value)
        {
            return add(key, requireNonNull(value, "value is null").clone());
        }

        /**
         * Adds an error code, as its lower-case name.
         *
         * @param key the field.
         * @param value the code.
         * @return this builder.
         */
        public Builder put(String key, ErrorCode value)
        {
            return add(key, requireNonNull(value, "value is null"));
        }

        private Builder add(String key, Object value)
        {
            requireNonNull(key, "key is null");
            KvBridgeException.checkArgument(!keys.contains(key), "key %s is already in the message", key);
            keys.add(key);
            values.add(value);
            return this;
        }

        /** {@return the message's bytes} */
        public byte[] encode()
        {
            WireWriter writer = new WireWriter().map(keys.size());
            for (int i = 0; i < keys.size(); i++) {
                writer.string(keys.get(i)).value(values.get(i));
            }
            return writer.toByteArray();
        }
    }
}
