package io.kvbridge.transport;

import java.util.Locale;

/**
 * Makes text a peer chose (its name in a hello, an initiator's name) safe to put in a log line or a
 * health message: control characters (newlines, escape sequences, C1 controls) are written as
 * escapes, a backslash is doubled so an escape cannot be forged, and the text is cut to a length.
 */
public final class PeerText
{
    /** Characters kept of a peer's text; the rest is cut and marked. */
    public static final int MAX_CHARS = 256;

    private PeerText()
    {
    }

    /**
     * {@return {@code text} with every control character escaped, at most {@link #MAX_CHARS} characters of it}
     *
     * @param text what a peer sent; null gives {@code "null"}.
     */
    public static String printable(String text)
    {
        if (text == null) {
            return "null";
        }
        int length = Math.min(text.length(), MAX_CHARS);
        boolean clean = length == text.length();
        for (int i = 0; i < length && clean; i++) {
            char c = text.charAt(i);
            clean = c != '\\' && !unsafe(c);
        }
        if (clean) {
            return text;
        }
        StringBuilder out = new StringBuilder(length + 16);
        for (int i = 0; i < length; i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (unsafe(c)) {
                        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    }
                    else {
                        out.append(c);
                    }
                }
            }
        }
        if (length < text.length()) {
            out.append("...(").append(text.length() - length).append(" more characters)");
        }
        return out.toString();
    }

    /** C0 and C1 controls, DEL, and the characters that reorder or hide text on a terminal. */
    private static boolean unsafe(char c)
    {
        return Character.isISOControl(c) || (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069') || c == '\u200e' || c == '\u200f';
    }
}
