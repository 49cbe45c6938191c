package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.transport.SideChannelInterface;
import java.net.Inet4Address;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Which network devices an instance uses when its options name none. */
final class UcxNetDevicesTest
{
    private static final String RESOURCES = "tcp/lo, tcp/eth0, sysv/memory, posix/memory, rc_verbs/mlx5_0:1, ud_verbs/mlx5_0:1, rc_mlx5/mlx5_1:1, cma/memory";

    @Test
    void aLoopbackSideChannelKeepsTcpOnLoopbackAndKeepsTheRdmaPorts()
    {
        assertEquals("lo,mlx5_0:1,mlx5_1:1", UcxNetDevices.choose("", null, Optional.of("127.0.0.1"), RESOURCES));
        assertEquals("lo", UcxNetDevices.choose("", null, Optional.of("127.0.0.1"), "tcp/lo, tcp/eth0, sysv/memory"));
        assertEquals("lo", UcxNetDevices.choose("", null, Optional.of("127.0.0.2"), ""));
        assertEquals("lo", UcxNetDevices.choose("", null, Optional.of("::1"), ""));
        assertEquals("lo", UcxNetDevices.choose("", null, Optional.of("localhost"), ""));
    }

    @Test
    void aSideChannelOnAnExternalAddressUsesThatAddresssInterface() throws SocketException
    {
        Map.Entry<String, String> external = NetworkInterface.networkInterfaces().filter(UcxNetDevicesTest::upAndNotLoopback)
                .flatMap(device -> device.inetAddresses().filter(Inet4Address.class::isInstance).map(address -> Map.entry(device.getName(), address.getHostAddress())))
                .findFirst().orElse(null);
        assumeTrue(external != null, "this host has no external IPv4 interface that is up");
        assertEquals(external.getKey(), UcxNetDevices.choose("", null, Optional.of(external.getValue()), "tcp/lo, tcp/" + external.getKey()));
    }

    @Test
    void theOptionTheEnvironmentAndAWildcardSideChannelLeaveUcxsChoice()
    {
        assertEquals("all", UcxNetDevices.choose("all", null, Optional.of("127.0.0.1"), RESOURCES));
        assertEquals("eth0", UcxNetDevices.choose("eth0", "lo", Optional.of("127.0.0.1"), RESOURCES));
        // the user's UCX_NET_DEVICES is read by UCX itself; nothing is applied over it
        assertEquals("", UcxNetDevices.choose("", "eth0", Optional.of("127.0.0.1"), RESOURCES));
        assertEquals("lo,mlx5_0:1,mlx5_1:1", UcxNetDevices.choose("", " ", Optional.of("127.0.0.1"), RESOURCES));
        assertEquals("", UcxNetDevices.choose("", null, Optional.of("0.0.0.0"), RESOURCES));
        assertEquals("", UcxNetDevices.choose("", null, Optional.of("::"), RESOURCES));
        assertEquals("", UcxNetDevices.choose("", null, Optional.empty(), RESOURCES));
    }

    @Test
    void onlyALoopbackSideChannelWithNoTransportsChosenLeavesTcpOut()
    {
        assertTrue(UcxNetDevices.onlyThisHost("", null, Optional.of("127.0.0.1")));
        assertTrue(UcxNetDevices.onlyThisHost("", " ", Optional.of("::1")));
        assertTrue(UcxNetDevices.onlyThisHost("", null, Optional.of("localhost")));
        // the user's choice of transports, in the option or in the environment, wins
        assertFalse(UcxNetDevices.onlyThisHost("tcp", null, Optional.of("127.0.0.1")));
        assertFalse(UcxNetDevices.onlyThisHost("", "tcp,sm", Optional.of("127.0.0.1")));
        // peers may be on other hosts, or nobody said
        assertFalse(UcxNetDevices.onlyThisHost("", null, Optional.of("0.0.0.0")));
        assertFalse(UcxNetDevices.onlyThisHost("", null, Optional.of("198.51.100.7")));
        assertFalse(UcxNetDevices.onlyThisHost("", null, Optional.of("no-such-host.invalid")));
        assertFalse(UcxNetDevices.onlyThisHost("", null, Optional.empty()));
    }

    @Test
    void anAddressOnNoLocalInterfaceLeavesUcxsChoice()
    {
        // TEST-NET-2 (RFC 5737): assigned to no host
        assertEquals(Optional.empty(), SideChannelInterface.of("198.51.100.7"));
        assertEquals("", UcxNetDevices.choose("", null, Optional.of("198.51.100.7"), RESOURCES));
    }

    private static boolean upAndNotLoopback(NetworkInterface device)
    {
        try {
            return device.isUp() && !device.isLoopback();
        }
        catch (SocketException e) {
            return false;
        }
    }
}
