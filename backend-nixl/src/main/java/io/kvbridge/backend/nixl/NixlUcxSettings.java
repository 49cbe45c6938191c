package io.kvbridge.backend.nixl;

import io.kvbridge.transport.SideChannelInterface;
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
 * devices NIXL reaches other hosts by.
 */
final class NixlUcxSettings
{
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
