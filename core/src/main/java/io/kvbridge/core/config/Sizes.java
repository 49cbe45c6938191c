package io.kvbridge.core.config;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Byte sizes as people write them: {@code 4096}, {@code 4K}, {@code 32KiB}, {@code 4M}, {@code 1GiB} (binary units). */
public final class Sizes
{
    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*(|k|kib|m|mib|g|gib)", Pattern.CASE_INSENSITIVE);

    private Sizes()
    {
    }

    /**
     * Parses a size.
     *
     * @param name the option the text came from, for the error message.
     * @param text the size.
     * @return the bytes.
     */
    public static long parse(String name, String text)
    {
        Matcher matcher = SIZE.matcher(text.strip());
        if (!matcher.matches()) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID,
                    name + "=" + text + " is not a size; write bytes or a number with K, KiB, M, MiB, G or GiB, for example 32KiB");
        }
        int shift = switch (matcher.group(2).toLowerCase(Locale.ROOT)) {
            case "" -> 0;
            case "k", "kib" -> 10;
            case "m", "mib" -> 20;
            default -> 30;
        };
        try {
            long value = Long.parseLong(matcher.group(1));
            if (value <= 0 || value > (Long.MAX_VALUE >> shift)) {
                throw new NumberFormatException();
            }
            return value << shift;
        }
        catch (NumberFormatException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, name + "=" + text + " must be a positive size below 8 EiB");
        }
    }

    /**
     * Formats a size in the largest binary unit that divides it.
     *
     * @param bytes the size.
     * @return for example {@code 32 KiB}.
     */
    public static String format(long bytes)
    {
        String[] units = {"B", "KiB", "MiB", "GiB"};
        int unit = 0;
        long value = bytes;
        while (unit < units.length - 1 && value >= 1024 && value % 1024 == 0) {
            value /= 1024;
            unit++;
        }
        return value + " " + units[unit];
    }
}
