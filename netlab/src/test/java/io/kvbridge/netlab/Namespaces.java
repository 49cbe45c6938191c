package io.kvbridge.netlab;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Optional;

/** Skips a test, with the reason, where {@link VirtualHosts} cannot run: not root, no {@code ip netns}, no veth pairs. */
final class Namespaces
{
    private static volatile Optional<String> unavailability;

    private Namespaces()
    {
    }

    /** Skips the calling test unless network namespaces joined by veth pairs can be made here. */
    public static void assumeNamespaces()
    {
        Optional<String> reason = unavailability;
        if (reason == null) {
            reason = VirtualHosts.unavailability();
            unavailability = reason;
        }
        Optional<String> why = reason;
        assumeTrue(why.isEmpty(), () -> why.orElseThrow());
    }

    /**
     * Skips the calling test unless {@link VirtualHosts#impair} works here: through {@code tc netem},
     * or, where the kernel lacks it, through the frame relay (root, {@code /dev/net/tun}, {@code gcc}).
     */
    public static void assumeImpairment()
    {
        assumeNamespaces();
        Optional<String> why = VirtualHosts.impairmentUnavailability();
        assumeTrue(why.isEmpty(), () -> why.orElseThrow());
    }

    /** Skips the calling test unless the frame relay runs here, whether or not the kernel has netem. */
    static void assumeFrameRelay()
    {
        assumeNamespaces();
        Optional<String> why = VirtualHosts.relayUnavailability();
        assumeTrue(why.isEmpty(), () -> "the frame relay cannot run here: " + why.orElseThrow());
    }

    /** Skips the calling test unless the etcd binary is installed. */
    public static void assumeEtcd()
    {
        Optional<String> why = HostEtcd.unavailability();
        assumeTrue(why.isEmpty(), () -> why.orElseThrow());
    }
}
