package io.kvbridge.layout.hma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

final class HmaPluginTest
{
    @Test
    void theJarRegistersItsFactory()
    {
        List<CacheLayoutFactory> found = ServiceLoader.load(CacheLayoutFactory.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(factory -> factory.name().equals("hma"))
                .toList();
        assertEquals(1, found.size());
        CacheLayoutFactory factory = found.getFirst();
        assertEquals(HmaCacheLayoutFactory.class, factory.getClass());
        assertEquals(Spi.VERSION, factory.spiVersion());
        assertFalse(factory.description().isEmpty());
        assertEquals("hma", factory.create(Map.of()).name());
    }

    @Test
    void optionsAreRejectedBecauseThereAreNone()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> new HmaCacheLayoutFactory().create(Map.of("window", "4096")));
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().contains("unknown option window"), e.getMessage());
    }
}
