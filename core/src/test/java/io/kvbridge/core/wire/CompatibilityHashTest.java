package io.kvbridge.core.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.json.internal.JsonWriter;
import io.kvbridge.spi.geometry.ModelIdentity;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class CompatibilityHashTest
{
    private static final ModelIdentity LLAMA = new ModelIdentity("meta-llama/Llama-3.1-8B", "bfloat16", "bfloat16", 8, 128, 32, false);

    // expected values produced by Python: json.dumps(factors, sort_keys=True) and hashlib.sha256
    @Test
    void hashesSortedKeyJsonExactlyAsPythonDoes()
    {
        assertEquals("{\"cache_dtype\": \"bfloat16\", \"dtype\": \"bfloat16\", \"head_size\": 128, \"hma\": false, \"layer_count\": 32, "
                + "\"model\": \"meta-llama/Llama-3.1-8B\", \"total_kv_heads\": 8}", CompatibilityHash.factorsJson(LLAMA));
        assertEquals("029d3ccfe0138b960ebda77354778c3b5b3e34ba36d5c59eda7910326f9450b6", CompatibilityHash.of(LLAMA));
    }

    @Test
    void escapesNonAsciiAndControlCharactersAsPythonDoes()
    {
        ModelIdentity identity = new ModelIdentity("modèle/ü\"\\\u2603 \u007f\t", "bfloat16", "bfloat16", 8, 128, 32, true);
        assertEquals("{\"cache_dtype\": \"bfloat16\", \"dtype\": \"bfloat16\", \"head_size\": 128, \"hma\": true, \"layer_count\": 32, "
                + "\"model\": \"mod\\u00e8le/\\u00fc\\\"\\\\\\u2603 \\u007f\\t\", \"total_kv_heads\": 8}", CompatibilityHash.factorsJson(identity));
        assertEquals("8720c48dfe7ed91842884e3ecfc2b193ee116d111a5c057f9b453103b3dc126b", CompatibilityHash.of(identity));
    }

    @Test
    void everyIdentityFactorChangesTheHash()
    {
        List<ModelIdentity> variants = List.of(
                new ModelIdentity("other/model", "bfloat16", "bfloat16", 8, 128, 32, false),
                new ModelIdentity("meta-llama/Llama-3.1-8B", "float16", "bfloat16", 8, 128, 32, false),
                new ModelIdentity("meta-llama/Llama-3.1-8B", "bfloat16", "fp8_e4m3", 8, 128, 32, false),
                new ModelIdentity("meta-llama/Llama-3.1-8B", "bfloat16", "bfloat16", 4, 128, 32, false),
                new ModelIdentity("meta-llama/Llama-3.1-8B", "bfloat16", "bfloat16", 8, 64, 32, false),
                new ModelIdentity("meta-llama/Llama-3.1-8B", "bfloat16", "bfloat16", 8, 128, 31, false),
                new ModelIdentity("meta-llama/Llama-3.1-8B", "bfloat16", "bfloat16", 8, 128, 32, true));
        for (ModelIdentity variant : variants) {
            assertNotEquals(CompatibilityHash.of(LLAMA), CompatibilityHash.of(variant), variant.toString());
        }
        assertEquals(CompatibilityHash.of(LLAMA), CompatibilityHash.of(new ModelIdentity("meta-llama/Llama-3.1-8B", "bfloat16", "bfloat16", 8, 128, 32, false)));
    }

    @Test
    void recognisesWellFormedHashes()
    {
        assertTrue(CompatibilityHash.isWellFormed(CompatibilityHash.of(LLAMA)));
        assertFalse(CompatibilityHash.isWellFormed(CompatibilityHash.of(LLAMA).toUpperCase(java.util.Locale.ROOT)));
        assertFalse(CompatibilityHash.isWellFormed(CompatibilityHash.of(LLAMA).substring(1)));
        assertFalse(CompatibilityHash.isWellFormed("g" + CompatibilityHash.of(LLAMA).substring(1)));
    }

    @Test
    void indentedJsonMatchesPython()
    {
        Map<String, Object> value = new LinkedHashMap<>();
        value.put("b", List.of(1L, Map.of("x", List.of()), Map.of()));
        value.put("a", "z");
        assertEquals("{\n  \"b\": [\n    1,\n    {\n      \"x\": []\n    },\n    {}\n  ],\n  \"a\": \"z\"\n}", JsonWriter.write(value, false, 2));
    }
}
