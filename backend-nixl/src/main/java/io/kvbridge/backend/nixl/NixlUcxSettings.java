package io.kvbridge.backend.nixl;

import io.kvbridge.transport.SideChannelInterface;
import io.kvbridge.transport.UcxLanes;
import java.util.Optional;

/**
 * The UCX settings an instance gives NIXL's UCX backend (its {@code engine_config}). NIXL's UCX
 * opens its tcp transport on every network device, each with a listening socket (measured with
 * NIXL 1.4.0: on 127.0.0.1 and on the host's external address), and UCX's tcp transport copies the
 * bytes of a put request that reaches such a socket to whatever address the request names, from
 * any process, with no key (measured with the {@code ucx} transport's {@code UcxTcpWireAttackTest}).
 * Tcp stays, unlike in the {@code ucx} transport: without it NIXL's backend either refused to start
 * (no shared-memory transport reports a failed peer unless {@code UCX_MM_ERROR_HANDLING=y}, which
 * NIXL does not set) or, with that set, its progress thread spun at a full core and {@code close()}
 * hung (UCX 1.22.0; see the module README). So when the side channel serves loopback, where every peer
 * is on this host, the backend's network devices are narrowed to the loopback interface; otherwise
 * UCX keeps its choice, since an external side channel's interface alone would drop the RDMA
 * devices NIXL reaches other hosts by. Because tcp stays, an instance whose UCX may open it is refused
 * unless the user accepted that with {@value #ALLOW_UNCHECKED_TCP_LANE}{@code =true}
 * ({@link #tcpLaneRefusal}).
 */
final class NixlUcxSettings
{
    /** The option by which a user accepts UCX's tcp transport, named as in the {@code ucx} transport. */
    static final String ALLOW_UNCHECKED_TCP_LANE = "allow-unchecked-tcp-lane";
    /** UCX's environment variable for its transports, which NIXL's UCX backend reads too. */
    static final String TLS_ENVIRONMENT = UcxLanes.TLS_ENVIRONMENT;

    /** UCX's environment variable for the devices, which wins over any setting here. */
    static final String NET_DEVICES_ENVIRONMENT = "UCX_NET_DEVICES";

    private NixlUcxSettings()
    {
    }

    /**
     * Tells whether the environment chose UCX's network devices.
     *
     * @param netDevicesEnvironment the value of {@code UCX_NET_DEVICES}; null when unset.
     * @return true when it names any; a blank value names none.
     */
    static boolean devicesChosen(String netDevicesEnvironment)
    {
        return netDevicesEnvironment != null && !netDevicesEnvironment.isBlank();
    }

    /**
     * Refuses UCX's tcp transport unless the user accepted it: NIXL's UCX backend opens it whenever
     * UCX's lanes allow it (by default they do), and it cannot be left out the way the {@code ucx}
     * transport leaves it out (see the class comment), so the instance is refused instead, fail closed,
     * unless {@code UCX_TLS} names lanes without tcp.
     *
     * @param allowed the {@value #ALLOW_UNCHECKED_TCP_LANE} option.
     * @param tlsEnvironment the value of {@code UCX_TLS}; null when unset.
     * @return why the instance is refused, naming the fixes, or null when it may start.
     */
    static String tcpLaneRefusal(boolean allowed, String tlsEnvironment)
    {
        String lanes = tlsEnvironment == null ? "" : tlsEnvironment.strip();
        if (allowed || !UcxLanes.mayUseTcp(lanes)) {
            return null;
        }
        String source = lanes.isEmpty() ? TLS_ENVIRONMENT + " unset (UCX's default lanes)" : TLS_ENVIRONMENT + "=" + lanes;
        return "NIXL's UCX backend opens UCX's tcp transport with " + source + ", whose wire protocol writes wherever a put request names "
                + "for anyone who reaches its port, on every network device NIXL's UCX listens on; set " + ALLOW_UNCHECKED_TCP_LANE
                + "=true where only trusted hosts reach UCX's TCP ports, or leave tcp out of " + TLS_ENVIRONMENT + " (e.g. rc,sm or ^tcp)";
    }


    /**
     * Chooses the settings.
     *
     * @param sideChannelHost the side channel's bind address, when the caller said.
     * @param netDevicesEnvironment the value of {@code UCX_NET_DEVICES}; null when unset.
     * @return {@code NET_DEVICES=lo} (the loopback interface's name) for a loopback side channel,
     *     else empty.
     */
    static String of(Optional<String> sideChannelHost, String netDevicesEnvironment)
    {
        if (devicesChosen(netDevicesEnvironment) || !SideChannelInterface.loopback(sideChannelHost)) {
            return "";
        }
        return SideChannelInterface.of(sideChannelHost.get()).map(device -> "NET_DEVICES=" + device).orElse("");
    }
}
