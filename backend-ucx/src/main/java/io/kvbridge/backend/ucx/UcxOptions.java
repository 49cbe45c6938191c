package io.kvbridge.backend.ucx;

import io.kvbridge.spi.PluginConfig;
import io.kvbridge.transport.UcxLanes;
import java.util.Collections;
import java.util.Locale;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Options of one UCX transport instance. UCX settings are applied to the instance's own
 * configuration ({@code ucp_config_modify}), so instances in one process can use different
 * transports and the process environment stays untouched; {@code UCX_*} environment variables still
 * provide the defaults.
 *
 * @param tls UCX transports ({@code UCX_TLS}), e.g. {@code sm} or {@code tcp}; empty keeps UCX's choice.
 * @param netDevices network devices ({@code UCX_NET_DEVICES}), e.g. {@code lo} or {@code all}; empty keeps UCX's choice.
 *     When not given, the factory chooses the side channel's interface ({@link UcxNetDevices}).
 * @param keepaliveIntervalMillis how often UCX checks that peers are alive; 0 keeps UCX's default (20 s).
 * @param transferTimeoutMillis a transfer still moving after this long fails, and its peer is
 *     declared dead because RMA operations cannot be cancelled one by one; 0 disables the limit.
 * @param connectTimeoutMillis how long {@code connect()} waits for the peer to answer UCX's
 *     connection setup.
 * @param closeTimeoutMillis how long closing waits for in-flight work before cutting endpoints.
 * @param idleSpinMicros how long the owner thread keeps polling after its last event before it
 *     sleeps on UCX's event descriptor; polling keeps emulated RMA (where the target must
 *     progress) fast.
 * @param staggerAllocations whether memory from {@code allocate()} starts a few pages into its
 *     mapping, so that copies between two processes' equal-sized pools avoid the aliasing penalty
 *     {@link AllocationStagger} describes.
 * @param maxInFlight transfers posted and not finished or not released at once; more fail with
 *     {@code TRANSFER_FAILED}.
 * @param extraConfig further UCX settings, names without the {@code UCX_} prefix.
 * @param granted {@code access=granted} (the default): data moves as active messages that the
 *     target checks against its grants; {@code access=registered}: one-sided put/get, which lets a
 *     connected peer reach whatever this instance registered (for lanes whose hardware enforces
 *     registration bounds, and trusted deployments).
 * @param eagerMaxBytes with {@code access=granted}, data messages of at most this many bytes are
 *     sent eagerly (the bytes travel with the message) instead of by rendezvous, which costs a round
 *     trip through the target's owner thread before the bytes move; 0 leaves the choice to UCX.
 * @param tcpSegmentBytes the largest piece UCX's tcp transport receives ({@code UCX_TCP_RX_SEG_SIZE}),
 *     which is also the largest it sends; 0 where the lanes leave TCP out.
 * @param uncheckedTcpLane {@code allow-unchecked-tcp-lane=true}: the user accepts UCX's tcp transport,
 *     whose wire protocol writes wherever a put request names before any grant is checked; without
 *     it no instance opens that transport.
 */
record UcxOptions(String tls, String netDevices, int keepaliveIntervalMillis, int transferTimeoutMillis, int connectTimeoutMillis, int closeTimeoutMillis,
        int idleSpinMicros, boolean staggerAllocations, int maxInFlight, Map<String, String> extraConfig, boolean granted, int eagerMaxBytes,
        int tcpSegmentBytes, boolean uncheckedTcpLane)
{
    static final String TLS = "tls";
    static final String NET_DEVICES = "net-devices";
    static final String KEEPALIVE_INTERVAL_MS = "keepalive-interval-ms";
    static final String TRANSFER_TIMEOUT_MS = "transfer-timeout-ms";
    static final String CONNECT_TIMEOUT_MS = "connect-timeout-ms";
    static final String CLOSE_TIMEOUT_MS = "close-timeout-ms";
    static final String IDLE_SPIN_US = "idle-spin-us";
    static final String STAGGER_ALLOCATIONS = "stagger-allocations";
    static final String MAX_IN_FLIGHT = "max-in-flight";
    static final String UCX_CONFIG = "ucx-config";
    /** The opt-in to UCX's tcp transport, named after what it gives up. */
    static final String ALLOW_UNCHECKED_TCP_LANE = "allow-unchecked-tcp-lane";
    /** UCX's environment variable for the transports, the default of {@code tls}. */
    static final String TLS_ENVIRONMENT = UcxLanes.TLS_ENVIRONMENT;
    /** Every UCX transport but tcp. */
    static final String WITHOUT_TCP = "^tcp";
    static final String ACCESS = "access";
    static final String EAGER_MAX = "eager-max";
    /**
     * Eager data messages up to this size where TCP is the only lane: over TCP a rendezvous moves the
     * same bytes in the same stream after an extra round trip, which bounds 32 KiB to 256 KiB
     * transfers; over shared memory the rendezvous is a single copy and stays UCX's choice.
     */
    static final int TCP_EAGER_MAX = 256 * 1024;
    static final String TCP_SEGMENT = "tcp-segment";
    /**
     * UCX's tcp transport sends a message in pieces of at most its receive segment (UCX's default
     * 64 KiB), and the peer copies each piece out of its own segment: larger pieces mean fewer
     * rounds through both sides' progress. Measured on loopback, 512 KiB moved 256 KiB and 4 MiB
     * blocks faster than the default in every paired run; 1 MiB was no faster.
     */
    static final int DEFAULT_TCP_SEGMENT = 512 * 1024;
    /**
     * The tcp transport's own name for its receive segment. UCX 1.13 matches settings given through
     * {@code ucp_config_modify} against each transport's table without the transport's prefix, so
     * {@code TCP_RX_SEG_SIZE}, as the environment spells it, would be ignored there; UCX 1.22
     * refuses this name and takes that one ({@link #UCX_SPELLINGS}).
     */
    static final String UCX_TCP_SEGMENT = "RX_SEG_SIZE";
    /** For a name of {@link #ucxOverrides()} that one UCX version refuses, the spelling another takes. */
    static final Map<String, String> UCX_SPELLINGS = Map.of(UCX_TCP_SEGMENT, "TCP_" + UCX_TCP_SEGMENT);
    static final String TCP_SEGMENT_ENVIRONMENT = "UCX_TCP_RX_SEG_SIZE";
    static final int MIN_TCP_SEGMENT = 8 * 1024;
    static final int MAX_TCP_SEGMENT = 64 * 1024 * 1024;
    private static final Pattern MEMORY_UNITS = Pattern.compile("([0-9]{1,12})\\s*([kKmMgG]?)[bB]?");
    /** Eager messages are assembled in memory UCX allocates on the target: bounded. */
    static final int MAX_EAGER_MAX = 4 * 1024 * 1024;
    /** The same default and range as the local transport's {@code max-in-flight}. */
    static final int DEFAULT_MAX_IN_FLIGHT = 65536;
    static final int MAX_MAX_IN_FLIGHT = 1 << 24;

    private static final Pattern LIST_VALUE = Pattern.compile("[A-Za-z0-9_.:,^-]+");
    private static final Pattern CONFIG_NAME = Pattern.compile("[A-Z][A-Z0-9_]*");

    /** Validates and copies. */
    UcxOptions
    {
        tls = tls == null ? "" : tls;
        netDevices = netDevices == null ? "" : netDevices;
        extraConfig = Collections.unmodifiableMap(new LinkedHashMap<>(extraConfig));
    }

    /**
     * Reads options, reporting every problem and unknown key at once.
     *
     * @param config the options given to the factory.
     * @return the options.
     * @throws io.kvbridge.spi.KvBridgeException {@code CONFIG_INVALID}.
     */
    static UcxOptions parse(Map<String, String> config)
    {
        PluginConfig options = new PluginConfig(UcxBackendFactory.NAME, config);
        String tls = listValue(options, TLS, "sm, tcp, sm,tcp or all");
        boolean uncheckedTcpLane = options.booleanValue(ALLOW_UNCHECKED_TCP_LANE, false);
        String netDevices = listValue(options, NET_DEVICES, "lo, eth0 or mlx5_0:1");
        int keepalive = options.intValue(KEEPALIVE_INTERVAL_MS, 1000, 0, 3_600_000);
        int transferTimeout = options.intValue(TRANSFER_TIMEOUT_MS, 0, 0, Integer.MAX_VALUE);
        int connectTimeout = options.intValue(CONNECT_TIMEOUT_MS, 10_000, 1, 600_000);
        int closeTimeout = options.intValue(CLOSE_TIMEOUT_MS, 2000, 1, 600_000);
        int idleSpin = options.intValue(IDLE_SPIN_US, 500, 0, 1_000_000);
        boolean stagger = options.booleanValue(STAGGER_ALLOCATIONS, true);
        int maxInFlight = options.intValue(MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT, 1, MAX_MAX_IN_FLIGHT);
        Map<String, String> extra = extraConfig(options);
        if (!uncheckedTcpLane) {
            refuseTcpLane(options, tls);
        }
        boolean granted = granted(options);
        int eagerMax = options.intValue(EAGER_MAX, onlyTcp(lanes(tls)) ? TCP_EAGER_MAX : 0, 0, MAX_EAGER_MAX);
        // without the opt-in an instance whose lanes nobody chose is opened without tcp (see withoutTcp)
        int tcpSegment = tcpSegment(options, extra, UcxLanes.mayUseTcp(lanes(tls)) && (uncheckedTcpLane || !lanes(tls).isEmpty()));
        options.finish();
        return new UcxOptions(tls, netDevices, keepalive, transferTimeout, connectTimeout, closeTimeout, idleSpin, stagger, maxInFlight, extra, granted,
                eagerMax, tcpSegment, uncheckedTcpLane);
    }

    /**
     * Returns these options with other network devices.
     *
     * @param devices the {@code NET_DEVICES} value; empty leaves the choice to UCX's configuration.
     * @return the copy.
     */
    UcxOptions withNetDevices(String devices)
    {
        return new UcxOptions(tls, devices, keepaliveIntervalMillis, transferTimeoutMillis, connectTimeoutMillis, closeTimeoutMillis, idleSpinMicros,
                staggerAllocations, maxInFlight, extraConfig, granted, eagerMaxBytes, tcpSegmentBytes, uncheckedTcpLane);
    }

    /**
     * Returns these options with UCX's tcp transport left out ({@code ^tcp}) and no tcp segment,
     * for an instance whose peers are all on this host ({@link UcxNetDevices#onlyThisHost}), or
     * whose lanes nobody chose and which is not allowed the tcp lane.
     *
     * @return the copy.
     */
    UcxOptions withoutTcp()
    {
        return new UcxOptions(WITHOUT_TCP, netDevices, keepaliveIntervalMillis, transferTimeoutMillis, connectTimeoutMillis, closeTimeoutMillis, idleSpinMicros,
                staggerAllocations, maxInFlight, extraConfig, granted, eagerMaxBytes, 0, uncheckedTcpLane);
    }

    /** {@return the transports for messages: UCX's default, or the value, with why when tcp was left out by default} */
    String describeTls()
    {
        if (tls.equals(WITHOUT_TCP)) {
            return WITHOUT_TCP + " (tcp is left out when the side channel serves loopback, or " + ALLOW_UNCHECKED_TCP_LANE
                    + " is not true, and neither tls nor UCX_TLS is set; set tls=tcp,sm with " + ALLOW_UNCHECKED_TCP_LANE
                    + "=true for peers on this host that cannot share memory with this one)";
        }
        return UcxWorker.describe(tls);
    }

    /**
     * Returns the UCX settings this instance applies over the environment, in order.
     *
     * @return names without the {@code UCX_} prefix, with values.
     */
    Map<String, String> ucxOverrides()
    {
        Map<String, String> overrides = new LinkedHashMap<>();
        if (mayUseSharedMemory()) {
            // every endpoint uses peer error handling; shared memory transports only offer it when
            // asked to, otherwise UCX would leave no shared-memory lane for such endpoints
            overrides.put("MM_ERROR_HANDLING", "y");
        }
        if (keepaliveIntervalMillis > 0) {
            overrides.put("KEEPALIVE_INTERVAL", keepaliveIntervalMillis + "ms");
        }
        if (!tls.isEmpty()) {
            overrides.put("TLS", tls);
        }
        if (!netDevices.isEmpty()) {
            overrides.put("NET_DEVICES", netDevices);
        }
        if (tcpSegmentBytes > 0) {
            overrides.put(UCX_TCP_SEGMENT, Integer.toString(tcpSegmentBytes));
        }
        overrides.putAll(extraConfig);
        return overrides;
    }

    /**
     * Tells whether {@link #tls}, or {@code UCX_TLS} when the option is not set, lets UCX load its
     * shared-memory transports (UCX warns about settings of unloaded ones).
     */
    boolean mayUseSharedMemory()
    {
        String lanes = lanes(tls);
        if (lanes.isEmpty() || lanes.startsWith("^")) {
            return true;
        }
        for (String name : lanes.split(",")) {
            if (Set.of("sm", "shm", "posix", "sysv", "mm", "all").contains(name.trim())) {
                return true;
            }
        }
        return false;
    }


    /**
     * The tcp transport's receive segment: the {@code tcp-segment} option, else
     * {@code UCX_TCP_RX_SEG_SIZE} (in UCX's notation: {@code 524288}, {@code 512K}, {@code 512kb}),
     * else {@link #DEFAULT_TCP_SEGMENT}; 0 where TCP cannot load. Peers must agree on it (see
     * {@code UcxEndpoints}), so it is set only here, where it is also published.
     */
    private static int tcpSegment(PluginConfig options, Map<String, String> extra, boolean tcp)
    {
        for (String name : List.of(UCX_TCP_SEGMENT, "TCP_" + UCX_TCP_SEGMENT)) {
            if (extra.containsKey(name)) {
                options.problem(UCX_CONFIG + " entry " + name + " is not accepted: use the " + TCP_SEGMENT
                        + " option, which this instance also tells its peers (they must use the same)");
            }
        }
        String environment = System.getenv(TCP_SEGMENT_ENVIRONMENT);
        int fallback = DEFAULT_TCP_SEGMENT;
        if (environment != null) {
            fallback = memoryUnits(environment.trim());
            if (fallback < MIN_TCP_SEGMENT || fallback > MAX_TCP_SEGMENT) {
                options.problem(TCP_SEGMENT_ENVIRONMENT + "=" + environment + " is not a size in [" + MIN_TCP_SEGMENT + ", " + MAX_TCP_SEGMENT
                        + "] bytes (expected e.g. 524288 or 512K); correct or unset it, or give the " + TCP_SEGMENT + " option");
                fallback = DEFAULT_TCP_SEGMENT;
            }
        }
        int segment = options.intValue(TCP_SEGMENT, fallback, MIN_TCP_SEGMENT, MAX_TCP_SEGMENT);
        return tcp ? segment : 0;
    }

    /** {@return bytes in UCX's memory units ({@code 4096}, {@code 64K}, {@code 64kb}, {@code 1M}), or -1} */
    private static int memoryUnits(String value)
    {
        Matcher matcher = MEMORY_UNITS.matcher(value);
        if (!matcher.matches()) {
            return -1;
        }
        int shift = switch (matcher.group(2).toLowerCase(Locale.ROOT)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            default -> 0;
        };
        long bytes = Long.parseLong(matcher.group(1)) << shift;
        return bytes > Integer.MAX_VALUE ? -1 : (int) bytes;
    }

    /** {@return the lanes UCX is given: the tls option, or this process's {@code UCX_TLS} when the option is not set} */
    private static String lanes(String tls)
    {
        return tls.isEmpty() ? System.getenv().getOrDefault(TLS_ENVIRONMENT, "") : tls;
    }

    /**
     * Tells whether a {@code UCX_TLS} value leaves TCP as the only lane between processes: it names
     * {@code tcp} and nothing else that moves data but loop-back ({@code self}) and CUDA's local
     * copies.
     */
    static boolean onlyTcp(String lanes)
    {
        if (lanes.isEmpty() || lanes.startsWith("^")) {
            return false;
        }
        boolean tcp = false;
        for (String name : lanes.split(",")) {
            String lane = name.trim();
            if (lane.equals("tcp")) {
                tcp = true;
            }
            else if (!lane.equals("self") && !lane.equals("cuda_copy")) {
                return false;
            }
        }
        return tcp;
    }

    /**
     * Refuses lanes that let UCX load its tcp transport: its wire protocol writes the bytes of a put
     * request to whatever address the request names ({@code uct_tcp_ep_handle_put_req}), below
     * every check of this transport, so a port of it is a way into the process for anyone who
     * reaches it. Lanes nobody chose are not refused here: the factory opens them without tcp.
     */
    private static void refuseTcpLane(PluginConfig options, String tls)
    {
        String lanes = lanes(tls);
        if (!lanes.isEmpty() && UcxLanes.mayUseTcp(lanes)) {
            String source = tls.isEmpty() ? TLS_ENVIRONMENT + "=" + lanes + " (the environment)" : TLS + "=" + tls;
            options.problem(source + " lets UCX open its tcp transport, whose wire protocol writes wherever a put request names before any grant is "
                    + "checked, so anyone reaching its port can write into this process; leave tcp out (e.g. " + TLS + "=sm), use the tcp transport "
                    + "between hosts, or set " + ALLOW_UNCHECKED_TCP_LANE + "=true where only trusted hosts reach UCX's TCP ports");
        }
    }

    private static String listValue(PluginConfig options, String key, String examples)
    {
        String value = options.stringValue(key, "").trim();
        if (!value.isEmpty() && !LIST_VALUE.matcher(value).matches()) {
            options.problem(key + "=" + value + " is not a UCX list (expected names such as " + examples + ")");
            return "";
        }
        return value;
    }

    private static boolean granted(PluginConfig options)
    {
        String access = options.stringValue(ACCESS, "granted").trim();
        if (!access.equals("granted") && !access.equals("registered")) {
            options.problem(ACCESS + "=" + access + " is not an access mode (expected granted, which checks every peer access against the grants,"
                    + " or registered, which lets connected peers reach all registered memory)");
        }
        return !access.equals("registered");
    }

    private static Map<String, String> extraConfig(PluginConfig options)
    {
        String text = options.stringValue(UCX_CONFIG, "").trim();
        Map<String, String> extra = new LinkedHashMap<>();
        if (text.isEmpty()) {
            return extra;
        }
        for (String entry : text.split(";")) {
            int equals = entry.indexOf('=');
            String name = equals < 0 ? entry.trim() : entry.substring(0, equals).trim();
            String value = equals < 0 ? "" : entry.substring(equals + 1).trim();
            if (name.startsWith("UCX_")) {
                name = name.substring(4);
            }
            if (equals < 0 || !CONFIG_NAME.matcher(name).matches() || value.isEmpty()) {
                options.problem(UCX_CONFIG + " entry '" + entry.trim() + "' is not NAME=VALUE (expected e.g. "
                        + UCX_CONFIG + "=RNDV_THRESH=8192;ZCOPY_THRESH=16384)");
                continue;
            }
            if (name.equals("TLS") || name.endsWith("_TLS")) {
                // the lanes go through the tls option only, where the tcp lane is checked
                options.problem(UCX_CONFIG + " entry " + name + " is not accepted: use the " + TLS + " option");
                continue;
            }
            extra.put(name, value);
        }
        return extra;
    }
}
