package io.kvbridge.examples.hosts;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Optional;

/** Skips a test, with the reason, where {@link VirtualHosts} cannot run: not root, no {@code ip netns}, no veth pairs. */
public final class Namespaces
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

    /** Skips the calling test unless {@code tc netem} works here (some VM kernels lack it). */
    public static void assumeNetem()
    {
        assumeNamespaces();
        Optional<String> why = VirtualHosts.netemUnavailability();
        assumeTrue(why.isEmpty(), () -> why.orElseThrow());
    }

    /** Skips the calling test unless the etcd binary is installed. */
    public static void assumeEtcd()
    {
        Optional<String> why = HostEtcd.unavailability();
        assumeTrue(why.isEmpty(), () -> why.orElseThrow());
    }
}
