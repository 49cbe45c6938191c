package io.kvbridge.json;

import io.kvbridge.json.internal.JsonFields;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Copies a map a router's own JSON library made into the values {@link io.kvbridge.json.internal.JsonReader}
 * produces (string keys, {@code Long} integers, lists, maps), as untrusted input: keys that are not
 * strings, collections that report more entries than the document may hold, and collections whose
 * methods throw become problems naming the field, and no more entries are read than the budget
 * allows, whatever a collection claims. Nothing of the caller's collections is kept: the copy is
 * ours, so reading it later cannot throw.
 */
final class ForeignValues
{
    private static final int MAX_DEPTH = 8;

    private final List<String> problems;
    private long budget;

    private ForeignValues(List<String> problems, long budget)
    {
        this.problems = problems;
        this.budget = budget;
    }

    /**
     * Copies the top-level map.
     *
     * @param map the caller's map, possibly null or hostile.
     * @param problems where each problem is added, naming its field.
     * @param budget the most keys and elements read, over the whole document.
     * @return the copy, or null when nothing could be read (a problem says why).
     */
    static Map<String, Object> copy(Map<?, ?> map, List<String> problems, long budget)
    {
        if (map == null) {
            problems.add("kv_transfer_params is null (expected: an object)");
            return null;
        }
        return new ForeignValues(problems, budget).map(map, "", 0);
    }

    private Map<String, Object> map(Map<?, ?> map, String path, int depth)
    {
        Map<String, Object> copy = new LinkedHashMap<>();
        String where = path.isEmpty() ? "kv_transfer_params" : path;
        try {
            int size = map.size();
            if (size < 0 || size > budget) {
                problems.add(where + " reports " + size + " keys, more than the " + budget + " values a document may still hold");
                return copy;
            }
            Iterator<? extends Map.Entry<?, ?>> entries = map.entrySet().iterator();
            while (entries.hasNext()) {
                if (--budget < 0) {
                    problems.add(where + " holds more keys than a document may (the " + size + " it reported were not the end)");
                    return copy;
                }
                Map.Entry<?, ?> entry = entries.next();
                Object key = entry.getKey();
                if (!(key instanceof String name)) {
                    problems.add(where + " has key " + describeKey(key) + " (expected: string keys)");
                    continue;
                }
                String inner = path.isEmpty() ? name : path + "." + name;
                copy.put(name, value(entry.getValue(), inner, depth + 1));
            }
        }
        catch (RuntimeException e) {
            problems.add(where + " could not be read: " + describe(e));
        }
        return copy;
    }

    private Object value(Object value, String path, int depth)
    {
        if (depth > MAX_DEPTH) {
            problems.add(path + " is nested deeper than " + MAX_DEPTH + " levels");
            return null;
        }
        return switch (value) {
            case Long number -> number;
            case Integer number -> number.longValue();
            case Short number -> number.longValue();
            case java.math.BigInteger number -> number.bitLength() < 64 ? number.longValue() : number;
            case Number number -> whole(number, path);
            case Map<?, ?> nested -> map(nested, path, depth);
            case List<?> list -> list(list, path, depth);
            case null, default -> value;
        };
    }

    private Object whole(Number number, String path)
    {
        try {
            double value = number.doubleValue();
            return value == Math.rint(value) && Math.abs(value) < 0x1p53 ? (Object) (long) value : value;
        }
        catch (RuntimeException e) {
            problems.add(path + " could not be read: " + describe(e));
            return null;
        }
    }

    private List<Object> list(List<?> list, String path, int depth)
    {
        List<Object> copy = new ArrayList<>();
        try {
            int size = list.size();
            if (size < 0 || size > budget) {
                problems.add(path + " reports " + size + " entries, more than the " + budget + " values a document may still hold");
                return copy;
            }
            Iterator<?> entries = list.iterator();
            while (entries.hasNext()) {
                if (--budget < 0) {
                    problems.add(path + " holds more entries than a document may (the " + size + " it reported were not the end)");
                    return copy;
                }
                copy.add(value(entries.next(), path, depth + 1));
            }
        }
        catch (RuntimeException e) {
            problems.add(path + " could not be read: " + describe(e));
        }
        return copy;
    }

    private static String describeKey(Object key)
    {
        // the JDK's own scalars print safely; any other object's toString is the caller's code
        return key instanceof Number || key instanceof Boolean || key instanceof Character
                ? key + " (" + key.getClass().getSimpleName() + ")" : JsonFields.describe(key);
    }

    // the class only: a hostile exception's message is the caller's text, of any length, and may throw too
    private static String describe(RuntimeException e)
    {
        return e.getClass().getName() + " thrown by the caller's collection";
    }
}
