package io.kvbridge.spi.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import org.junit.jupiter.api.Test;

final class CacheLayoutDefaultsTest
{
    /** A layout relying on every default; describing is not what these tests are about. */
    private static final CacheLayout DEFAULTS = new CacheLayout()
    {
        @Override
        public String name()
        {
            return "defaults";
        }

        @Override
        public CacheGeometry describe(ModelCacheSpec spec, CacheMemory memory, Rank rank)
        {
            throw new UnsupportedOperationException("not used by these tests");
        }
    };

    @Test
    void slidingWindowsKeepTheBlocksTheirWindowSpansPlusOne()
    {
        CacheGroup window = new CacheGroup(1, GroupKind.SLIDING_WINDOW, 2048, 8, 128);
        assertEquals(129, DEFAULTS.exchangedBlocks(window, 16, 1000));
        assertEquals(7, DEFAULTS.exchangedBlocks(window, 16, 7));
        assertEquals(0, DEFAULTS.exchangedBlocks(new CacheGroup(1, GroupKind.SLIDING_WINDOW, 0, 8, 128), 16, 1000));
        assertEquals(1000, DEFAULTS.exchangedBlocks(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128), 16, 1000));
        assertEquals(2, DEFAULTS.exchangedBlocks(new CacheGroup(1, GroupKind.SLIDING_WINDOW, Integer.MAX_VALUE, 8, 128), 1, 2), "no int overflow");
    }

    @Test
    void badArgumentsAreRejected()
    {
        CacheGroup window = new CacheGroup(1, GroupKind.SLIDING_WINDOW, 2048, 8, 128);
        assertThrows(KvBridgeException.class, () -> DEFAULTS.exchangedBlocks(window, 0, 10));
        assertThrows(KvBridgeException.class, () -> DEFAULTS.exchangedBlocks(window, 16, -1));
        assertThrows(NullPointerException.class, () -> DEFAULTS.exchangedBlocks(null, 16, 1));
    }

    @Test
    void regionsDoNotOverlapUnlessALayoutSaysSo()
    {
        assertFalse(DEFAULTS.regionsMayOverlap());
    }
}
