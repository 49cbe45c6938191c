package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

/** Options reach worker processes as JSON, so the record checks what every host relies on. */
final class DemoOptionsTest
{
    @Test
    void valuesOutsideTheListsAreRefusedNamingTheList()
    {
        KvBridgeException mode = assertThrows(KvBridgeException.class, () -> options("fast", "hma", 1000));
        assertEquals(ErrorCode.INVALID_ARGUMENT, mode.code());
        assertTrue(mode.getMessage().contains("mode=fast is not one of [push, pull, mixed]"), mode.getMessage());
        KvBridgeException layout = assertThrows(KvBridgeException.class, () -> options("push", "paged", 1000));
        assertTrue(layout.getMessage().contains("layout=paged is not one of [hma, mla, per-layer]"), layout.getMessage());
        KvBridgeException lease = assertThrows(KvBridgeException.class, () -> options("push", "hma", 0));
        assertTrue(lease.getMessage().contains("leaseMillis=0 must be positive"), lease.getMessage());
        assertEquals("pull", options("pull", "mla", 1000).mode());
    }

    @Test
    void cacheShapesKeepTheirKernelBlocksInsideTheSchedulerBlock()
    {
        KvBridgeException planes = assertThrows(KvBridgeException.class, () -> new DemoOptions.CacheShape("diagonal", "per-layer", 16, 16));
        assertTrue(planes.getMessage().contains("kvPlanes=diagonal is not one of [joint, split, blockwise]"), planes.getMessage());
        KvBridgeException kernel = assertThrows(KvBridgeException.class, () -> new DemoOptions.CacheShape("split", "cross-layer", 16, 32));
        assertTrue(kernel.getMessage().contains("kernelBlockTokens=32 must divide blockTokens=16"), kernel.getMessage());
        assertEquals(4, new DemoOptions.CacheShape("split", "cross-layer", 64, 16).blocks(200));
    }

    @Test
    void transportOptionsReachTheWorkersThroughTheirJson() throws Exception
    {
        DemoOptions options = options("push", "hma", 1000).withTransportOptions(java.util.Map.of("allow-unchecked-tcp-lane", "true"));
        String json = WorkerProtocol.JSON.writeValueAsString(options);
        assertEquals(options, WorkerProtocol.JSON.readValue(json, DemoOptions.class), json);
        assertEquals(java.util.Map.of(), options("push", "hma", 1000).transportOptions());
    }

    private static DemoOptions options(String mode, String layout, long leaseMillis)
    {
        return new DemoOptions("local", mode, layout, 2, 1, 1, 1, 10, 2, 512, 1, 0, false, leaseMillis);
    }
}
