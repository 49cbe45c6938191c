package io.kvbridge.examples.cli;

import io.kvbridge.core.config.Durations;
import io.kvbridge.core.config.Sizes;
import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import java.util.function.BiFunction;
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

    /** {@code 4096}, {@code 4K}, {@code 32KiB}, {@code 4M}, {@code 1GiB}. */
    static final class SizeConverter extends ParsedTextConverter<Long>
    {
        SizeConverter()
        {
            super(Sizes::parse);
        }
    }
}
