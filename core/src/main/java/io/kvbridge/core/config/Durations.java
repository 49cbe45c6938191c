package io.kvbridge.core.config;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Durations as people write them: {@code 500ms}, {@code 5s}, {@code 2m}, {@code 1h}, {@code 1.5s},
 * or ISO-8601 ({@code PT5S}). One parser for the command line and the configuration file, so both
 * accept the same text and refuse it with the same message.
 */
public final class Durations
{
    private static final Pattern SHORT = Pattern.compile("(\\d{1,12})(?:\\.(\\d{1,9}))?\\s*(ns|us|ms|s|m|h|d)");

    private Durations()
    {
    }

    /**
     * Parses a duration.
     *
     * @param name the option or key the text came from, for the error message.
     * @param text the duration.
     * @return the duration; never negative.
     * @throws KvBridgeException {@code CONFIG_INVALID} naming the text and the accepted forms.
     */
    public static Duration parse(String name, String text)
    {
        String stripped = text.strip();
        Matcher matcher = SHORT.matcher(stripped.toLowerCase(Locale.ROOT));
        if (matcher.matches()) {
            return ofUnits(name, text, matcher);
        }
        if (stripped.length() > 1 && Character.toUpperCase(stripped.charAt(0)) == 'P') {
            try {
                Duration parsed = Duration.parse(stripped);
                if (!parsed.isNegative()) {
                    return parsed;
                }
            }
            catch (DateTimeParseException | ArithmeticException e) {
                // falls through to the one message that says what is accepted
            }
        }
        throw invalid(name, text);
    }

    /**
     * Formats a duration as this parser reads it back: the largest unit that keeps it whole.
     *
     * @param duration a non-negative duration.
     * @return for example {@code 500ms}, {@code 5s} or {@code 2m}.
     */
    public static String format(Duration duration)
    {
        long nanos;
        try {
            nanos = duration.toNanos();
        }
        catch (ArithmeticException e) {
            return duration.toString();
        }
        String[] units = {"d", "h", "m", "s", "ms", "us"};
        long[] sizes = {86_400_000_000_000L, 3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L, 1_000_000L, 1_000L};
        for (int i = 0; i < units.length; i++) {
            if (nanos != 0 && nanos % sizes[i] == 0) {
                return nanos / sizes[i] + units[i];
            }
        }
        return nanos + "ns";
    }

    private static Duration ofUnits(String name, String text, Matcher matcher)
    {
        long nanosPerUnit = switch (matcher.group(3)) {
            case "ns" -> 1L;
            case "us" -> 1_000L;
            case "ms" -> 1_000_000L;
            case "s" -> 1_000_000_000L;
            case "m" -> 60_000_000_000L;
            case "h" -> 3_600_000_000_000L;
            default -> 86_400_000_000_000L;
        };
        long whole = Long.parseLong(matcher.group(1));
        String fraction = matcher.group(2);
        try {
            long nanos = Math.multiplyExact(whole, nanosPerUnit);
            if (fraction != null) {
                long scale = (long) Math.pow(10, fraction.length());
                // exact for every unit from ms up; below that a fraction finer than a nanosecond is refused
                if (Math.multiplyExact(Long.parseLong(fraction), nanosPerUnit) % scale != 0) {
                    throw invalid(name, text);
                }
                nanos = Math.addExact(nanos, Long.parseLong(fraction) * nanosPerUnit / scale);
            }
            return Duration.ofNanos(nanos);
        }
        catch (ArithmeticException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, name + "=" + text + " is longer than 292 years; give a shorter duration");
        }
    }

    private static KvBridgeException invalid(String name, String text)
    {
        return new KvBridgeException(ErrorCode.CONFIG_INVALID,
                name + "=" + text + " is not a duration; write a number with ns, us, ms, s, m, h or d (500ms, 5s, 2m) or ISO-8601 (PT5S)");
    }
}
