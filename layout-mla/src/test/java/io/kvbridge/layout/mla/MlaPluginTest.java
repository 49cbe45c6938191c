package io.kvbridge.layout.mla;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.layout.mla.MlaCacheLayout.Packing;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

final class MlaPluginTest
{
    @Test
    void theJarRegistersItsFactory()
    {
        List<CacheLayoutFactory> found = ServiceLoader.load(CacheLayoutFactory.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(factory -> factory.name().equals("mla"))
                .toList();
        assertEquals(1, found.size());
        CacheLayoutFactory factory = found.getFirst();
        assertEquals(MlaCacheLayoutFactory.class, factory.getClass());
        assertEquals(Spi.VERSION, factory.spiVersion());
        assertFalse(factory.description().isEmpty());
        assertEquals(Packing.AUTO, ((MlaCacheLayout) factory.create(Map.of())).packing());
        assertEquals(Packing.PACKED, ((MlaCacheLayout) factory.create(Map.of("packing", "packed"))).packing());
    }

    @Test
    void badOptionsAreRejectedTogether()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> new MlaCacheLayoutFactory().create(Map.of("packing", "dense", "stride", "64")));
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().contains("packing=dense") && e.getMessage().contains("unknown option stride"), e.getMessage());
    }
}
