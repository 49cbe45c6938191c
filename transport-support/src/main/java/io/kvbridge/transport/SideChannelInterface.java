package io.kvbridge.transport;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.Optional;

/**
 * The network interface of an engine's side channel, which a transport's own listeners follow: a
 * side channel that serves loopback only means every peer that can learn the transport's metadata
 * is on this host.
 */
public final class SideChannelInterface
{
    private SideChannelInterface()
    {
    }

    /**
     * Tells whether the side channel serves loopback only.
     *
     * @param sideChannelHost the side channel's bind address, when the caller said.
     * @return true for a loopback address or a name that resolves to one; false for any other,
     *     the wildcard address, an unknown host, or none given.
     */
    public static boolean loopback(Optional<String> sideChannelHost)
    {
        if (sideChannelHost.isEmpty()) {
            return false;
        }
        try {
            return InetAddress.getByName(sideChannelHost.get()).isLoopbackAddress();
        }
        catch (UnknownHostException e) {
            return false;
        }
    }

    /**
     * Finds the network interface an address belongs to.
     *
     * @param host a host name or address.
     * @return the interface's name, e.g. {@code lo} for any loopback address; empty for the wildcard
     *     address, an unknown host, or an address on no local interface.
     */
    public static Optional<String> of(String host)
    {
        InetAddress address;
        try {
            address = InetAddress.getByName(host);
        }
        catch (UnknownHostException e) {
            return Optional.empty();
        }
        if (address.isAnyLocalAddress()) {
            return Optional.empty();
        }
        try {
            NetworkInterface found = NetworkInterface.getByInetAddress(address);
            if (found == null && address.isLoopbackAddress()) {
                // 127.0.0.2 and the like are on the loopback interface without being listed as its addresses
                found = NetworkInterface.networkInterfaces().filter(SideChannelInterface::isLoopbackInterface).findFirst().orElse(null);
            }
            while (found != null && found.getParent() != null) {
                found = found.getParent();
            }
            return Optional.ofNullable(found).map(NetworkInterface::getName);
        }
        catch (SocketException e) {
            return Optional.empty();
        }
    }

    private static boolean isLoopbackInterface(NetworkInterface candidate)
    {
        try {
            return candidate.isLoopback();
        }
        catch (SocketException e) {
            return false;
        }
    }
}
