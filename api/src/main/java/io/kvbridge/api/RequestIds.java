package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

/**
 * Request id rules shared by both sides. Engines often append a random {@code -xxxxxxxx} suffix
 * (8 hex digits) to a request's id per instance, so a push producer also matches a consumer's
 * registration whose id differs only in that suffix.
 */
public final class RequestIds
{
    /** Longest accepted request id, in characters. */
    public static final int MAX_LENGTH = 512;

    private RequestIds()
    {
    }

    /**
     * Removes a trailing {@code -} followed by exactly 8 hexadecimal digits (either case).
     *
     * @param id a request id.
     * @return the id without that suffix, or the id itself when it has none.
     */
    public static String baseId(String id)
    {
        requireNonNull(id, "id is null");
        int dash = id.length() - 9;
        if (dash < 0 || id.charAt(dash) != '-') {
            return id;
        }
        for (int i = dash + 1; i < id.length(); i++) {
            if (Character.digit(id.charAt(i), 16) < 0) {
                return id;
            }
        }
        return id.substring(0, dash);
    }

    /**
     * Tells whether an id can travel in notifications: 1 to {@link #MAX_LENGTH} printable ASCII
     * characters, none of them {@code ,} (heartbeats list ids separated by commas).
     *
     * @param id a request id.
     * @return the reason it cannot, or null when it can.
     */
    public static String problem(String id)
    {
        if (id == null || id.isEmpty()) {
            return "request id is empty";
        }
        if (id.length() > MAX_LENGTH) {
            return "request id of " + id.length() + " characters is longer than " + MAX_LENGTH;
        }
        if (id.startsWith("HB:") || id.startsWith("PUSH_")) {
            return "request id " + id + " starts with a reserved prefix (HB: or PUSH_)";
        }
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (c < 0x21 || c > 0x7e || c == ',') {
                return "request id " + id + " holds character 0x" + Integer.toHexString(c) + " at " + i
                        + " (expected: printable ASCII without spaces or commas)";
            }
        }
        return null;
    }
}
