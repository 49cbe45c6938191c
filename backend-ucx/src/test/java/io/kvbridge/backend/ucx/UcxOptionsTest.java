package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Options have documented defaults, map to UCX settings, and every bad value is reported at once. */
@Timeout(30)
final class UcxOptionsTest
{
    /** Parses options that name lanes with tcp, with the opt-in those need. */
    private static UcxOptions allowingTcp(Map<String, String> options)
    {
        Map<String, String> accepted = new HashMap<>(options);
        accepted.put(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true");
        return UcxOptions.parse(accepted);
    }

    @Test
    void lanesThatLetUcxOpenItsTcpTransportAreRefusedWithoutTheOptIn()
    {
        assumeTrue(System.getenv(UcxOptions.TLS_ENVIRONMENT) == null, "UCX_TLS is set in the environment and decides the transports");
        for (String lanes : new String[] {"tcp", "tcp,sm", "sm,tcp", "all", "^sm", "tcp,self", "rc,tcp"}) {
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> UcxOptions.parse(Map.of("tls", lanes)), lanes);
            assertEquals(ErrorCode.CONFIG_INVALID, e.code(), e::getMessage);
            assertTrue(e.getMessage().contains("tls=" + lanes + " lets UCX open its tcp transport") && e.getMessage().contains("allow-unchecked-tcp-lane=true")
                    && e.getMessage().contains("writes wherever a put request names"), e::getMessage);
            assertFalse(e.getMessage().contains("\n"), e::getMessage);
            assertTrue(allowingTcp(Map.of("tls", lanes)).uncheckedTcpLane());
            KvBridgeException declined = assertThrows(KvBridgeException.class,
                    () -> UcxOptions.parse(Map.of("tls", lanes, UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "false")), lanes);
            assertEquals(ErrorCode.CONFIG_INVALID, declined.code(), declined::getMessage);
        }
        // lanes without tcp, and lanes nobody chose (the factory opens those without tcp), need no opt-in
        for (String lanes : new String[] {"sm", "^tcp", "rc,sm", "^tcp,cma"}) {
            assertFalse(UcxOptions.parse(Map.of("tls", lanes)).uncheckedTcpLane(), lanes);
        }
        assertFalse(UcxOptions.parse(Map.of()).uncheckedTcpLane());
        assertEquals(0, UcxOptions.parse(Map.of()).tcpSegmentBytes());
        // the lanes cannot come in through ucx-config, opt-in or not
        for (String entry : new String[] {"TLS=tcp", "UCX_TLS=tcp", "SOCKADDR_AUX_TLS=tcp"}) {
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> allowingTcp(Map.of("tls", "sm", "ucx-config", entry)), entry);
            assertTrue(e.getMessage().contains("is not accepted: use the tls option"), e::getMessage);
        }
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> UcxOptions.parse(Map.of(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "yes please")));
        assertTrue(e.getMessage().contains("allow-unchecked-tcp-lane"), e::getMessage);
    }

    @Test
    void defaults()
    {
        UcxOptions options = UcxOptions.parse(Map.of());
        assertEquals("", options.tls());
        assertEquals("", options.netDevices());
        assertEquals(1000, options.keepaliveIntervalMillis());
        assertEquals(0, options.transferTimeoutMillis());
        assertEquals(10_000, options.connectTimeoutMillis());
        assertEquals(2000, options.closeTimeoutMillis());
        assertEquals(500, options.idleSpinMicros());
        assertTrue(options.staggerAllocations());
        assertEquals(65536, options.maxInFlight());
        assertTrue(options.granted());
        // the process's UCX_TLS decides the lanes when the option does not
        assertEquals(UcxOptions.onlyTcp(System.getenv().getOrDefault("UCX_TLS", "")) ? UcxOptions.TCP_EAGER_MAX : 0, options.eagerMaxBytes());
        Map<String, String> expected = new java.util.HashMap<>(Map.of("KEEPALIVE_INTERVAL", "1000ms"));
        if (options.mayUseSharedMemory()) {
            expected.put("MM_ERROR_HANDLING", "y");
        }
        // lanes nobody chose are opened without tcp unless the user accepted it, so no tcp segment either
        assertEquals(expected, options.ucxOverrides());
    }

    @Test
    void explicitValuesMapToUcxSettings()
    {
        UcxOptions options = allowingTcp(Map.of("tls", "tcp", "net-devices", "lo", "keepalive-interval-ms", "250", "transfer-timeout-ms", "5000",
                "connect-timeout-ms", "300", "close-timeout-ms", "100", "idle-spin-us", "0", "stagger-allocations", "false", "max-in-flight", "16777216", "ucx-config", "RNDV_THRESH=8192; UCX_ZCOPY_THRESH=16384"));
        assertEquals(5000, options.transferTimeoutMillis());
        assertFalse(options.staggerAllocations());
        assertEquals(1 << 24, options.maxInFlight());
        assertEquals(300, options.connectTimeoutMillis());
        assertEquals(100, options.closeTimeoutMillis());
        assertEquals(0, options.idleSpinMicros());
        assertTrue(UcxOptions.parse(Map.of("access", "granted")).granted());
        assertFalse(UcxOptions.parse(Map.of("access", "registered")).granted());
        // tcp alone loads no shared-memory transport: UCX would warn about MM_ERROR_HANDLING
        assertEquals(Map.of("KEEPALIVE_INTERVAL", "250ms", "TLS", "tcp", "NET_DEVICES", "lo", "RX_SEG_SIZE", "524288", "RNDV_THRESH", "8192",
                "ZCOPY_THRESH", "16384"), options.ucxOverrides());
    }

    @Test
    void withoutTheTlsOptionTheEnvironmentsLanesDecideOnSharedMemory()
    {
        // without the option, this JVM's UCX_TLS counts as if it had been given as the option (unset: any lane may load)
        String lanes = System.getenv().getOrDefault("UCX_TLS", "");
        boolean shared = lanes.isEmpty() || UcxOptions.parse(Map.of("tls", lanes)).mayUseSharedMemory();
        assertEquals(shared, UcxOptions.parse(Map.of()).mayUseSharedMemory());
        assertEquals(shared, UcxOptions.parse(Map.of()).ucxOverrides().containsKey("MM_ERROR_HANDLING"));
    }

    @Test
    void optionsWithoutTcpAskForEveryTransportButTcpAndSetNoTcpSegment()
    {
        Map<String, String> overrides = allowingTcp(Map.of("tls", "tcp,sm", "keepalive-interval-ms", "250")).withoutTcp().ucxOverrides();
        assertEquals(Map.of("MM_ERROR_HANDLING", "y", "KEEPALIVE_INTERVAL", "250ms", "TLS", "^tcp"), overrides);
    }

    @Test
    void sharedMemoryIsDetectedInTransportLists()
    {
        assertTrue(UcxOptions.parse(Map.of("tls", "sm")).mayUseSharedMemory());
        assertTrue(allowingTcp(Map.of("tls", "tcp,posix")).mayUseSharedMemory());
        assertTrue(UcxOptions.parse(Map.of("tls", "^tcp")).mayUseSharedMemory());
        assertFalse(allowingTcp(Map.of("tls", "tcp")).mayUseSharedMemory());
        assertFalse(UcxOptions.parse(Map.of("tls", "rc,ud")).mayUseSharedMemory());
    }

    @Test
    void theTcpSegmentIsSetWhereTcpMayLoadUnderTheNameUcxMatches()
    {
        assumeTrue(System.getenv("UCX_TCP_RX_SEG_SIZE") == null, "UCX_TCP_RX_SEG_SIZE is set in this environment");
        assertEquals(524288, allowingTcp(Map.of("tls", "tcp")).tcpSegmentBytes());
        assertEquals(524288, allowingTcp(Map.of("tls", "sm,tcp")).tcpSegmentBytes());
        assertEquals(524288, allowingTcp(Map.of("tls", "all")).tcpSegmentBytes());
        assertEquals(524288, allowingTcp(Map.of("tls", "^sm")).tcpSegmentBytes());
        assertEquals("524288", allowingTcp(Map.of("tls", "tcp")).ucxOverrides().get("RX_SEG_SIZE"));
        assertEquals("1048576", allowingTcp(Map.of("tls", "tcp", "tcp-segment", "1048576")).ucxOverrides().get("RX_SEG_SIZE"));
        // lanes without tcp leave UCX's setting alone, since UCX warns about settings no transport takes
        assertEquals(0, UcxOptions.parse(Map.of("tls", "sm")).tcpSegmentBytes());
        assertEquals(0, UcxOptions.parse(Map.of("tls", "^tcp")).tcpSegmentBytes());
        assertEquals(0, UcxOptions.parse(Map.of("tls", "rc,sm", "tcp-segment", "65536")).tcpSegmentBytes());
        assertFalse(UcxOptions.parse(Map.of("tls", "sm")).ucxOverrides().containsKey("RX_SEG_SIZE"));
        for (String bad : new String[] {"4096", "67108865", "512K"}) {
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> allowingTcp(Map.of("tls", "tcp", "tcp-segment", bad)));
            assertEquals(ErrorCode.CONFIG_INVALID, e.code());
            assertTrue(e.getMessage().contains("tcp-segment"), e.getMessage());
        }
        // through ucx-config the setting would bypass what peers are told
        for (String name : new String[] {"RX_SEG_SIZE", "TCP_RX_SEG_SIZE", "UCX_TCP_RX_SEG_SIZE"}) {
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> allowingTcp(Map.of("tls", "tcp", "ucx-config", name + "=65536")));
            assertTrue(e.getMessage().contains("use the tcp-segment option"), e.getMessage());
        }
    }

    @Test
    void dataIsSentEagerlyByDefaultOnlyWhereTcpIsTheOnlyLane()
    {
        assertEquals(256 * 1024, allowingTcp(Map.of("tls", "tcp")).eagerMaxBytes());
        assertEquals(256 * 1024, allowingTcp(Map.of("tls", "tcp,self")).eagerMaxBytes());
        assertEquals(256 * 1024, allowingTcp(Map.of("tls", "tcp,cuda_copy")).eagerMaxBytes());
        assertEquals(0, UcxOptions.parse(Map.of("tls", "sm")).eagerMaxBytes());
        assertEquals(0, allowingTcp(Map.of("tls", "tcp,sm")).eagerMaxBytes());
        assertEquals(0, allowingTcp(Map.of("tls", "^sm")).eagerMaxBytes());
        assertEquals(0, allowingTcp(Map.of("tls", "rc,tcp")).eagerMaxBytes());
        assertEquals(0, allowingTcp(Map.of("tls", "tcp", "eager-max", "0")).eagerMaxBytes());
        assertEquals(65536, UcxOptions.parse(Map.of("tls", "sm", "eager-max", "65536")).eagerMaxBytes());
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> UcxOptions.parse(Map.of("eager-max", "8388608")));
        assertTrue(e.getMessage().contains("eager-max=8388608"), e::getMessage);
    }

    @Test
    void everyProblemIsReportedTogether()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> UcxOptions.parse(Map.of("tls", "sm;rm -rf", "keepalive-interval-ms", "-1",
                "idle-spin-us", "lots", "stagger-allocations", "sometimes", "max-in-flight", "0", "ucx-config", "TLS", "tsl", "sm", "access", "everything")));
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        for (String expected : new String[] {"tls=sm;rm -rf", "keepalive-interval-ms=-1", "idle-spin-us=lots", "stagger-allocations=sometimes", "max-in-flight=0", "ucx-config entry 'TLS'", "access=everything", "unknown option tsl"}) {
            assertTrue(e.getMessage().contains(expected), () -> expected + " missing from " + e.getMessage());
        }
    }
}
