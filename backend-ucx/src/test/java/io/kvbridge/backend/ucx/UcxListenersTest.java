package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.transfer.TransferBackend;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The TCP sockets UCX listens on, read from this process's descriptors and {@code /proc/net/tcp}:
 * with a loopback side channel only 127.0.0.1, and every interface once {@code net-devices=all}.
 */
@Timeout(120)
final class UcxListenersTest
{
    @BeforeAll
    static void requireUcxAndProc()
    {
        UcxTestSupport.assumeUcxInstalled();
        assumeTrue(Files.isReadable(Path.of("/proc/net/tcp")) && Files.isDirectory(Path.of("/proc/self/fd")), "no /proc/net/tcp here (not Linux?)");
        assumeTrue(System.getenv(UcxNetDevices.ENVIRONMENT) == null, "UCX_NET_DEVICES is set in the environment and decides the devices");
    }

    @Test
    void aLoopbackSideChannelLeavesUcxListeningOnLoopbackOnly() throws IOException
    {
        Set<String> before = listeners();
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of("tls", "tcp"), new SideChannelContext("listeners", "127.0.0.1"))) {
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
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of("tls", "tcp,sm"), new SideChannelContext("listeners", "127.0.0.1"))) {
            assertTrue(((UcxTransferBackend) backend).transports().contains("tcp/lo"), ((UcxTransferBackend) backend).transports());
        }
    }

    @Test
    void netDevicesAllWidensToEveryInterface() throws IOException
    {
        List<String> external = externalAddresses();
        assumeTrue(!external.isEmpty(), "this host has no external IPv4 interface that is up");
        Set<String> before = listeners();
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of("tls", "tcp", "net-devices", "all"), new SideChannelContext("listeners", "127.0.0.1"))) {
            Set<String> opened = new HashSet<>(listeners());
            opened.removeAll(before);
            assertTrue(opened.stream().anyMatch(address -> external.contains(address.substring(0, address.lastIndexOf(':')))),
                    "net-devices=all should listen on one of " + external + " too; listening on " + opened);
        }
    }

    /** @return {@code address:port} of every TCP socket this process listens on. */
    private static Set<String> listeners() throws IOException
    {
        return listeners("self");
    }

    /**
     * Reads the TCP sockets a process listens on.
     *
     * @param process {@code self}, or a process id of this user.
     * @return {@code address:port} of each.
     */
    static Set<String> listeners(String process) throws IOException
    {
        Set<String> inodes = new HashSet<>();
        try (Stream<Path> descriptors = Files.list(Path.of("/proc", process, "fd"))) {
            for (Path descriptor : descriptors.toList()) {
                try {
                    String target = Files.readSymbolicLink(descriptor).toString();
                    if (target.startsWith("socket:[")) {
                        inodes.add(target.substring("socket:[".length(), target.length() - 1));
                    }
                }
                catch (IOException e) {
                    // closed while listing
                }
            }
        }
        Map<String, String> listening = new HashMap<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path path = Path.of(table);
            if (!Files.isReadable(path)) {
                continue;
            }
            for (String line : Files.readAllLines(path).subList(1, Files.readAllLines(path).size())) {
                String[] fields = line.trim().split("\\s+");
                // sl local_address rem_address st ... inode; st 0A is LISTEN
                if (fields.length > 9 && fields[3].equals("0A")) {
                    listening.put(fields[9], decode(fields[1]));
                }
            }
        }
        Set<String> own = new HashSet<>();
        listening.forEach((inode, address) -> {
            if (inodes.contains(inode)) {
                own.add(address);
            }
        });
        return own;
    }

    /** {@code 0100007F:1F90} is 127.0.0.1:8080; IPv6 addresses are four little-endian words. */
    private static String decode(String field)
    {
        String[] parts = field.split(":");
        String hex = parts[0];
        StringBuilder address = new StringBuilder();
        if (hex.length() == 8) {
            for (int i = 6; i >= 0; i -= 2) {
                address.append(Integer.parseInt(hex.substring(i, i + 2), 16)).append(i > 0 ? "." : "");
            }
        }
        else {
            for (int word = 0; word < 4; word++) {
                String w = hex.substring(word * 8, word * 8 + 8);
                String bigEndian = w.substring(6, 8) + w.substring(4, 6) + w.substring(2, 4) + w.substring(0, 2);
                address.append(word > 0 ? ":" : "").append(bigEndian, 0, 4).append(':').append(bigEndian, 4, 8);
            }
            address.insert(0, '[').append(']');
        }
        return address + ":" + Integer.parseInt(parts[1], 16);
    }

    private static List<String> externalAddresses() throws SocketException
    {
        return NetworkInterface.networkInterfaces().filter(device -> {
            try {
                return device.isUp() && !device.isLoopback();
            }
            catch (SocketException e) {
                return false;
            }
        }).flatMap(device -> device.inetAddresses().filter(Inet4Address.class::isInstance).map(address -> address.getHostAddress())).toList();
    }
}
