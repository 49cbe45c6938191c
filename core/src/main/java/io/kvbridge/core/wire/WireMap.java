package io.kvbridge.core.wire;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Typed, path-aware access to one decoded msgpack map. Unknown keys are simply never asked for; an
 * absent or nil optional key yields its default; an absent required key, a value of the wrong type
 * or out of range is a {@link ErrorCode#PROTOCOL_ERROR} naming the full field path, e.g.
 * {@code regions[3].stride}.
 */
public final class WireMap
{
    private final String what;
    private final String path;
    private final Map<String, Object> entries;

    WireMap(String what, String path, Map<String, Object> entries)
    {
        this.what = what;
        this.path = path;
        this.entries = entries;
    }

    /**
     * Tells whether a key is present with a value other than nil.
     *
     * @param key field name.
     * @return true when present.
     */
    public boolean has(String key)
    {
        Object value = entries.get(key);
        return value != null && value != WireDecoder.Nil.INSTANCE;
    }

    /**
     * Reads a required string.
     *
     * @param key field name.
     * @return the value.
     */
    public String requireString(String key)
    {
        return asString(key, require(key));
    }

    /**
     * Reads an optional string.
     *
     * @param key field name.
     * @param defaultValue returned when the key is absent.
     * @return the value.
     */
    public String optionalString(String key, String defaultValue)
    {
        return has(key) ? asString(key, entries.get(key)) : defaultValue;
    }

    /**
     * Reads a required signed 64-bit integer.
     *
     * @param key field name.
     * @return the value.
     */
    public long requireLong(String key)
    {
        return asLong(key, require(key));
    }

    /**
     * Reads a required integer that must fit 32 bits.
     *
     * @param key field name.
     * @return the value.
     */
    public int requireInt(String key)
    {
        return toInt(key, requireLong(key));
    }

    /**
     * Reads an optional integer that must fit 32 bits.
     *
     * @param key field name.
     * @param defaultValue returned when the key is absent.
     * @return the value.
     */
    public int optionalInt(String key, int defaultValue)
    {
        return has(key) ? toInt(key, asLong(key, entries.get(key))) : defaultValue;
    }

    /**
     * Reads an optional signed 64-bit integer.
     *
     * @param key field name.
     * @param defaultValue returned when the key is absent.
     * @return the value.
     */
    public long optionalLong(String key, long defaultValue)
    {
        return has(key) ? asLong(key, entries.get(key)) : defaultValue;
    }

    /**
     * Reads an optional boolean.
     *
     * @param key field name.
     * @param defaultValue returned when the key is absent.
     * @return the value.
     */
    public boolean optionalBoolean(String key, boolean defaultValue)
    {
        if (!has(key)) {
            return defaultValue;
        }
        if (entries.get(key) instanceof Boolean value) {
            return value;
        }
        throw wrongType(key, "a boolean");
    }

    /**
     * Reads required binary data.
     *
     * @param key field name.
     * @return the bytes (not copied: the decoded tree is owned by the caller).
     */
    public byte[] requireBinary(String key)
    {
        if (require(key) instanceof byte[] value) {
            return value;
        }
        throw wrongType(key, "binary");
    }

    /**
     * Reads optional binary data.
     *
     * @param key field name.
     * @return the bytes, or an empty array when absent.
     */
    public byte[] optionalBinary(String key)
    {
        return has(key) ? requireBinary(key) : new byte[0];
    }

    /**
     * Reads a required nested map.
     *
     * @param key field name.
     * @return the nested map.
     */
    public WireMap requireMap(String key)
    {
        return asMap(pathOf(key), key, require(key));
    }

    /**
     * Reads a required array of maps.
     *
     * @param key field name.
     * @return the maps in order.
     */
    public List<WireMap> requireMaps(String key)
    {
        return maps(key, requireList(key));
    }

    /**
     * Reads an optional array of maps.
     *
     * @param key field name.
     * @return the maps in order, empty when absent.
     */
    public List<WireMap> optionalMaps(String key)
    {
        return has(key) ? maps(key, requireList(key)) : List.of();
    }

    /**
     * Reads a required array of strings.
     *
     * @param key field name.
     * @return the strings in order.
     */
    public List<String> requireStrings(String key)
    {
        return strings(key, requireList(key));
    }

    /**
     * Reads an optional array of strings.
     *
     * @param key field name.
     * @return the strings in order, empty when absent.
     */
    public List<String> optionalStrings(String key)
    {
        return has(key) ? strings(key, requireList(key)) : List.of();
    }

    /**
     * Reads a required enum constant, written as its lower-case name.
     *
     * @param key field name.
     * @param type the enum.
     * @param <E> the enum type.
     * @return the constant.
     */
    public <E extends Enum<E>> E requireEnum(String key, Class<E> type)
    {
        return asEnum(key, requireString(key), type);
    }

    /**
     * Reads an optional enum constant, written as its lower-case name.
     *
     * @param key field name.
     * @param type the enum.
     * @param defaultValue returned when the key is absent.
     * @param <E> the enum type.
     * @return the constant.
     */
    public <E extends Enum<E>> E optionalEnum(String key, Class<E> type, E defaultValue)
    {
        return has(key) ? asEnum(key, requireString(key), type) : defaultValue;
    }

    /**
     * Builds a protocol error about one field.
     *
     * @param key field name.
     * @param problem what is wrong and, where possible, what was expected.
     * @return the exception to throw.
     */
    public KvBridgeException error(String key, String problem)
    {
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, what + " field " + pathOf(key) + ": " + problem);
    }

    /**
     * Returns the full path of a field of this map, for messages.
     *
     * @param key field name.
     * @return e.g. {@code regions[2].stride}.
     */
    public String pathOf(String key)
    {
        return path.isEmpty() ? key : path + "." + key;
    }

    /**
     * Returns the path of this map itself.
     *
     * @return e.g. {@code regions[2]}, or empty for the top-level map.
     */
    public String path()
    {
        return path;
    }

    /**
     * Returns the name of the message the map belongs to.
     *
     * @return e.g. {@code peer metadata}.
     */
    public String what()
    {
        return what;
    }

    /**
     * Encodes the wire name of an enum constant.
     *
     * @param value the constant.
     * @return its lower-case name.
     */
    public static String wireName(Enum<?> value)
    {
        return value.name().toLowerCase(Locale.ROOT);
    }

    private Object require(String key)
    {
        if (!has(key)) {
            throw error(key, "required field is missing (the peer's wire format lacks it: is it a kvbridge side channel of a supported version?)");
        }
        return entries.get(key);
    }

    private List<?> requireList(String key)
    {
        if (require(key) instanceof List<?> list) {
            return list;
        }
        throw wrongType(key, "an array");
    }

    private List<WireMap> maps(String key, List<?> values)
    {
        List<WireMap> maps = new ArrayList<>(values.size());
        for (int i = 0; i < values.size(); i++) {
            maps.add(asMap(pathOf(key) + "[" + i + "]", key + "[" + i + "]", values.get(i)));
        }
        return maps;
    }

    private List<String> strings(String key, List<?> values)
    {
        List<String> strings = new ArrayList<>(values.size());
        for (int i = 0; i < values.size(); i++) {
            strings.add(asString(key + "[" + i + "]", values.get(i)));
        }
        return strings;
    }

    private WireMap asMap(String childPath, String key, Object value)
    {
        if (value instanceof Map<?, ?> map) {
            @SuppressWarnings("unchecked")
            Map<String, Object> entries = (Map<String, Object>) map;
            return new WireMap(what, childPath, entries);
        }
        throw error(key, "expected a map, got " + WireDecoder.describe(value));
    }

    private String asString(String key, Object value)
    {
        if (value instanceof String string) {
            return string;
        }
        throw error(key, "expected a string, got " + WireDecoder.describe(value));
    }

    private long asLong(String key, Object value)
    {
        if (value instanceof Long number) {
            return number;
        }
        throw error(key, "expected an integer within the signed 64-bit range, got " + WireDecoder.describe(value));
    }

    private int toInt(String key, long value)
    {
        if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
            throw error(key, "value=" + value + " is outside the 32-bit integer range");
        }
        return (int) value;
    }

    private <E extends Enum<E>> E asEnum(String key, String name, Class<E> type)
    {
        List<String> names = new ArrayList<>();
        for (E constant : type.getEnumConstants()) {
            if (wireName(constant).equals(name)) {
                return constant;
            }
            names.add(wireName(constant));
        }
        throw error(key, "value=" + name + " is not one of " + names);
    }

    private KvBridgeException wrongType(String key, String expected)
    {
        return error(key, "expected " + expected + ", got " + WireDecoder.describe(entries.get(key)));
    }
}
