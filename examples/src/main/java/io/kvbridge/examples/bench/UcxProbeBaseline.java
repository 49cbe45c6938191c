package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.TransferOp;
import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The UCX baseline next to the {@code ucx} transport: {@code ucx_probe.c} (packaged with the command
 * line) is compiled against UCX ({@code -lucp -lucs}, headers from libucx-dev) and run as two forked
 * processes that put the same total in the same block sizes as {@link TransportBench}, from and into
 * memory of the same kind: allocated by UCX ({@code UCP_MEM_MAP_ALLOCATE}) when the bench lets the
 * transport allocate, else allocated by the probe and registered. The probe inherits this process's environment, so {@code UCX_TLS} and the other
 * {@code UCX_*} settings are those the transport instances start with.
 *
 * <p>Per block size: one untimed pass, then {@value #TIMED_PASSES} timed, and the best is the figure,
 * as for the memcpy baseline. A single pass is not enough: the probe's target must run for puts to
 * complete whenever UCX emulates them, so one stretch without a core for it (two cores shared with
 * anything else) cuts a pass to a fraction of what UCX can do.
 *
 * <p>Between two hosts ({@code kvbridge bench --role target|initiator}) the probe runs as two
 * processes on them, connected over TCP: {@link #serve} starts its target on the bench target,
 * {@link #measureTo} its initiator against it, which gets (READ) and puts (WRITE) in transfers shaped
 * as the bench's: {@code --batch} blocks then a flush of their own, {@code --window} flushes in
 * flight. Each side's probe opens the network devices its transport instance opens
 * ({@link #netDevices}).
 */
public final class UcxProbeBaseline
{
    /** The transport this baseline is compared with. */
    public static final String TRANSPORT = "ucx";

    /** Timed passes per block size. */
    public static final int TIMED_PASSES = 5;

    private static final CompiledBaseline.Program PROGRAM = new CompiledBaseline.Program("ucx_probe.c", List.of("-lucp", "-lucs"),
            Pattern.compile("ucx_probe put block=(\\d+) total=\\d+ memory=(?:own|ucx) batches=\\d+ mean [0-9.]+ GB/s best ([0-9.]+) GB/s"), "UCX probe baseline",
            "libucx-dev", 600);

    private static final Pattern LISTENING = Pattern.compile("ucx_probe listening port=(\\d+)");
    private static final String SHAPED = " block=(\\d+) total=\\d+ memory=(?:own|ucx) batches=\\d+ window=\\d+ batch=\\d+ mean [0-9.]+ GB/s best ([0-9.]+) GB/s";
    private static final List<Pattern> OPERATIONS = List.of(Pattern.compile("ucx_probe get" + SHAPED), Pattern.compile("ucx_probe put" + SHAPED));
    /** The ucx transport's option for the network devices, which wins over the environment. */
    private static final String NET_DEVICES_OPTION = "net-devices";
    private static final String NET_DEVICES = "UCX_NET_DEVICES";
    private static final Path RDMA_DEVICES = Path.of("/sys/class/infiniband");

    /**
     * What the probe measured between two hosts: gets next to the READ rows, puts next to the WRITE rows.
     *
     * @param get GB/s of {@code ucp_get_nbx} per block size, or why there are none.
     * @param put GB/s of {@code ucp_put_nbx} per block size, or why there are none.
     */
    public record TwoHosts(BaselineResult get, BaselineResult put)
    {
        /** Checks the values and keeps their reasons to one line each. */
        public TwoHosts
        {
            get = oneLine(requireNonNull(get, "get is null"));
            put = oneLine(requireNonNull(put, "put is null"));
        }

        /**
         * A probe that did not run.
         *
         * @param reason why, and how to fix it.
         * @return the result.
         */
        public static TwoHosts unavailable(String reason)
        {
            return new TwoHosts(BaselineResult.unavailable(reason), BaselineResult.unavailable(reason));
        }

        /**
         * The figures next to one operation's rows.
         *
         * @param op READ or WRITE.
         * @return the gets for READ, the puts for WRITE.
         */
        public BaselineResult of(TransferOp op)
        {
            return op == TransferOp.READ ? get : put;
        }

        /** {@return whether both operations were measured} */
        public boolean available()
        {
            return get.available() && put.available();
        }

        /** {@return why an operation was not measured, in one line; empty when both were} */
        public String reason()
        {
            return !get.available() ? get.reason() : put.reason();
        }

        private static BaselineResult oneLine(BaselineResult result)
        {
            return result.available() ? result : BaselineResult.unavailable(result.reason().strip().replaceAll("\\s*\\R\\s*", " | "));
        }
    }

    private UcxProbeBaseline()
    {
    }

    /**
     * Compiles and runs the probe; never throws for a missing compiler, missing UCX headers or a
     * failing probe, it says why instead.
     *
     * @param compiler the C compiler command, normally {@code gcc}.
     * @param totalBytes bytes put per block size.
     * @param blockSizes the block sizes.
     * @param ucxMemory whether UCX allocates the regions, as the transport's {@code allocate()} does.
     * @return the figures, or the reason there are none.
     */
    public static BaselineResult measure(String compiler, long totalBytes, List<Long> blockSizes, boolean ucxMemory)
    {
        requireNonNull(blockSizes, "blockSizes is null");
        List<String> arguments = new ArrayList<>(List.of("put", Long.toString(totalBytes)));
        blockSizes.forEach(size -> arguments.add(Long.toString(size)));
        arguments.addAll(List.of(ucxMemory ? "--memory=ucx" : "--memory=own", "--batches=" + TIMED_PASSES));
        return CompiledBaseline.measure(PROGRAM, compiler, arguments, blockSizes);
    }

    /**
     * Describes the UCX transports both sides use.
     *
     * @return {@code UCX_TLS=value}, or that it is unset and UCX chooses.
     */
    public static String transports()
    {
        String tls = System.getenv("UCX_TLS");
        return tls == null || tls.isBlank() ? "UCX_TLS unset (UCX's choice)" : "UCX_TLS=" + tls;
    }

    /**
     * Compiles and starts the probe's target on an address of this host, for one initiator; never
     * throws for a missing compiler, missing UCX headers or a failing start, it says why instead.
     *
     * @param compiler the C compiler command.
     * @param host the address to listen on (the port is the kernel's choice).
     * @param totalBytes the region's size; the initiator's header must say the same.
     * @param ucxMemory whether UCX allocates the region, as the target's buffer is allocated.
     * @param transportOptions the ucx transport's options, for its network devices.
     * @return the target.
     */
    public static BaselineServer serve(String compiler, String host, long totalBytes, boolean ucxMemory, Map<String, String> transportOptions)
    {
        return BaselineServer.start(PROGRAM, compiler, List.of("--serve=" + BaselineServer.hostPort(host, 0), Long.toString(totalBytes), memory(ucxMemory)),
                netDevices(host, transportOptions), LISTENING, host);
    }

    /**
     * Compiles and runs the probe's initiator against a target {@link #serve} started on another
     * host: per block size gets, then puts, of the whole region; never throws for a missing compiler,
     * missing UCX headers or a failing probe, it says why instead.
     *
     * @param compiler the C compiler command.
     * @param host the probe target's host.
     * @param port the probe target's port.
     * @param totalBytes bytes moved per block size and operation.
     * @param blockSizes the block sizes.
     * @param ucxMemory whether UCX allocates the region, as this side's buffer is allocated.
     * @param window transfers in flight.
     * @param batch blocks per transfer.
     * @param localHost this side's address on the control connection, for the network devices.
     * @param transportOptions the ucx transport's options, for its network devices.
     * @return the figures, or the reason there are none.
     */
    public static TwoHosts measureTo(String compiler, String host, int port, long totalBytes, List<Long> blockSizes, boolean ucxMemory, int window, int batch,
            String localHost, Map<String, String> transportOptions)
    {
        requireNonNull(blockSizes, "blockSizes is null");
        List<String> arguments = new ArrayList<>(List.of("--connect=" + BaselineServer.hostPort(host, port), "both", Long.toString(totalBytes)));
        blockSizes.forEach(size -> arguments.add(Long.toString(size)));
        arguments.addAll(List.of(memory(ucxMemory), "--batches=" + TIMED_PASSES, "--window=" + window, "--batch=" + batch));
        List<BaselineResult> measured = CompiledBaseline.measureEach(PROGRAM, compiler, arguments, blockSizes, netDevices(localHost, transportOptions),
                OPERATIONS);
        return new TwoHosts(measured.get(0), measured.get(1));
    }

    private static String memory(boolean ucxMemory)
    {
        return ucxMemory ? "--memory=ucx" : "--memory=own";
    }

    /**
     * The network devices a probe opens, as the ucx transport chooses them for an instance that
     * follows a control address: its {@code net-devices} option when given, {@code UCX_NET_DEVICES}
     * when the environment sets it, else the interface of that address plus every RDMA port of the
     * host, so that neither measures lanes the other does not open.
     *
     * @param host this side's address on the control connection.
     * @param transportOptions the ucx transport's options.
     * @return the variable to add to the probe's environment; empty to leave it as it is.
     */
    static Map<String, String> netDevices(String host, Map<String, String> transportOptions)
    {
        String configured = transportOptions.getOrDefault(NET_DEVICES_OPTION, "");
        if (!configured.isBlank()) {
            return Map.of(NET_DEVICES, configured);
        }
        String environment = System.getenv(NET_DEVICES);
        if (environment != null && !environment.isBlank()) {
            return Map.of();
        }
        try {
            InetAddress address = InetAddress.getByName(host);
            NetworkInterface device = address.isAnyLocalAddress() ? null : NetworkInterface.getByInetAddress(address);
            if (device == null) {
                return Map.of();
            }
            List<String> devices = new ArrayList<>(List.of(device.getName()));
            devices.addAll(rdmaPorts());
            return Map.of(NET_DEVICES, String.join(",", devices));
        }
        catch (IOException e) {
            // an address this host cannot look up leaves the choice to UCX, as the transport does
            return Map.of();
        }
    }

    /** {@return the host's RDMA ports as UCX names them, {@code mlx5_0:1}} */
    private static List<String> rdmaPorts() throws IOException
    {
        if (!Files.isDirectory(RDMA_DEVICES)) {
            return List.of();
        }
        List<String> ports = new ArrayList<>();
        try (Stream<Path> devices = Files.list(RDMA_DEVICES)) {
            for (Path device : devices.sorted().toList()) {
                Path portsOf = device.resolve("ports");
                if (Files.isDirectory(portsOf)) {
                    try (Stream<Path> numbers = Files.list(portsOf)) {
                        numbers.sorted().forEach(number -> ports.add(device.getFileName() + ":" + number.getFileName()));
                    }
                }
            }
        }
        return ports;
    }
}
