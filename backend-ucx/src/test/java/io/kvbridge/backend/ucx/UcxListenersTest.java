package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
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
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The TCP sockets UCX listens on, read from this process's descriptors and {@code /proc/net/tcp}:
 * with a loopback side channel none unless tcp is chosen, then only 127.0.0.1, and every interface
 * once {@code net-devices=all}.
 */
@Timeout(120)
@ExtendWith(UcxInstalled.class)
final class UcxListenersTest
{
    @BeforeEach
    void requireProc()
    {
        assumeTrue(Files.isReadable(Path.of("/proc/net/tcp")) && Files.isDirectory(Path.of("/proc/self/fd")), "no /proc/net/tcp here (not Linux?)");
        assumeTrue(System.getenv(UcxNetDevices.ENVIRONMENT) == null, "UCX_NET_DEVICES is set in the environment and decides the devices");
    }

    @Test
    void aLoopbackSideChannelLeavesUcxListeningOnLoopbackOnly() throws IOException
    {
        Set<String> before = listeners();
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of("tls", "tcp", UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true"), new SideChannelContext("listeners", "127.0.0.1"))) {
            Set<String> opened = new HashSet<>(listeners());
            opened.removeAll(before);
            assertFalse(opened.isEmpty(), "UCX's tcp transport opened no listening socket: " + backend);
            for (String address : opened) {
                assertTrue(address.startsWith("127.0.0.1:"), "UCX listens on " + address + " with a loopback side channel; all: " + opened);
            }
        }
    }

    @Test
    void aLoopbackSideChannelWithNoTransportsChosenLeavesUcxsTcpTransportOut() throws IOException
    {
        assumeTrue(System.getenv(UcxOptions.TLS_ENVIRONMENT) == null, "UCX_TLS is set in the environment and decides the transports");
        Set<String> before = listeners();
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of(), new SideChannelContext("listeners", "127.0.0.1"))) {
            String transports = ((UcxTransferBackend) backend).transports();
            assertFalse(transports.contains("tcp/"), "every peer of a loopback side channel is on this host, yet UCX opened " + transports);
            assertFalse(transports.isEmpty(), "UCX opened no transport at all");
            Set<String> opened = new HashSet<>(listeners());
            opened.removeAll(before);
            assertTrue(opened.isEmpty(), "UCX listens on " + opened + " with tcp left out");
        }
        // the user's choice wins: the tcp transport named is opened
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of("tls", "tcp,sm", UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true"), new SideChannelContext("listeners", "127.0.0.1"))) {
            assertTrue(((UcxTransferBackend) backend).transports().contains("tcp/lo"), ((UcxTransferBackend) backend).transports());
        }
    }

    @Test
    void withoutTheOptInAnInstanceWhoseLanesNobodyChoseOpensNoTcpTransportWhereverItServes() throws IOException
    {
        assumeTrue(System.getenv(UcxOptions.TLS_ENVIRONMENT) == null, "UCX_TLS is set in the environment and decides the transports");
        Set<String> before = listeners();
        // a caller that does not say where its side channel serves, as for one that serves other hosts
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of(), () -> "unsaid")) {
            String transports = ((UcxTransferBackend) backend).transports();
            assertFalse(transports.contains("tcp/"), "no opt-in, yet UCX opened " + transports);
            Set<String> opened = new HashSet<>(listeners());
            opened.removeAll(before);
            assertTrue(opened.isEmpty(), "UCX listens on " + opened + " without the opt-in");
        }
        // the opt-in brings back UCX's own choice, tcp among it where UCX finds it
        assumeTrue(new UcxBackendFactory().probe().details().getOrDefault("transports", "").contains("tcp/"), "UCX found no tcp transport here");
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true"), () -> "accepted")) {
            assertTrue(((UcxTransferBackend) backend).transports().contains("tcp/"), ((UcxTransferBackend) backend).transports());
        }
    }

    @Test
    void anInstanceMadeWithoutTheFactoryRefusesTheTcpTransportUcxChoseBeforeItListens() throws IOException
    {
        assumeTrue(System.getenv(UcxOptions.TLS_ENVIRONMENT) == null, "UCX_TLS is set in the environment and decides the transports");
        assumeTrue(new UcxBackendFactory().probe().details().getOrDefault("transports", "").contains("tcp/"), "UCX found no tcp transport here");
        Set<String> before = listeners();
        // no factory, so nothing left tcp out: UCX's default lanes include it, and the worker refuses them
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> new UcxTransferBackend("direct", UcxOptions.parse(Map.of())).close());
        assertEquals(ErrorCode.CONFIG_INVALID, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains("UCX selected its tcp transport") && e.getMessage().contains("allow-unchecked-tcp-lane=true"), e::getMessage);
        Set<String> opened = new HashSet<>(listeners());
        opened.removeAll(before);
        assertTrue(opened.isEmpty(), "UCX listened on " + opened + " before the refusal");
    }

    @Test
    void aPeerReachableOnlyOverTcpIsRefusedNamingWhyTcpWasLeftOut()
    {
        assumeTrue(System.getenv(UcxOptions.TLS_ENVIRONMENT) == null, "UCX_TLS is set in the environment and decides the transports");
        try (TransferBackend defaults = new UcxBackendFactory().create(Map.of("connect-timeout-ms", "2000"), new SideChannelContext("defaults", "127.0.0.1"));
                TransferBackend tcpOnly = new UcxBackendFactory().create(Map.of("tls", "tcp", "net-devices", "lo", UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true"), () -> "tcp-only")) {
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> defaults.connect(tcpOnly.localMetadata()));
            assertEquals(ErrorCode.PEER_UNKNOWN, e.code(), e::getMessage);
            assertTrue(e.getMessage().contains("tls=^tcp (tcp is left out when the side channel serves loopback") && e.getMessage().contains("tls=tcp,sm"),
                    e.getMessage());
        }
    }

    @Test
    void netDevicesAllWidensToEveryInterface() throws IOException
    {
        List<String> external = TcpListeners.externalAddresses();
        assumeTrue(!external.isEmpty(), "this host has no external IPv4 interface that is up");
        Set<String> before = listeners();
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of("tls", "tcp", "net-devices", "all", UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true"), new SideChannelContext("listeners", "127.0.0.1"))) {
            Set<String> opened = new HashSet<>(listeners());
            opened.removeAll(before);
            assertTrue(opened.stream().anyMatch(address -> external.contains(address.substring(0, address.lastIndexOf(':')))),
                    "net-devices=all should listen on one of " + external + " too; listening on " + opened);
        }
    }

    /** @return {@code address:port} of every TCP socket this process listens on. */
    private static Set<String> listeners() throws IOException
    {
        return TcpListeners.of("self");
    }
}
