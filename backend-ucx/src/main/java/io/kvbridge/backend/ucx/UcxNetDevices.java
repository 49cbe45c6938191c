package io.kvbridge.backend.ucx;

import io.kvbridge.transport.SideChannelInterface;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The network devices of an instance whose options name none. UCX's tcp transport opens one
 * interface, with its own listening socket, per network device it may use ({@code UCX_NET_DEVICES},
 * default {@code all}), so an engine whose side channel serves loopback only would still accept
 * UCX connections on every external address. By default an instance therefore uses the interface
 * of the side channel's bind address, plus every RDMA port UCX found ({@code mlx5_0:1}: no listening
 * socket, and where peers on other hosts are best reached), and nothing else.
 *
 * <p>Left to UCX instead: when {@code net-devices} is given ({@code all} widens to every device),
 * when the process environment sets {@code UCX_NET_DEVICES} (the user's choice wins), when the side
 * channel binds every address ({@code 0.0.0.0}), and when its address is on no local interface or
 * unknown.
 */
final class UcxNetDevices
{
    /** UCX's environment variable for the devices, which wins over the default. */
    static final String ENVIRONMENT = "UCX_NET_DEVICES";

    private UcxNetDevices()
    {
    }

    /**
     * Chooses the devices.
     *
     * @param configured the {@code net-devices} option; empty when not given.
     * @param environment the value of {@code UCX_NET_DEVICES}; null when unset.
     * @param sideChannelHost the side channel's bind address, when the caller said.
     * @param transports the resources UCX found, as the probe lists them: {@code tcp/lo, rc_verbs/mlx5_0:1, ...}.
     * @return the {@code NET_DEVICES} value to apply; empty to leave the choice to UCX's configuration.
     */
    static String choose(String configured, String environment, Optional<String> sideChannelHost, String transports)
    {
        if (!configured.isEmpty() || (environment != null && !environment.isBlank()) || sideChannelHost.isEmpty()) {
            return configured;
        }
        Optional<String> device = SideChannelInterface.of(sideChannelHost.get());
        if (device.isEmpty()) {
            return "";
        }
        List<String> devices = new ArrayList<>(List.of(device.get()));
        for (String resource : transports.split(",")) {
            String name = resource.substring(resource.indexOf('/') + 1).trim();
            // RDMA ports are named device:port; memory and the tcp transport's interfaces never are
            if (resource.contains("/") && name.contains(":") && !devices.contains(name)) {
                devices.add(name);
            }
        }
        return String.join(",", devices);
    }

    /**
     * Tells whether an instance should leave UCX's tcp transport out: its side channel serves
     * loopback only, so every peer that can learn its metadata is on this host and reaches it over
     * shared memory, and neither the {@code tls} option nor {@code UCX_TLS} chose the transports.
     * UCX's tcp transport would then only open a listening socket whose wire protocol lets any local
     * process write wherever a put request names ({@code uct_tcp_ep_handle_put_req} checks no
     * address; {@code UcxTcpWireAttackTest} measures it).
     *
     * @param tls the {@code tls} option; empty when not given.
     * @param environment the value of {@code UCX_TLS}; null when unset.
     * @param sideChannelHost the side channel's bind address, when the caller said.
     * @return true to open UCX without its tcp transport.
     */
    static boolean onlyThisHost(String tls, String environment, Optional<String> sideChannelHost)
    {
        return tls.isEmpty() && (environment == null || environment.isBlank()) && SideChannelInterface.loopback(sideChannelHost);
    }
}
