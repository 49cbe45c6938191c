package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** What a peer chose to call itself reaches logs and reports with no control character in it. */
final class PeerTextTest
{
    @Test
    void controlCharactersAreEscaped()
    {
        String name = "peer\nWARN forged line\r\u001b[31mred\u001b[0m\t\u0085\u009b\u202eevil\\u000a";
        String printable = PeerText.printable(name);
        assertEquals("peer\\nWARN forged line\\r\\u001b[31mred\\u001b[0m\\t\\u0085\\u009b\\u202eevil\\\\u000a", printable);
        assertTrue(printable.chars().noneMatch(Character::isISOControl), printable);
    }

    @Test
    void plainTextIsKeptAsItIs()
    {
        String name = "decoder-rank-3 (ünïcode)";
        assertSame(name, PeerText.printable(name));
    }

    @Test
    void longTextIsCut()
    {
        String printable = PeerText.printable("x".repeat(10_000));
        assertTrue(printable.startsWith("x".repeat(PeerText.MAX_CHARS) + "...(9744 more characters)"), printable);
        assertFalse(printable.length() > PeerText.MAX_CHARS + 40, printable);
    }
}
