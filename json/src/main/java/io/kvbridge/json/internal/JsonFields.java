package io.kvbridge.json.internal;

import static java.util.Objects.requireNonNull;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;

/**
 * Typed access to one JSON object read by {@link JsonReader}, collecting every problem instead of
 * stopping at the first: a missing key, a value of the wrong type or out of its bounds, an unknown
 * key (with the nearest valid name). Each problem names the value's path ({@code kvbridge.lease_ms}).
 * Not thread-safe: one per object being read.
 */
public final class JsonFields
{
    private final String path;
    private final Map<String, ?> map;
    private final List<String> problems;

    /**
     * Reads an object.
     *
     * @param path where the object is, as problems name it; empty for the document itself.
     * @param map the object.
     * @param problems where problems are added; shared by the fields of one document.
     */
    public JsonFields(String path, Map<String, ?> map, List<String> problems)
    {
        this.path = requireNonNull(path, "path is null");
        this.map = requireNonNull(map, "map is null");
        this.problems = requireNonNull(problems, "problems is null");
    }

    /**
     * Returns the nested object under a key, to read it with its own fields.
     *
     * @param key the key.
     * @return the object's fields, or empty when the key is absent or (a problem) not an object.
     */
    public Optional<JsonFields> object(String key)
    {
        Object value = map.get(key);
        if (value == null) {
            return Optional.empty();
        }
        if (!(value instanceof Map<?, ?> nested)) {
            problem(key, "must be an object, not " + describe(value));
            return Optional.empty();
        }
        @SuppressWarnings("unchecked")
        Map<String, ?> typed = (Map<String, ?>) nested;
        return Optional.of(new JsonFields(pathOf(key), typed, problems));
    }

    /**
     * Reads another object of the same document, such as an element of an array, sharing this
     * object's problems.
     *
     * @param path where that object is, for example {@code side_channels[1]}.
     * @param nested the object.
     * @return its fields.
     */
    public JsonFields nested(String path, Map<String, ?> nested)
    {
        return new JsonFields(path, nested, problems);
    }

    /**
     * Returns a string value.
     *
     * @param key the key.
     * @param maxLength the longest accepted.
     * @return the string, or empty when absent or (a problem) not a string or too long.
     */
    public Optional<String> string(String key, int maxLength)
    {
        Object value = map.get(key);
        if (value == null) {
            return Optional.empty();
        }
        if (!(value instanceof String string)) {
            problem(key, "must be a string, not " + describe(value));
            return Optional.empty();
        }
        if (string.length() > maxLength) {
            problem(key, "has " + string.length() + " characters, more than " + maxLength);
            return Optional.empty();
        }
        return Optional.of(string);
    }

    /**
     * Returns an integer value.
     *
     * @param key the key.
     * @param min the smallest accepted.
     * @param max the largest accepted.
     * @return the integer, or empty when absent or (a problem) not an integer in {@code [min, max]}.
     */
    public OptionalLong integer(String key, long min, long max)
    {
        Object value = map.get(key);
        if (value == null) {
            return OptionalLong.empty();
        }
        if (!(value instanceof Long number)) {
            problem(key, "must be an integer, not " + describe(value));
            return OptionalLong.empty();
        }
        if (number < min || number > max) {
            problem(key, String.format(Locale.ROOT, "=%d is outside [%d, %d]", number, min, max));
            return OptionalLong.empty();
        }
        return OptionalLong.of(number);
    }

    /**
     * Returns a boolean value.
     *
     * @param key the key.
     * @return the boolean, or empty when absent or (a problem) not a boolean.
     */
    public Optional<Boolean> bool(String key)
    {
        Object value = map.get(key);
        if (value == null) {
            return Optional.empty();
        }
        if (!(value instanceof Boolean bool)) {
            problem(key, "must be true or false, not " + describe(value));
            return Optional.empty();
        }
        return Optional.of(bool);
    }

    /**
     * Returns an array value.
     *
     * @param key the key.
     * @param maxSize the most elements accepted.
     * @return the elements, or empty when absent or (a problem) not an array or too long.
     */
    public Optional<List<?>> array(String key, int maxSize)
    {
        Object value = map.get(key);
        if (value == null) {
            return Optional.empty();
        }
        if (!(value instanceof List<?> list)) {
            problem(key, "must be an array, not " + describe(value));
            return Optional.empty();
        }
        if (list.size() > maxSize) {
            problem(key, "has " + list.size() + " elements, more than " + maxSize);
            return Optional.empty();
        }
        return Optional.of(list);
    }

    /**
     * Returns a value as read, for a key whose value may be of several types.
     *
     * @param key the key.
     * @return the value, or null when absent.
     */
    public Object raw(String key)
    {
        return map.get(key);
    }

    /**
     * Tells whether a key is present with a value other than {@code null}.
     *
     * @param key the key.
     * @return whether it is.
     */
    public boolean has(String key)
    {
        return map.get(key) != null;
    }

    /**
     * Returns the object's keys.
     *
     * @return the keys, in document order.
     */
    public Set<String> keys()
    {
        return new LinkedHashSet<>(map.keySet());
    }

    /**
     * Adds a problem for every key that is not one of the known ones, with the nearest known name.
     *
     * @param known the valid keys of this object.
     */
    public void refuseUnknown(Collection<String> known)
    {
        for (String key : map.keySet()) {
            if (!known.contains(key)) {
                problems.add("unknown key " + pathOf(key) + suggestion(key, known));
            }
        }
    }

    /**
     * Adds a problem about one value.
     *
     * @param key the key of the value.
     * @param problem what is wrong, read after the path (for example {@code "must be positive"}).
     */
    public void problem(String key, String problem)
    {
        problems.add(pathOf(key) + (problem.startsWith("=") ? "" : " ") + problem);
    }

    /**
     * Returns the path of a value of this object.
     *
     * @param key the key.
     * @return for example {@code kvbridge.lease_ms}.
     */
    public String pathOf(String key)
    {
        return path.isEmpty() ? key : path + "." + key;
    }

    /**
     * Says which known name is nearest to a mistyped one.
     *
     * @param name the name given.
     * @param known the valid names.
     * @return {@code " (did you mean x?)"}, or the valid names when none is near; empty when none is valid.
     */
    public static String suggestion(String name, Collection<String> known)
    {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : new TreeSet<>(known)) {
            int distance = distance(name.toLowerCase(Locale.ROOT), candidate.toLowerCase(Locale.ROOT));
            if (distance < bestDistance) {
                best = candidate;
                bestDistance = distance;
            }
        }
        if (best == null) {
            return "";
        }
        // close enough to be a typo: a third of the name's letters, at least two
        if (bestDistance <= Math.max(2, name.length() / 3)) {
            return " (did you mean " + best + "?)";
        }
        return " (valid: " + String.join(", ", new TreeSet<>(known)) + ")";
    }

    private static int distance(String a, String b)
    {
        if (a.length() > 256 || b.length() > 256) {
            return Integer.MAX_VALUE - 1;
        }
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }

    /**
     * Describes a value's JSON type for a problem message.
     *
     * @param value a value {@link JsonReader} returned.
     * @return for example {@code "the string \"5\""} or {@code "an array"}.
     */
    public static String describe(Object value)
    {
        return switch (value) {
            case null -> "null";
            case String string -> "the string \"" + (string.length() > 40 ? string.substring(0, 40) + "..." : string) + "\"";
            case Long number -> "the integer " + number;
            case Double number -> "the number " + number;
            case Boolean bool -> bool.toString();
            case List<?> list -> "an array";
            case Map<?, ?> map -> "an object";
            default -> "a " + value.getClass().getSimpleName();
        };
    }
}
