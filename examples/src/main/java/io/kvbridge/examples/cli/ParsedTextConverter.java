package io.kvbridge.examples.cli;

import io.kvbridge.core.config.Durations;
import io.kvbridge.core.config.Sizes;
import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import java.util.function.BiFunction;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads option values through the parsers the configuration uses too ({@link Durations},
 * {@link Sizes}), so that the command line and a configuration file accept and refuse the same text.
 *
 * @param <T> the value's type.
 */
abstract class ParsedTextConverter<T> implements ITypeConverter<T>
{
    private static final Pattern PLAIN_SECONDS = Pattern.compile("[0-9]+(\\.[0-9]+)?");

    private final BiFunction<String, String, T> parser;

    ParsedTextConverter(BiFunction<String, String, T> parser)
    {
        this.parser = parser;
    }

    @Override
    public final T convert(String text)
    {
        try {
            return parser.apply("", text);
        }
        catch (KvBridgeException e) {
            // picocli names the option in front of this; the parser's own "NAME=TEXT" prefix would repeat it
            String message = e.getMessage();
            int at = message.indexOf("=" + text);
            String reason = at < 0 ? message : message.substring(at + 1 + text.length()).strip();
            throw new TypeConversionException("'" + text + "' " + reason);
        }
    }

    /** {@code 500ms}, {@code 5s}, {@code 2m}, {@code 1h} or ISO-8601 ({@code PT5S}). */
    static final class DurationConverter extends ParsedTextConverter<Duration>
    {
        DurationConverter()
        {
            super(Durations::parse);
        }
    }

    /**
     * Seconds as a plain number ({@code 30}, {@code 0.5}), or any duration the configuration reads
     * ({@code 5s}, {@code 500ms}, {@code 2m}), in seconds: the options named {@code --...-seconds}.
     */
    static final class SecondsConverter implements ITypeConverter<Double>
    {
        private final DurationConverter durations = new DurationConverter();

        @Override
        public Double convert(String text)
        {
            String stripped = text.strip();
            if (PLAIN_SECONDS.matcher(stripped).matches()) {
                return Double.parseDouble(stripped);
            }
            Duration duration;
            try {
                duration = durations.convert(text);
            }
            catch (TypeConversionException e) {
                throw new TypeConversionException("'" + text + "' is neither seconds (30, 0.5) nor a duration (500ms, 5s, 2m)");
            }
            return duration.getSeconds() + duration.getNano() / 1e9;
        }
    }

    /** {@code 4096}, {@code 4K}, {@code 32KiB}, {@code 4M}, {@code 1GiB}. */
    static final class SizeConverter extends ParsedTextConverter<Long>
    {
        SizeConverter()
        {
            super(Sizes::parse);
        }
    }
}
