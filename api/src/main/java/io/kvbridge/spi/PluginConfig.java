package io.kvbridge.spi;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Reads a plugin's string options into typed values, collecting every problem instead of stopping at
 * the first, and treating keys nobody read as errors.
 *
 * <pre>{@code
 * PluginConfig config = new PluginConfig("local", options);
 * int threads = config.intValue("copy-threads", 1, 1, 64);
 * boolean simulate = config.booleanValue("simulate-device", false);
 * config.finish(); // throws CONFIG_INVALID naming every problem and every unknown key
 * }</pre>
 */
public final class PluginConfig
{
    private final String owner;
    private final Map<String, String> values;
    private final Set<String> known = new HashSet<>();
    private final List<String> problems = new ArrayList<>();

    /**
     * Starts reading.
     *
     * @param owner the plugin's name, used in messages.
     * @param values the options given.
     */
    public PluginConfig(String owner, Map<String, String> values)
    {
        this.owner = requireNonNull(owner, "owner is null");
        this.values = Map.copyOf(requireNonNull(values, "values is null"));
    }

    /**
     * Reads an integer option.
     *
     * @param key option name.
     * @param defaultValue when absent.
     * @param min smallest allowed value.
     * @param max largest allowed value.
     * @return the value, or the default when absent or invalid.
     */
    public int intValue(String key, int defaultValue, int min, int max)
    {
        return (int) longValue(key, defaultValue, min, max);
    }

    /**
     * Reads a long option.
     *
     * @param key option name.
     * @param defaultValue when absent.
     * @param min smallest allowed value.
     * @param max largest allowed value.
     * @return the value, or the default when absent or invalid.
     */
    public long longValue(String key, long defaultValue, long min, long max)
    {
        String text = read(key);
        if (text == null) {
            return defaultValue;
        }
        try {
            long value = Long.parseLong(text.trim());
            if (value < min || value > max) {
                problems.add(String.format(Locale.ROOT, "%s=%d is outside [%d, %d]", key, value, min, max));
                return defaultValue;
            }
            return value;
        }
        catch (NumberFormatException e) {
            problems.add(key + "=" + text + " is not an integer");
            return defaultValue;
        }
    }

    /**
     * Reads a boolean option ({@code true} or {@code false}).
     *
     * @param key option name.
     * @param defaultValue when absent.
     * @return the value, or the default when absent or invalid.
     */
    public boolean booleanValue(String key, boolean defaultValue)
    {
        String text = read(key);
        if (text == null) {
            return defaultValue;
        }
        return switch (text.trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> {
                problems.add(key + "=" + text + " is not a boolean (expected: true or false)");
                yield defaultValue;
            }
        };
    }

    /**
     * Reads a string option.
     *
     * @param key option name.
     * @param defaultValue when absent.
     * @return the value or the default.
     */
    public String stringValue(String key, String defaultValue)
    {
        String text = read(key);
        return text == null ? defaultValue : text;
    }

    /**
     * Reads an option restricted to a set of values.
     *
     * @param key option name.
     * @param defaultValue when absent.
     * @param allowed the accepted values.
     * @return the value, or the default when absent or not allowed.
     */
    public String choice(String key, String defaultValue, Set<String> allowed)
    {
        String text = read(key);
        if (text == null) {
            return defaultValue;
        }
        if (!allowed.contains(text)) {
            problems.add(key + "=" + text + " is not one of " + new TreeSet<>(allowed));
            return defaultValue;
        }
        return text;
    }

    /**
     * Reads an option naming one constant of an enum: the constant's name in lower case with
     * {@code -} for {@code _} ({@link #optionValue}), so {@code HEADS_OUTERMOST} is
     * {@code heads-outermost}.
     *
     * @param key option name.
     * @param defaultValue when absent; its class gives the accepted values.
     * @param <E> the enum.
     * @return the constant, or the default when absent or not one of them.
     */
    public <E extends Enum<E>> E choice(String key, E defaultValue)
    {
        requireNonNull(defaultValue, "defaultValue is null");
        Map<String, E> byValue = new LinkedHashMap<>();
        for (E constant : defaultValue.getDeclaringClass().getEnumConstants()) {
            byValue.put(optionValue(constant), constant);
        }
        return byValue.get(choice(key, optionValue(defaultValue), byValue.keySet()));
    }

    /**
     * Returns the option value that names an enum constant in {@link #choice(String, Enum)}.
     *
     * @param constant the constant.
     * @return its name in lower case, {@code _} written as {@code -}.
     */
    public static String optionValue(Enum<?> constant)
    {
        return constant.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * Records a problem found while combining options.
     *
     * @param problem a message naming the values and the fix.
     */
    public void problem(String problem)
    {
        problems.add(requireNonNull(problem, "problem is null"));
    }

    /**
     * Fails with every problem found and every key that was never read.
     *
     * @throws KvBridgeException {@code CONFIG_INVALID} listing them all.
     */
    public void finish()
    {
        List<String> all = new ArrayList<>(problems);
        Set<String> unknown = new TreeSet<>(values.keySet());
        unknown.removeAll(known);
        for (String key : unknown) {
            all.add("unknown option " + key + " (known: " + new TreeSet<>(known) + ")");
        }
        if (!all.isEmpty()) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, owner + " configuration has " + all.size() + " problem(s): " + String.join("; ", all));
        }
    }

    private String read(String key)
    {
        known.add(key);
        return values.get(key);
    }
}
