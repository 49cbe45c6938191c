package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** {@link ModelIdentity#builder}: the named form builds what the constructor builds and names what is missing. */
final class ModelIdentityBuilderTest
{
    @Test
    void buildsWhatTheConstructorBuilds()
    {
        assertEquals(new ModelIdentity("m", "bfloat16", "fp8_e4m3", 8, 128, 32, false),
                ModelIdentity.builder("m").dtype("bfloat16").cacheDtype("fp8_e4m3").totalKvHeads(8).headSize(128).layerCount(32).build());
        assertEquals(new ModelIdentity("h", "float16", "float16", 4, 64, 6, true),
                ModelIdentity.builder("h").layerCount(6).headSize(64).totalKvHeads(4).cacheDtype("float16").dtype("float16").hma(true).build());
    }

    @Test
    void refusesEachMissingRequiredValueNamingIt()
    {
        assertMissing("dtype", () -> ModelIdentity.builder("m").cacheDtype("bfloat16").totalKvHeads(8).headSize(128).layerCount(32).build());
        assertMissing("cacheDtype", () -> ModelIdentity.builder("m").dtype("bfloat16").totalKvHeads(8).headSize(128).layerCount(32).build());
        assertMissing("totalKvHeads", () -> ModelIdentity.builder("m").dtype("bfloat16").cacheDtype("bfloat16").headSize(128).layerCount(32).build());
        assertMissing("headSize", () -> ModelIdentity.builder("m").dtype("bfloat16").cacheDtype("bfloat16").totalKvHeads(8).layerCount(32).build());
        assertMissing("layerCount", () -> ModelIdentity.builder("m").dtype("bfloat16").cacheDtype("bfloat16").totalKvHeads(8).headSize(128).build());
    }

    @Test
    void refusesWhatTheRecordRefusesWithItsMessage()
    {
        KvBridgeException zero = assertThrows(KvBridgeException.class,
                () -> ModelIdentity.builder("m").dtype("bfloat16").cacheDtype("bfloat16").totalKvHeads(0).headSize(128).layerCount(32).build());
        assertEquals("KVB/InvalidArgument: totalKvHeads=0 is not positive", zero.getMessage());
    }

    private static void assertMissing(String field, Executable build)
    {
        KvBridgeException missing = assertThrows(KvBridgeException.class, build);
        assertEquals(ErrorCode.INVALID_ARGUMENT, missing.code());
        assertTrue(missing.getMessage().startsWith("KVB/InvalidArgument: model m: " + field + " is not set (expected: ."), missing.getMessage());
    }
}
