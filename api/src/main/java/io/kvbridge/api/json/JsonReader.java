package io.kvbridge.api.json;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A strict, bounded JSON reader (RFC 8259) for documents that come from outside the process:
 * configuration files and the parameters a router carries between engines. It lives in the api,
 * which depends on the JDK only, so that an engine or router can read and write those documents
 * with {@code kvbridge-api} alone, whatever JSON library (or version of one) it uses itself.
 *
 * <p>Objects become {@link LinkedHashMap}s in document order, arrays {@link ArrayList}s, strings
 * {@link String}s, integers {@link Long}s, other numbers finite {@link Double}s, and {@code true},
 * {@code false} and {@code null} themselves. Refused, each with its line and column: comments,
 * trailing commas, leading zeros, {@code NaN}, integers outside the {@code long} range, control
 * characters in strings, a duplicate key in one object (the document would mean two things), text
 * after the value, a document longer than {@code maxChars}, nesting deeper than {@code maxDepth},
 * and more than {@code maxValues} values in all. Nothing is allocated from a size the document
 * claims: every value is built as it is read, and the limits bound what reading can build.
 * Instances are immutable and thread-safe.
 */
public final class JsonReader
{
    private final ErrorCode code;
    private final int maxChars;
    private final int maxDepth;
    private final int maxValues;

    private JsonReader(ErrorCode code, int maxChars, int maxDepth, int maxValues)
    {
        this.code = requireNonNull(code, "code is null");
        checkArgument(maxChars > 0, "maxChars=%d is not positive", maxChars);
        checkArgument(maxDepth > 0 && maxDepth <= 1_000, "maxDepth=%d is outside [1, 1000]", maxDepth);
        checkArgument(maxValues > 0, "maxValues=%d is not positive", maxValues);
        this.maxChars = maxChars;
        this.maxDepth = maxDepth;
        this.maxValues = maxValues;
    }

    /**
     * Creates a reader.
     *
     * @param code the code of the errors it throws, such as {@code CONFIG_INVALID} for a file the
     *     user wrote or {@code PROTOCOL_ERROR} for a message from a peer.
     * @param maxChars the longest document read.
     * @param maxDepth the deepest nesting of objects and arrays; 1 allows a top-level object of scalars.
     * @param maxValues the most values (scalars, objects and arrays) in one document.
     * @return the reader.
     */
    public static JsonReader of(ErrorCode code, int maxChars, int maxDepth, int maxValues)
    {
        return new JsonReader(code, maxChars, maxDepth, maxValues);
    }

    /**
     * Reads one document.
     *
     * @param what what the text is, for the error message (for example {@code "configuration file /etc/kvbridge.json"}).
     * @param text the document.
     * @return the value, as described above.
     * @throws KvBridgeException with this reader's code, naming {@code what}, the problem and where it is.
     */
    public Object read(String what, CharSequence text)
    {
        requireNonNull(what, "what is null");
        requireNonNull(text, "text is null");
        if (text.length() > maxChars) {
            throw new KvBridgeException(code, String.format(Locale.ROOT, "%s has %,d characters, more than the %,d accepted", what, text.length(), maxChars));
        }
        return new Parse(what, text).document();
    }

    /** The state of one read; confined to the calling thread. */
    private final class Parse
    {
        private final String what;
        private final CharSequence text;
        private int position;
        private int values;

        Parse(String what, CharSequence text)
        {
            this.what = what;
            this.text = text;
        }

        Object document()
        {
            skipWhitespace();
            Object value = value(0);
            skipWhitespace();
            if (position < text.length()) {
                throw error("unexpected " + describe(text.charAt(position)) + " after the document's value");
            }
            return value;
        }

        private Object value(int depth)
        {
            if (++values > maxValues) {
                throw error("more than " + maxValues + " values");
            }
            if (position >= text.length()) {
                throw error("the document ends where a value was expected");
            }
            char c = text.charAt(position);
            return switch (c) {
                case '{' -> object(depth + 1);
                case '[' -> array(depth + 1);
                case '"' -> string();
                case 't' -> literal("true", Boolean.TRUE);
                case 'f' -> literal("false", Boolean.FALSE);
                case 'n' -> literal("null", null);
                default -> {
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        yield number();
                    }
                    throw error("unexpected " + describe(c) + " where a value was expected");
                }
            };
        }

        private Map<String, Object> object(int depth)
        {
            checkDepth(depth);
            position++;
            Map<String, Object> map = new LinkedHashMap<>();
            skipWhitespace();
            if (peek() == '}') {
                position++;
                return map;
            }
            while (true) {
                skipWhitespace();
                if (peek() != '"') {
                    throw error(peek() == '}' ? "a comma before '}'" : "expected a key in double quotes, found " + describeNext());
                }
                int keyStart = position;
                String key = string();
                skipWhitespace();
                expect(':');
                skipWhitespace();
                Object value = value(depth);
                if (map.containsKey(key)) {
                    position = keyStart;
                    throw error("duplicate key \"" + key + "\" (each key may appear once per object)");
                }
                map.put(key, value);
                skipWhitespace();
                char next = peek();
                position++;
                if (next == '}') {
                    return map;
                }
                if (next != ',') {
                    position--;
                    throw error("expected ',' or '}', found " + describeNext());
                }
            }
        }

        private List<Object> array(int depth)
        {
            checkDepth(depth);
            position++;
            List<Object> list = new ArrayList<>();
            skipWhitespace();
            if (peek() == ']') {
                position++;
                return list;
            }
            while (true) {
                skipWhitespace();
                if (peek() == ']') {
                    throw error("a comma before ']'");
                }
                list.add(value(depth));
                skipWhitespace();
                char next = peek();
                position++;
                if (next == ']') {
                    return list;
                }
                if (next != ',') {
                    position--;
                    throw error("expected ',' or ']', found " + describeNext());
                }
            }
        }

        private void checkDepth(int depth)
        {
            if (depth > maxDepth) {
                throw error("nesting deeper than " + maxDepth + " levels");
            }
        }

        private String string()
        {
            position++;
            StringBuilder out = new StringBuilder();
            while (true) {
                if (position >= text.length()) {
                    throw error("the document ends inside a string");
                }
                char c = text.charAt(position++);
                if (c == '"') {
                    return out.toString();
                }
                if (c < 0x20) {
                    position--;
                    throw error("control character " + describe(c) + " inside a string (write it as an escape)");
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (position >= text.length()) {
                    throw error("the document ends inside a string");
                }
                char escape = text.charAt(position++);
                switch (escape) {
                    case '"', '\\', '/' -> out.append(escape);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> out.append(unicodeEscape());
                    default -> {
                        position -= 2;
                        throw error("unknown escape \\" + describe(escape));
                    }
                }
            }
        }

        private char unicodeEscape()
        {
            if (position + 4 > text.length()) {
                throw error("the document ends inside a \\u escape");
            }
            int value = 0;
            for (int i = 0; i < 4; i++) {
                int digit = Character.digit(text.charAt(position + i), 16);
                if (digit < 0) {
                    throw error("\\u must be followed by four hexadecimal digits");
                }
                value = value * 16 + digit;
            }
            position += 4;
            return (char) value;
        }

        private Object number()
        {
            int start = position;
            if (peek() == '-') {
                position++;
            }
            if (peek() == '0') {
                position++;
                if (Character.isDigit(peek())) {
                    throw error("a number with a leading zero");
                }
            }
            else if (!digits()) {
                throw error("'-' must be followed by a digit");
            }
            boolean integer = true;
            if (peek() == '.') {
                position++;
                integer = false;
                if (!digits()) {
                    throw error("a decimal point must be followed by a digit");
                }
            }
            if (peek() == 'e' || peek() == 'E') {
                position++;
                integer = false;
                if (peek() == '+' || peek() == '-') {
                    position++;
                }
                if (!digits()) {
                    throw error("an exponent must have a digit");
                }
            }
            String literal = text.subSequence(start, position).toString();
            if (integer) {
                try {
                    return Long.parseLong(literal);
                }
                catch (NumberFormatException e) {
                    position = start;
                    throw error("integer " + abbreviate(literal) + " is outside the 64-bit range");
                }
            }
            double value = Double.parseDouble(literal);
            if (Double.isInfinite(value)) {
                position = start;
                throw error("number " + abbreviate(literal) + " is too large");
            }
            return value;
        }

        private boolean digits()
        {
            int start = position;
            while (position < text.length() && text.charAt(position) >= '0' && text.charAt(position) <= '9') {
                position++;
            }
            return position > start;
        }

        private Object literal(String word, Object value)
        {
            for (int i = 0; i < word.length(); i++) {
                if (position + i >= text.length() || text.charAt(position + i) != word.charAt(i)) {
                    throw error("unexpected " + describeNext() + " where a value was expected");
                }
            }
            position += word.length();
            return value;
        }

        private void expect(char c)
        {
            if (peek() != c) {
                throw error("expected '" + c + "', found " + describeNext());
            }
            position++;
        }

        private char peek()
        {
            return position < text.length() ? text.charAt(position) : '\0';
        }

        private void skipWhitespace()
        {
            while (position < text.length()) {
                char c = text.charAt(position);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    return;
                }
                position++;
            }
        }

        private String describeNext()
        {
            return position < text.length() ? describe(text.charAt(position)) : "the end of the document";
        }

        private KvBridgeException error(String problem)
        {
            int line = 1;
            int column = 1;
            for (int i = 0; i < Math.min(position, text.length()); i++) {
                if (text.charAt(i) == '\n') {
                    line++;
                    column = 1;
                }
                else {
                    column++;
                }
            }
            return new KvBridgeException(code, String.format(Locale.ROOT, "%s is not valid JSON: %s at line %d, column %d", what, problem, line, column));
        }
    }

    private static String describe(char c)
    {
        return c >= 0x20 && c < 0x7f ? "'" + c + "'" : String.format(Locale.ROOT, "U+%04X", (int) c);
    }

    private static String abbreviate(String text)
    {
        return text.length() <= 40 ? text : text.substring(0, 40) + "...";
    }
}
