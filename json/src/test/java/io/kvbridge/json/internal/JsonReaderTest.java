package io.kvbridge.json.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class JsonReaderTest
{
    private static final JsonReader READER = JsonReader.of(ErrorCode.CONFIG_INVALID, 10_000, 4, 1_000);

    @Test
    void readsEveryTypeInDocumentOrder()
    {
        Object value = READER.read("doc", " {\"b\": [1, -2, 3.5, 1e3, true, false, null], \"a\": \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u2603\", \"c\": {}} ");
        Map<String, Object> expected = new LinkedHashMap<>();
        expected.put("b", Arrays.asList(1L, -2L, 3.5, 1000.0, true, false, null));
        expected.put("a", "x\"\\/\b\f\n\r\té\u2603");
        expected.put("c", Map.of());
        assertEquals(expected, value);
        assertEquals(List.of("b", "a", "c"), new ArrayList<>(((Map<?, ?>) value).keySet()));
        assertEquals(Long.MIN_VALUE, READER.read("doc", "-9223372036854775808"));
    }

    @Test
    void whatItWritesItReadsBack()
    {
        Map<String, Object> value = new LinkedHashMap<>();
        value.put("text", "tab\tquote\" non-ascii \u00fc\u2603 control \u0001");
        value.put("list", List.of(1L, List.of(), Map.of("k", false)));
        value.put("none", null);
        assertEquals(value, READER.read("doc", JsonWriter.write(value, false, 0)));
        assertEquals(value, READER.read("doc", JsonWriter.write(value, true, 2)));
    }

    @Test
    void malformedDocumentsAreRefusedWithWhereAndWhy()
    {
        // syntax errors carry the parser's description; the place is what a user acts on
        assertProblem("{\"a\": 1,}", "'}'", "at line 1, column 9");
        assertProblem("[1, 2,]", "']'", "at line 1, column 7");
        assertProblem("{\n  \"a\": 01\n}", "Leading zeroes not allowed", "at line 2, column 9");
        assertProblem("{\"a\": NaN}", "'NaN'", "at line 1, column 10");
        assertProblem("// comment\n{}", "'/'", "at line 1, column 1");
        assertProblem("\"a\u0001\"", "CTRL-CHAR, code 1", "at line 1, column 3");
        assertProblem("\"\\x\"", "escape 'x'", "at line 1, column 3");
        assertProblem("\"\\u12zz\"", "hex-digit", "at line 1, column 6");
        assertProblem("\"open", "end-of-input", "at line 1, column 6");
        assertProblem("{\"a\" 1}", "colon", "at line 1, column 6");
        assertProblem("[1 2]", "comma", "at line 1, column 4");
        assertProblem("{a: 1}", "double-quote to start field name", "at line 1, column 2");
        assertProblem("-", "No digit following sign", "at line 1, column 2");
        assertProblem("1.", "Decimal point not followed by a digit", "at line 1, column 2");
        assertProblem("tru", "'tru'", "at line 1, column 4");
        assertProblem("{\"a\": 1]", "expected '}' (for Object starting at line 1, column 1)", "at line 1, column 8");
        // the rules of our own, worded as before
        assertProblem("{\"a\": 1, \"a\": 2}", "duplicate key \"a\" (each key may appear once per object)", "at line 1, column 10");
        assertProblem("{} {}", "unexpected '{' after the document's value", "at line 1, column 4");
        assertProblem("99999999999999999999", "integer 99999999999999999999 is outside the 64-bit range", "at line 1, column 1");
        assertProblem("1e999", "number 1e999 is too large", "at line 1, column 1");
        assertProblem("", "the document ends where a value was expected", "");
    }

    @Test
    void theDocumentsCharactersReachTheMessagePrintable()
    {
        // a terminal escape in a key or token is named, never echoed, so that a log shows what was sent
        assertProblem("{\"\\u001b[2J\": 1, \"\\u001b[2J\": 2}", "duplicate key \"U+001B[2J\"", "at line 1, column 18");
        assertProblem("[x\u001b[2J]", "U+001B", "at line 1, column 4");
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> READER.read("doc", "[x\u001b[2J]"));
        assertTrue(e.getMessage().chars().noneMatch(c -> c < 0x20), e.getMessage());
        // a long number is refused by its length before it is converted
        assertProblem("1".repeat(2_000), "Number value length (2000) exceeds the maximum allowed (1000", "");
    }

    @Test
    void hostileDocumentsStopAtTheLimitsBeforeBuildingMuch()
    {
        assertProblem("[[[[[1]]]]]", "nesting deeper than 4 levels", "at line 1, column 5");
        assertProblem("[" + "0,".repeat(1_000) + "0]", "more than 1000 values", "at line 1, column 2000");
        KvBridgeException huge = assertThrows(KvBridgeException.class, () -> READER.read("doc", " ".repeat(10_001)));
        assertEquals("KVB/ConfigInvalid: doc has 10,001 characters, more than the 10,000 accepted", huge.getMessage());
        // a deep document of the largest size is refused by depth, without a stack overflow
        JsonReader roomy = JsonReader.of(ErrorCode.PROTOCOL_ERROR, 1 << 20, 64, 1 << 20);
        KvBridgeException deep = assertThrows(KvBridgeException.class, () -> roomy.read("doc", "[".repeat(500_000)));
        assertEquals(ErrorCode.PROTOCOL_ERROR, deep.code());
        assertTrue(deep.getMessage().contains("nesting deeper than 64 levels"), deep.getMessage());
    }

    private static void assertProblem(String text, String problem, String where)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> READER.read("doc", text));
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().startsWith("KVB/ConfigInvalid: doc is not valid JSON: "), e.getMessage());
        assertTrue(e.getMessage().contains(problem), e.getMessage());
        assertTrue(e.getMessage().endsWith(where), e.getMessage());
    }
}
