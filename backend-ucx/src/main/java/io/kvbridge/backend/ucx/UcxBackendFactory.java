package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpContext;
import io.kvbridge.backend.ucx.ffm.UcxAvailability;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.transport.AbstractTransferBackendFactory;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Factory of the {@code ucx} transport: UCX one-sided put/get between processes and hosts, bound
 * with the Foreign Function and Memory API. Needs {@code libucp.so.0} and {@code libucs.so.0} (UCX
 * 1.13 or newer; Debian/Ubuntu package {@code libucx0}) and {@code --enable-native-access}.
 *
 * <p>Options: {@code tls} and {@code net-devices} (UCX_TLS and UCX_NET_DEVICES for this instance
 * only; when neither {@code net-devices} nor UCX_NET_DEVICES names devices, the instance uses the
 * network interface of the side channel's bind address and RDMA ports only, and {@code net-devices=all}
 * widens it; with neither {@code tls} nor UCX_TLS set, UCX's tcp transport is left out), {@code allow-unchecked-tcp-lane}
 * (default false: lanes that let UCX open its tcp transport, whose wire protocol writes wherever a put
 * request names, fail {@code create()} with {@code CONFIG_INVALID}; true lets them, and lets a bridge
 * that serves other hosts open UCX's default lanes, tcp among them), {@code keepalive-interval-ms} (default 1000), {@code transfer-timeout-ms} (default 0: no
 * limit), {@code connect-timeout-ms} (default 10000), {@code close-timeout-ms} (default 2000), {@code idle-spin-us} (default 500) and
 * {@code ucx-config} ({@code NAME=VALUE;...}, further UCX settings), {@code access} ({@code granted}, the default:
 * peers reach only what a live grant covers; {@code registered}: one-sided RMA into all registered memory).
 *
 * <p>Its priority (10) is above {@code local} (0): {@code auto} picks ucx whenever it can run,
 * because peers in other processes or on other hosts, the case kvbridge exists for, are reachable
 * through it and never through {@code local}. Within one JVM, {@code local} is faster; name it
 * explicitly there.
 */
public final class UcxBackendFactory extends AbstractTransferBackendFactory
{
    /** The transport's name. */
    public static final String NAME = "ucx";

    /** Creates the factory; {@link java.util.ServiceLoader} finds it through the module's {@code provides}. */
    public UcxBackendFactory()
    {
        super(NAME, 10);
    }

    @Override
    public Availability probe()
    {
        try {
            // the kill switch first: when it is set nothing is loaded
            Optional<String> switchedOff = UcxAvailability.switchedOff();
            if (switchedOff.isPresent()) {
                return Availability.unavailable(List.of(switchedOff.get()), Map.of("enabled", "false"));
            }
            return Probe.RESULT;
        }
        catch (LinkageError e) {
            // the probe failed in a way it did not foresee; it still must not throw
            return Availability.unavailable(List.of("probing UCX failed: " + e), Map.of());
        }
    }

    /**
     * Reads the options as {@link #create} does (the environment's {@code UCX_TLS} included), loading nothing.
     *
     * @param config transport options.
     * @return true: the options were checked.
     */
    @Override
    protected boolean readOptions(Map<String, String> config)
    {
        UcxOptions.parse(config);
        return true;
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        UcxOptions options = UcxOptions.parse(config);
        Availability availability = probe();
        requireAvailable(availability);
        String devices = UcxNetDevices.choose(options.netDevices(), System.getenv(UcxNetDevices.ENVIRONMENT), context.sideChannelHost(),
                availability.details().getOrDefault("transports", ""));
        options = options.withNetDevices(devices);
        String environment = System.getenv(UcxOptions.TLS_ENVIRONMENT);
        boolean chosen = !options.tls().isEmpty() || (environment != null && !environment.isBlank());
        // lanes nobody chose leave tcp out unless the user accepted it (chosen lanes with tcp were refused by parse)
        if ((!chosen && !options.uncheckedTcpLane()) || UcxNetDevices.onlyThisHost(options.tls(), environment, context.sideChannelHost())) {
            options = options.withoutTcp();
        }
        return new UcxTransferBackend(context.agentName(), options);
    }

    /** Probes once per class loader: loading UCX and listing its resources does not change while the JVM runs. */
    private static final class Probe
    {
        static final Availability RESULT = run();

        private static Availability run()
        {
            Map<String, String> details = new LinkedHashMap<>();
            try {
                Module module = UcxBackendFactory.class.getModule();
                if (!module.isNativeAccessEnabled()) {
                    details.put("native-access", "not enabled");
                    return Availability.unavailable(List.of("native access is not enabled for " + (module.isNamed() ? "module " + module.getName() : "the class path")
                            + "; run java with --enable-native-access=" + UcxAvailability.moduleFlag()), details);
                }
                details.put("native-access", "enabled");
                Optional<String> cause = UcxAvailability.unavailabilityCause();
                if (cause.isPresent()) {
                    return Availability.unavailable(List.of(cause.get()), details);
                }
                details.put("version", UcpContext.version());
                long config = UcpContext.configRead(new UcxOptions("", "", 0, 0, 1, 1, 0, false, 1, Map.of(), true, 0, 0, false).ucxOverrides(), UcxOptions.UCX_SPELLINGS);
                long context;
                try {
                    context = UcpContext.init(config, UcpContext.FEATURE_TAG | UcpContext.FEATURE_RMA | UcpContext.FEATURE_WAKEUP, "kvbridge-probe");
                }
                finally {
                    UcpContext.configRelease(config);
                }
                Set<Capability> capabilities = EnumSet.of(Capability.HOST_MEMORY, Capability.TRANSPORT_ALLOCATION, Capability.CROSS_PROCESS,
                        Capability.CROSS_HOST, Capability.PEER_FAILURE_DETECTION, Capability.COALESCING,
                        Capability.GRANTED_ACCESS);
                try {
                    details.put("transports", UcxResources.transports(UcpContext.contextInfo(context)));
                    // reported for the user's information; the transport itself moves host memory only
                    boolean cuda = (UcpContext.memoryTypes(context) & UcpContext.MEMORY_TYPE_CUDA_BIT) != 0;
                    details.put("device-memory", cuda ? "this UCX supports CUDA memory; the ucx transport moves host memory only"
                            : "none (this UCX build has no CUDA support)");
                }
                finally {
                    UcpContext.cleanup(context);
                }
                details.put("environment", "UCX_TLS=" + envOrDefault("UCX_TLS") + " UCX_NET_DEVICES=" + envOrDefault("UCX_NET_DEVICES"));
                return Availability.available(capabilities, details);
            }
            catch (KvBridgeException | LinkageError | IllegalCallerException e) {
                return Availability.unavailable(List.of("UCX failed to start: " + e.getMessage()), details);
            }
            catch (RuntimeException | AssertionError e) {
                return Availability.unavailable(List.of("probing UCX failed: " + e), details);
            }
        }

        private static String envOrDefault(String name)
        {
            String value = System.getenv(name);
            return value == null ? "(unset)" : value;
        }
    }
}
