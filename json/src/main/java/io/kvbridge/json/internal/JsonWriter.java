package io.kvbridge.json.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes maps, lists, strings, integers, booleans and null as JSON, byte-for-byte as Python's
 * {@code json.dumps(value, sort_keys=..., indent=...)} with its defaults ({@code ", "} and
 * {@code ": "} separators on one line, {@code ","} and {@code ": "} when indented, non-ASCII
 * characters escaped), so that other languages reproduce kvbridge's documents and hashes exactly
 * and {@link JsonReader} reads them back.
 */
public final class JsonWriter
{
    private JsonWriter()
    {
    }

    /**
     * Writes a value.
     *
     * @param value maps with string keys, lists, strings, integers ({@code Integer} or {@code Long}),
     *     booleans or null.
     * @param sortKeys whether map keys are written in sorted order (else in iteration order).
     * @param indent spaces per level; 0 writes one line.
     * @return the JSON text, ASCII only.
     * @throws IllegalArgumentException for a value of another type.
     */
    public static String write(Object value, boolean sortKeys, int indent)
    {
        StringBuilder out = new StringBuilder();
        write(out, value, sortKeys, indent, 0);
        return out.toString();
    }

    private static void write(StringBuilder out, Object value, boolean sortKeys, int indent, int level)
    {
        switch (value) {
            case null -> out.append("null");
            case String string -> string(out, string);
            case Boolean bool -> out.append(bool ? "true" : "false");
            case Long number -> out.append(number.longValue());
            case Integer number -> out.append(number.intValue());
            case Map<?, ?> map -> {
                List<String> keys = new ArrayList<>();
                for (Object key : map.keySet()) {
                    keys.add((String) key);
                }
                if (sortKeys) {
                    Collections.sort(keys);
                }
                out.append('{');
                for (int i = 0; i < keys.size(); i++) {
                    separator(out, i, indent, level + 1);
                    string(out, keys.get(i));
                    out.append(": ");
                    write(out, map.get(keys.get(i)), sortKeys, indent, level + 1);
                }
                close(out, keys.isEmpty(), indent, level);
                out.append('}');
            }
            case List<?> list -> {
                out.append('[');
                for (int i = 0; i < list.size(); i++) {
                    separator(out, i, indent, level + 1);
                    write(out, list.get(i), sortKeys, indent, level + 1);
                }
                close(out, list.isEmpty(), indent, level);
                out.append(']');
            }
            default -> throw new IllegalArgumentException("cannot write " + value.getClass().getName() + " as JSON");
        }
    }

    private static void separator(StringBuilder out, int index, int indent, int level)
    {
        if (indent == 0) {
            out.append(index == 0 ? "" : ", ");
            return;
        }
        out.append(index == 0 ? "\n" : ",\n").repeat(' ', indent * level);
    }

    private static void close(StringBuilder out, boolean empty, int indent, int level)
    {
        if (indent > 0 && !empty) {
            out.append('\n').repeat(' ', indent * level);
        }
    }

    private static void string(StringBuilder out, String value)
    {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    }
                    else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
