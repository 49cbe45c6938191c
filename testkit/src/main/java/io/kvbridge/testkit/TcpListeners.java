package io.kvbridge.testkit;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The TCP sockets a process listens on, read from its descriptors and {@code /proc/net/tcp}
 * (Linux only): what a transport's own listeners expose.
 */
public final class TcpListeners
{
    private TcpListeners()
    {
    }

    /**
     * Reads the TCP sockets a process listens on.
     *
     * @param process {@code self}, or a process id of this user.
     * @return {@code address:port} of each.
     * @throws IOException when the process's descriptors or the kernel's tables cannot be read.
     */
    public static Set<String> of(String process) throws IOException
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
        Set<String> own = new HashSet<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path path = Path.of(table);
            if (!Files.isReadable(path)) {
                continue;
            }
            List<String> lines = Files.readAllLines(path);
            for (String line : lines.subList(1, lines.size())) {
                String[] fields = line.trim().split("\\s+");
                // sl local_address rem_address st ... inode; st 0A is LISTEN
                if (fields.length > 9 && fields[3].equals("0A") && inodes.contains(fields[9])) {
                    own.add(decode(fields[1]));
                }
            }
        }
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

    /**
     * Lists this host's IPv4 addresses on interfaces that are up and not loopback.
     *
     * @return the addresses, e.g. {@code 192.0.2.2}; empty on a host with none.
     * @throws SocketException when the interfaces cannot be listed.
     */
    public static List<String> externalAddresses() throws SocketException
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
