package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.transport.SideChannelInterface;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The UCX settings an instance hands NIXL's UCX backend. */
final class NixlUcxSettingsTest
{
    @Test
    void aLoopbackSideChannelNarrowsTheDevicesToLoopback()
    {
        String loopback = "NET_DEVICES=" + SideChannelInterface.of("127.0.0.1").orElseThrow();
        assertEquals(loopback, NixlUcxSettings.of(Optional.of("127.0.0.1"), null));
        assertEquals(loopback, NixlUcxSettings.of(Optional.of("localhost"), " "));
    }

    @Test
    void theEnvironmentAnExternalOrWildcardSideChannelAndNoneLeaveUcxsChoice()
    {
        // the user's UCX_NET_DEVICES is read by UCX itself, and NIXL lets it win
        assertEquals("", NixlUcxSettings.of(Optional.of("127.0.0.1"), "eth0"));
        assertEquals("", NixlUcxSettings.of(Optional.of("0.0.0.0"), null));
        // TEST-NET-2 (RFC 5737): on no interface; an external one would drop the RDMA devices peers on other hosts use
        assertEquals("", NixlUcxSettings.of(Optional.of("198.51.100.7"), null));
        assertEquals("", NixlUcxSettings.of(Optional.empty(), null));
    }
}
