package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import io.kvbridge.json.internal.JsonWriter;
import io.kvbridge.spi.geometry.ModelIdentity;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The compatibility hash: SHA-256, in lower-case hex, of the model identity written as sorted-key
 * JSON ({@code json.dumps(factors, sort_keys=True)} in Python gives the same bytes). It covers what
 * two peers must share to exchange KV at all: model, dtype, cache dtype, total KV heads, head size,
 * layer count and whether HMA is on. Block size, tensor-parallel size, capacities and layout are
 * deliberately left out: the planner checks them, so heterogeneous peers can still pair.
 */
public final class CompatibilityHash
{
    /** Length of a hash in hex characters. */
    public static final int HEX_LENGTH = 64;

    private CompatibilityHash()
    {
    }

    /**
     * Computes the hash of a model identity.
     *
     * @param identity the model identity.
     * @return 64 lower-case hex characters.
     */
    public static String of(ModelIdentity identity)
    {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(factorsJson(identity).getBytes(StandardCharsets.US_ASCII));
            return HexFormat.of().formatHex(digest);
        }
        catch (NoSuchAlgorithmException e) {
            // every Java platform must provide SHA-256
            throw new IllegalStateException("SHA-256 is not available", e);
        }
    }

    /**
     * Returns the exact text that is hashed.
     *
     * @param identity the model identity.
     * @return sorted-key JSON of the hashed factors.
     */
    public static String factorsJson(ModelIdentity identity)
    {
        requireNonNull(identity, "identity is null");
        Map<String, Object> factors = new LinkedHashMap<>();
        factors.put("model", identity.model());
        factors.put("dtype", identity.dtype());
        factors.put("cache_dtype", identity.cacheDtype());
        factors.put("total_kv_heads", identity.totalKvHeads());
        factors.put("head_size", identity.headSize());
        factors.put("layer_count", identity.layerCount());
        factors.put("hma", identity.hma());
        return JsonWriter.write(factors, true, 0);
    }

    /**
     * Tells whether a string has the form of a hash.
     *
     * @param hash the string.
     * @return true for exactly 64 lower-case hex characters.
     */
    public static boolean isWellFormed(String hash)
    {
        if (hash.length() != HEX_LENGTH) {
            return false;
        }
        for (int i = 0; i < hash.length(); i++) {
            char c = hash.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
                return false;
            }
        }
        return true;
    }
}
