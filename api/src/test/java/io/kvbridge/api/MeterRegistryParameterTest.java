package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

/**
 * {@link KvBridge.Builder#meterRegistry(Object)} refuses what is not a Micrometer registry where it
 * is passed, not later at build; a real registry being accepted is kvbridge-core's tests' part, which
 * have Micrometer.
 */
final class MeterRegistryParameterTest
{
    @Test
    void refusesAnotherTypeAtOnceNamingTheExpectedClass()
    {
        KvBridge.Builder builder = KvBridge.builder();
        KvBridgeException refused = assertThrows(KvBridgeException.class, () -> builder.meterRegistry(new StringBuilder("registry")));
        assertEquals(ErrorCode.CONFIG_INVALID, refused.code());
        assertTrue(refused.getMessage().contains("meterRegistry is a java.lang.StringBuilder, not a io.micrometer.core.instrument.MeterRegistry"),
                refused.getMessage());
        assertTrue(builder.meterRegistry().isEmpty(), "a refused registry is not kept");
        assertThrows(NullPointerException.class, () -> builder.meterRegistry(null));
    }
}
