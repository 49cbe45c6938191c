package io.kvbridge.json.internal;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A strict, bounded JSON reader (RFC 8259) for documents that come from outside the process:
 * configuration files and the parameters a router carries between engines. It parses with
 * Jackson's streaming parser ({@code jackson-core}, which depends on nothing else), so that an
 * engine or router reads those documents with {@code kvbridge-json} and that one small library.
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
    private static final int MAX_PROBLEM_LENGTH = 200;
    /** How Jackson names the start of an unclosed object or array inside a message. */
    private static final Pattern NESTED_LOCATION = Pattern.compile("\\[Source: [^;\\]]*(?:\\([^)]*\\))?; line: (\\d+), column: (\\d+)]");

    private final ErrorCode code;
    private final int maxChars;
    private final int maxDepth;
    private final int maxValues;
    private final JsonFactory factory;

    private JsonReader(ErrorCode code, int maxChars, int maxDepth, int maxValues)
    {
        this.code = requireNonNull(code, "code is null");
        checkArgument(maxChars > 0, "maxChars=%d is not positive", maxChars);
        checkArgument(maxDepth > 0 && maxDepth <= 1_000, "maxDepth=%d is outside [1, 1000]", maxDepth);
        checkArgument(maxValues > 0, "maxValues=%d is not positive", maxValues);
        this.maxChars = maxChars;
        this.maxDepth = maxDepth;
        this.maxValues = maxValues;
        // Jackson's own bounds sit just outside ours, so that ours are the ones a document meets
        this.factory = JsonFactory.builder()
                .streamReadConstraints(StreamReadConstraints.builder()
                        .maxNestingDepth(maxDepth + 1)
                        .maxStringLength(Math.max(maxChars, StreamReadConstraints.DEFAULT_MAX_STRING_LEN))
                        .maxDocumentLength(maxChars)
                        .build())
                .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
                .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
                .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
                .build();
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
        try (JsonParser parser = factory.createParser(text.toString())) {
            return new Parse(what, parser).document();
        }
        catch (JsonProcessingException e) {
            JsonLocation location = e.getLocation();
            throw error(what, jacksonProblem(e), location == null ? -1 : location.getLineNr(), location == null ? -1 : location.getColumnNr());
        }
        catch (IOException e) {
            // reading a String does no I/O; a parser that says otherwise is a defect
            throw new IllegalStateException("reading " + what + " from memory failed", e);
        }
    }

    /** The state of one read; confined to the calling thread. */
    private final class Parse
    {
        private final String what;
        private final JsonParser parser;
        private int values;

        Parse(String what, JsonParser parser)
        {
            this.what = what;
            this.parser = parser;
        }

        Object document()
                throws IOException
        {
            JsonToken first = parser.nextToken();
            if (first == null) {
                throw errorHere("the document ends where a value was expected");
            }
            Object value = value(first, 0);
            JsonToken after = parser.nextToken();
            if (after != null) {
                throw errorHere("unexpected " + describe(after) + " after the document's value");
            }
            return value;
        }

        private Object value(JsonToken token, int depth)
                throws IOException
        {
            if (++values > maxValues) {
                throw errorHere("more than " + maxValues + " values");
            }
            return switch (token) {
                case START_OBJECT -> object(depth + 1);
                case START_ARRAY -> array(depth + 1);
                case VALUE_STRING -> parser.getText();
                case VALUE_TRUE -> Boolean.TRUE;
                case VALUE_FALSE -> Boolean.FALSE;
                case VALUE_NULL -> null;
                case VALUE_NUMBER_INT -> integer();
                case VALUE_NUMBER_FLOAT -> decimal();
                default -> throw errorHere("unexpected " + describe(token) + " where a value was expected");
            };
        }

        private Map<String, Object> object(int depth)
                throws IOException
        {
            checkDepth(depth);
            Map<String, Object> map = new LinkedHashMap<>();
            for (JsonToken token = parser.nextToken(); token != JsonToken.END_OBJECT; token = parser.nextToken()) {
                // the parser yields only names here, or throws
                String key = parser.currentName();
                JsonLocation keyLocation = parser.currentTokenLocation();
                if (map.containsKey(key)) {
                    throw error(what, "duplicate key \"" + abbreviate(key) + "\" (each key may appear once per object)", keyLocation.getLineNr(),
                            keyLocation.getColumnNr());
                }
                Object value = value(parser.nextToken(), depth);
                map.put(key, value);
            }
            return map;
        }

        private List<Object> array(int depth)
                throws IOException
        {
            checkDepth(depth);
            List<Object> list = new ArrayList<>();
            for (JsonToken token = parser.nextToken(); token != JsonToken.END_ARRAY; token = parser.nextToken()) {
                list.add(value(token, depth));
            }
            return list;
        }

        private Object integer()
                throws IOException
        {
            if (parser.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                throw errorHere("integer " + abbreviate(parser.getText()) + " is outside the 64-bit range");
            }
            return parser.getLongValue();
        }

        private Object decimal()
                throws IOException
        {
            double value = parser.getDoubleValue();
            if (Double.isInfinite(value)) {
                throw errorHere("number " + abbreviate(parser.getText()) + " is too large");
            }
            return value;
        }

        private void checkDepth(int depth)
        {
            if (depth > maxDepth) {
                throw errorHere("nesting deeper than " + maxDepth + " levels");
            }
        }

        private KvBridgeException errorHere(String problem)
        {
            JsonLocation location = parser.currentTokenLocation();
            return error(what, problem, location.getLineNr(), location.getColumnNr());
        }
    }

    private KvBridgeException error(String what, String problem, int line, int column)
    {
        String where = line > 0 && column > 0 ? String.format(Locale.ROOT, " at line %d, column %d", line, column) : "";
        return new KvBridgeException(code, what + " is not valid JSON: " + problem + where);
    }

    // Jackson's message without its location (ours is appended), with the document's characters in it made printable
    private static String jacksonProblem(JsonProcessingException e)
    {
        String message = e.getOriginalMessage() == null ? e.getClass().getSimpleName() : e.getOriginalMessage();
        message = NESTED_LOCATION.matcher(message).replaceAll("line $1, column $2");
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < message.length() && out.length() < MAX_PROBLEM_LENGTH; i++) {
            char c = message.charAt(i);
            if (c == '\n' || c == '\r') {
                out.append(' ');
            }
            else if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || Character.isSurrogate(c)) {
                out.append(String.format(Locale.ROOT, "U+%04X", (int) c));
            }
            else {
                out.append(c);
            }
        }
        return out.length() < MAX_PROBLEM_LENGTH ? out.toString() : out + "...";
    }

    private static String describe(JsonToken token)
    {
        return switch (token) {
            case START_OBJECT -> "'{'";
            case START_ARRAY -> "'['";
            case END_OBJECT -> "'}'";
            case END_ARRAY -> "']'";
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "a number";
            case VALUE_TRUE, VALUE_FALSE, VALUE_NULL -> "'" + token.asString() + "'";
            default -> token.name();
        };
    }

    private static String abbreviate(String text)
    {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < text.length() && i < 40; i++) {
            char c = text.charAt(i);
            out.append(c < 0x20 || (c >= 0x7f && c <= 0x9f) ? String.format(Locale.ROOT, "U+%04X", (int) c) : String.valueOf(c));
        }
        return text.length() <= 40 ? out.toString() : out + "...";
    }
}
