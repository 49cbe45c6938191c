package io.kvbridge.api.json;

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
        assertProblem("{\"a\": 1,}", "a comma before '}' at line 1, column 9");
        assertProblem("[1, 2,]", "a comma before ']' at line 1, column 7");
        assertProblem("{\"a\": 1, \"a\": 2}", "duplicate key \"a\" (each key may appear once per object) at line 1, column 10");
        assertProblem("{\n  \"a\": 01\n}", "a number with a leading zero at line 2, column 9");
        assertProblem("{\"a\": NaN}", "unexpected 'N' where a value was expected at line 1, column 7");
        assertProblem("// comment\n{}", "unexpected '/' where a value was expected at line 1, column 1");
        assertProblem("{} {}", "unexpected '{' after the document's value at line 1, column 4");
        assertProblem("\"a\u0001\"", "control character U+0001 inside a string (write it as an escape)");
        assertProblem("\"\\x\"", "unknown escape \\'x'");
        assertProblem("\"\\u12zz\"", "\\u must be followed by four hexadecimal digits");
        assertProblem("\"open", "the document ends inside a string");
        assertProblem("{\"a\" 1}", "expected ':', found '1'");
        assertProblem("[1 2]", "expected ',' or ']', found '2'");
        assertProblem("{a: 1}", "expected a key in double quotes, found 'a'");
        assertProblem("99999999999999999999", "integer 99999999999999999999 is outside the 64-bit range");
        assertProblem("1e999", "number 1e999 is too large");
        assertProblem("-", "'-' must be followed by a digit");
        assertProblem("1.", "a decimal point must be followed by a digit");
        assertProblem("tru", "unexpected 't' where a value was expected");
        assertProblem("", "the document ends where a value was expected");
    }

    @Test
    void hostileDocumentsStopAtTheLimitsBeforeBuildingMuch()
    {
        assertProblem("[[[[[1]]]]]", "nesting deeper than 4 levels");
        assertProblem("[" + "0,".repeat(1_000) + "0]", "more than 1000 values");
        KvBridgeException huge = assertThrows(KvBridgeException.class, () -> READER.read("doc", " ".repeat(10_001)));
        assertEquals("KVB/ConfigInvalid: doc has 10,001 characters, more than the 10,000 accepted", huge.getMessage());
        // a deep document of the largest size is refused by depth, without a stack overflow
        JsonReader roomy = JsonReader.of(ErrorCode.PROTOCOL_ERROR, 1 << 20, 64, 1 << 20);
        KvBridgeException deep = assertThrows(KvBridgeException.class, () -> roomy.read("doc", "[".repeat(500_000)));
        assertEquals(ErrorCode.PROTOCOL_ERROR, deep.code());
        assertTrue(deep.getMessage().contains("nesting deeper than 64 levels"), deep.getMessage());
    }

    private static void assertProblem(String text, String problem)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> READER.read("doc", text));
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().startsWith("KVB/ConfigInvalid: doc is not valid JSON: "), e.getMessage());
        assertTrue(e.getMessage().contains(problem), e.getMessage());
    }
}
