package io.kvbridge.core.config;

import io.kvbridge.api.FailurePolicy;
import io.kvbridge.api.Integrity;
import io.kvbridge.api.TransferMode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryConfig;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The value types a configuration document and the environment share, parsed from text the same
 * way for both, each problem added to a list naming where the value came from. Methods return
 * {@code null} for a value with a problem.
 */
final class ConfigValues
{
    /** The shortest and longest durations accepted: below a millisecond nothing is timed, beyond a day nothing waits that long on purpose. */
    static final Duration MIN_DURATION = Duration.ofMillis(1);
    static final Duration MAX_DURATION = Duration.ofDays(1);
    /** Engine ids, agent names, host names and layout names longer than this are mistakes. */
    static final int MAX_NAME = 255;

    private ConfigValues()
    {
    }

    /** A discovery location, {@code scheme://host:port[,host:port...]}; returned as given once it parses. */
    static String discovery(String where, String text, List<String> problems)
    {
        try {
            return DirectoryConfig.parse(text).location();
        }
        catch (KvBridgeException e) {
            problems.add(where + ": " + reason(e));
            return null;
        }
    }

    static BridgeConfig.Role role(String where, String text, List<String> problems)
    {
        for (BridgeConfig.Role role : BridgeConfig.Role.values()) {
            if (role.configName().equals(text)) {
                return role;
            }
        }
        problems.add(where + "=" + text + " is not a role (expected: kv_producer, kv_consumer or kv_both)");
        return null;
    }

    static FailurePolicy failurePolicy(String where, String text, List<String> problems)
    {
        return switch (text) {
            case "fail" -> FailurePolicy.FAIL;
            case "recompute" -> FailurePolicy.RECOMPUTE;
            default -> {
                problems.add(where + "=" + text + " is not a failure policy (expected: fail or recompute)");
                yield null;
            }
        };
    }

    static Integrity integrity(String where, String text, List<String> problems)
    {
        try {
            return Integrity.parse(where, text);
        }
        catch (KvBridgeException e) {
            problems.add(reason(e));
            return null;
        }
    }

    static TransferMode mode(String where, String text, List<String> problems)
    {
        return switch (text) {
            case "push" -> TransferMode.PUSH;
            case "pull" -> TransferMode.PULL;
            default -> {
                problems.add(where + " holds " + text + " (expected: push or pull)");
                yield null;
            }
        };
    }

    /** @return the modes, null when one is invalid or there are none. */
    static Set<TransferMode> modes(String where, List<String> names, List<String> problems)
    {
        Set<TransferMode> modes = EnumSet.noneOf(TransferMode.class);
        boolean valid = true;
        for (String name : names) {
            TransferMode mode = mode(where, name, problems);
            valid &= mode != null;
            if (mode != null) {
                modes.add(mode);
            }
        }
        if (names.isEmpty()) {
            problems.add(where + " is empty (expected: push, pull or both)");
            valid = false;
        }
        return valid ? modes : null;
    }

    static Duration duration(String where, String text, List<String> problems)
    {
        Duration duration;
        try {
            duration = Durations.parse(where, text);
        }
        catch (KvBridgeException e) {
            problems.add(reason(e));
            return null;
        }
        return bounded(where, duration, problems);
    }

    static Duration bounded(String where, Duration duration, List<String> problems)
    {
        if (duration.compareTo(MIN_DURATION) < 0 || duration.compareTo(MAX_DURATION) > 0) {
            problems.add(where + "=" + Durations.format(duration) + " is outside [1ms, 1d]");
            return null;
        }
        return duration;
    }

    static Integer port(String where, long port, List<String> problems)
    {
        if (port < 0 || port > 65_535) {
            problems.add(String.format(Locale.ROOT, "%s=%d is outside [0, 65535] (0 picks a free port)", where, port));
            return null;
        }
        return (int) port;
    }

    static String name(String where, String text, List<String> problems)
    {
        if (text.isEmpty() || text.length() > MAX_NAME || !text.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
            problems.add(where + "=\"" + (text.length() > 40 ? text.substring(0, 40) + "..." : text) + "\" is not 1 to " + MAX_NAME + " printable ASCII characters without spaces");
            return null;
        }
        return text;
    }

    /** @return the message of a typed error without its code, to list it among others. */
    static String reason(KvBridgeException e)
    {
        String message = e.getMessage();
        String prefix = e.code().id() + ": ";
        return message.startsWith(prefix) ? message.substring(prefix.length()) : message;
    }
}
