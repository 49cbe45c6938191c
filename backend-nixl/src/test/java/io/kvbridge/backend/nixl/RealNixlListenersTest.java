package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.testkit.SideChannelContext;
import io.kvbridge.testkit.TcpListeners;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The TCP sockets NIXL's UCX backend listens on (profile {@code real-nixl}): UCX's tcp transport,
 * which NIXL's backend cannot leave out, takes a put request naming any address from whoever
 * reaches those sockets. Left to itself it listens on every device; with a loopback side channel
 * the instance narrows it to loopback.
 */
@Tag("real-nixl")
@ExtendWith(RequiresRealNixl.class)
@Timeout(120)
final class RealNixlListenersTest
{
    @BeforeAll
    static void requireProc()
    {
        assumeTrue(Files.isReadable(Path.of("/proc/net/tcp")), "no /proc/net/tcp here (not Linux?)");
        assumeTrue(System.getenv(NixlUcxSettings.NET_DEVICES_ENVIRONMENT) == null, "UCX_NET_DEVICES is set in the environment and decides the devices");
    }

    @Test
    void aLoopbackSideChannelKeepsNixlsUcxListeningOnLoopbackOnly() throws IOException
    {
        Set<String> opened = openedBy(new SideChannelContext("listeners-loopback", "127.0.0.1"));
        assertFalse(opened.isEmpty(), "NIXL's UCX opened no listening socket");
        for (String address : opened) {
            assertTrue(address.startsWith("127.0.0.1:"), "NIXL's UCX listens on " + address + " with a loopback side channel; all: " + opened);
        }
    }

    @Test
    void withoutASideChannelNixlsUcxListensOnEveryDevice() throws IOException
    {
        List<String> external = TcpListeners.externalAddresses();
        assumeTrue(!external.isEmpty(), "this host has no external IPv4 interface that is up");
        Set<String> opened = openedBy(() -> "listeners-default");
        assertTrue(opened.stream().anyMatch(address -> external.contains(address.substring(0, address.lastIndexOf(':')))),
                "NIXL's UCX left to itself should listen on one of " + external + " too; listening on " + opened);
    }

    private static Set<String> openedBy(BackendContext context) throws IOException
    {
        NixlBackendFactory factory = new NixlBackendFactory(null, false);
        // the probe opens a backend of its own once: done before the count
        assumeTrue(factory.probe().available(), "no usable NIXL");
        Set<String> before = TcpListeners.of("self");
        try (TransferBackend backend = factory.create(Map.of(NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE, "true"), context)) {
            Set<String> opened = new HashSet<>(TcpListeners.of("self"));
            opened.removeAll(before);
            return opened;
        }
    }
}
