package io.kvbridge.examples.cli;

import io.kvbridge.api.Integrity;
import io.kvbridge.api.PluginInfo;
import io.kvbridge.api.PluginKind;
import io.kvbridge.core.config.Sizes;
import io.kvbridge.core.plugin.DiscoveredTransport;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.examples.bench.BaselineResult;
import io.kvbridge.examples.bench.CudaD2dBaseline;
import io.kvbridge.examples.bench.MemcpyBaseline;
import io.kvbridge.examples.bench.NixlProbeBaseline;
import io.kvbridge.examples.bench.SvgChart;
import io.kvbridge.examples.bench.TcpStreamBaseline;
import io.kvbridge.examples.bench.TransportBench;
import io.kvbridge.examples.bench.UcxProbeBaseline;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvbridge bench}: WRITE (or READ) throughput and per-transfer latency of every available transport per
 * block size, next to baselines measured in the same run: a single-thread memcpy of the same stream
 * for every transport, for {@code ucx} a C program putting the same stream through UCX directly, for
 * {@code tcp} and {@code ucx} one plain TCP stream on loopback carrying it, and
 * for a transport that allocates device memory (cuda-ipc) device rows next to a C program copying
 * the same stream device to device with {@code cuMemcpyAsync}, plus the issue cost of one transfer
 * of 5,120 descriptors. With {@code --role target|initiator} it runs between two processes, on two
 * hosts or one, instead ({@link BenchRoles}).
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure WRITE (or --op READ) throughput and latency per block size and --batch for each available transport against a memcpy baseline "
                + "(for ucx, against a C program using UCX directly; for nixl, against a C program using NIXL's C API directly, one request per pass "
                + "and one per block; for tcp and ucx, against one plain TCP stream; for cuda-ipc, device rows against a C program copying device to device). "
                + "With --role target|initiator: READ and WRITE between two processes, on two hosts or one, prepare, post and transfer times apart, "
                + "against one TCP stream between them.")
final class BenchCommand implements Callable<Integer>
{
    private static final String MEMCPY_SERIES = "memcpy (1 thread)";
    private static final String PROBE_SERIES = "UCX C probe (put)";
    private static final String NIXL_PROBE_SERIES = "NIXL C probe (write)";
    private static final String TCP_SERIES = "one TCP stream (C, loopback)";
    /** Smaller blocks measure a transfer's fixed cost only, and make the bookkeeping outgrow the data. */
    private static final long MIN_BLOCK_BYTES = 64;
    /** Transfers of one block size: each costs bookkeeping (descriptors, latencies) on top of the data. */
    private static final long MAX_TRANSFERS = 1L << 20;
    private static final long MAX_TOTAL_BYTES = 16L << 30;

    private static final String DEVICE_BASELINE_SERIES = "cuMemcpy device to device (C)";
    /** Descriptors of the per-transfer issue cost: 40 layers of 128 blocks, a long prompt's pages. */
    private static final int ISSUE_DESCRIPTORS = 5_120;

    /** The device rows' baseline, issue costs and which driver they came from. */
    private static final class DeviceFigures
    {
        BaselineResult baseline = BaselineResult.unavailable("no transport that allocates device memory is available here");
        final List<Map<String, Object>> issueCosts = new ArrayList<>();
        String driver;
    }

    @Option(names = "--device", paramLabel = "N", defaultValue = "0", description = "Device of the device rows (default: ${DEFAULT-VALUE}); with --role, this side's buffer is device memory on it when given.")
    private int deviceIndex;

    @Spec
    private CommandSpec spec;

    @Option(names = "--block-sizes", split = ",", defaultValue = "4KiB,32KiB,256KiB,4MiB", paramLabel = "SIZE",
            converter = ParsedTextConverter.SizeConverter.class,
            description = "Block sizes, one per transfer, each at least 64 bytes, dividing the total into at most 1048576 transfers: 4096, 4K, 32KiB, 4M, 1GiB "
                    + "(default: ${DEFAULT-VALUE}).")
    private List<Long> blockSizesList;

    @Option(names = "--total-bytes", defaultValue = "256MiB", paramLabel = "SIZE", converter = ParsedTextConverter.SizeConverter.class,
            description = "Bytes streamed per block size and transport, at most 16GiB and half the memory available (a source and a destination are held) "
                    + "(default: ${DEFAULT-VALUE}).")
    private long totalBytes;

    @Option(names = "--window", paramLabel = "N", defaultValue = "8", description = "Transfers in flight (default: ${DEFAULT-VALUE}).")
    private int window;

    @Option(names = "--cc", paramLabel = "CC", defaultValue = "gcc",
            description = "C compiler for the memcpy and UCX probe baselines (default: ${DEFAULT-VALUE}).")
    private String compiler;

    @Option(names = "--transport-option", paramLabel = "TRANSPORT.KEY=VALUE",
            description = "An option for one transport's instances, e.g. ucx.access=registered; repeatable.")
    private List<String> transportOptions = new ArrayList<>();

    @Option(names = "--integrity", description = "Measure every host row also with block digests (integrity=crc32c: a CRC32C of each block "
            + "before its transfer is posted, compared after it is done), alternating with and without, and report the cost.")
    private boolean integrity;

    @Option(names = "--json", description = "Print one JSON object {rows, baseline, probe, skipped, ...}.")
    private boolean json;

    @Option(names = "--plot", paramLabel = "FILE.svg", description = "Write an SVG chart of GB/s against block size.")
    private Path plot;

    @Mixin
    private BenchRoles roles;

    @Mixin
    private BenchPasses passes;

    @Override
    public Integer call()
    {
        List<Long> blockSizes = validate();
        passes.validate(roles.active());
        if (roles.active()) {
            check(plot == null, "--plot draws the one-process bench; with --role, give --json and plot its rows");
            boolean device = spec.commandLine().getParseResult().hasMatchedOption("--device");
            check(!device || deviceIndex >= 0, "--device=%d is not a device index", deviceIndex);
            return roles.run(new BenchRoles.Common(blockSizes, totalBytes, window, compiler, optionsOf(roles.transport()), json, device ? deviceIndex : -1));
        }
        roles.refuseWithoutRole();
        List<Integer> batches = roles.batches();
        BenchRoles.checkBatches(spec, batches, blockSizes, totalBytes);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter progress = spec.commandLine().getErr();

        progress.printf("kvbridge bench: memcpy baseline (%s, single thread) ...%n", compiler);
        progress.flush();
        BaselineResult baseline = MemcpyBaseline.measure(compiler, totalBytes, blockSizes);
        BaselineResult probe = BaselineResult.unavailable("the " + UcxProbeBaseline.TRANSPORT + " transport is not available here");
        BaselineResult nixlProbe = BaselineResult.unavailable("the " + NixlProbeBaseline.TRANSPORT + " transport is not available here");
        BaselineResult nixlPerBlock = nixlProbe;
        BaselineResult tcpStream = BaselineResult.unavailable("neither the " + String.join(" nor the ", TcpStreamBaseline.TRANSPORTS)
                + " transport is available here");
        boolean tcpStreamMeasured = false;
        DeviceFigures device = new DeviceFigures();
        boolean probeMemory = false;

        List<Map<String, Object>> rows = new ArrayList<>();
        List<Map<String, Object>> skipped = new ArrayList<>();
        Map<String, Map<Long, Double>> series = new LinkedHashMap<>();
        boolean failed = false;
        for (PluginInfo plugin : PluginRegistry.discover(BenchCommand.class.getClassLoader()).describe()) {
            if (plugin.kind() != PluginKind.TRANSPORT) {
                continue;
            }
            if (!plugin.available()) {
                skipped.add(skip(plugin.name(), "unavailable: " + String.join("; ", plugin.reasons())));
                continue;
            }
            // a transport that allocates memory it moves faster is measured on that memory, as same-host engines should use it
            boolean transportMemory = plugin.capabilities().contains(Capability.TRANSPORT_ALLOCATION);
            if (plugin.name().equals(UcxProbeBaseline.TRANSPORT)) {
                probeMemory = transportMemory;
                progress.printf("kvbridge bench: UCX C probe (%s, two processes, %s) ...%n", compiler, UcxProbeBaseline.transports());
                progress.flush();
                probe = UcxProbeBaseline.measure(compiler, totalBytes, blockSizes, transportMemory);
            }
            boolean overTcp = TcpStreamBaseline.TRANSPORTS.contains(plugin.name());
            if (overTcp && !tcpStreamMeasured) {
                tcpStreamMeasured = true;
                progress.printf("kvbridge bench: one TCP stream on loopback (%s, two processes) ...%n", compiler);
                progress.flush();
                tcpStream = TcpStreamBaseline.measure(compiler, totalBytes, blockSizes);
            }
            if (plugin.name().equals(NixlProbeBaseline.TRANSPORT)) {
                progress.printf("kvbridge bench: NIXL C probe (%s, two agents in one process) ...%n", compiler);
                progress.flush();
                nixlProbe = NixlProbeBaseline.measure(compiler, totalBytes, blockSizes, false);
                progress.printf("kvbridge bench: NIXL C probe, one request per block ...%n");
                progress.flush();
                nixlPerBlock = NixlProbeBaseline.measure(compiler, totalBytes, blockSizes, true);
            }
            BaselineResult ownProbe = plugin.name().equals(UcxProbeBaseline.TRANSPORT) ? probe
                    : plugin.name().equals(NixlProbeBaseline.TRANSPORT) ? nixlProbe : null;
            BaselineResult ownTcp = overTcp ? tcpStream : null;
            BaselineResult ownPerBlock = plugin.name().equals(NixlProbeBaseline.TRANSPORT) ? nixlPerBlock : null;
            Map<Integer, Map<Long, Double>> pointsPerBatch = new LinkedHashMap<>();
            try (TransportBench bench = new TransportBench(plugin.name(), totalBytes, window, transportMemory, optionsOf(plugin.name()))) {
                for (long size : blockSizes) {
                    for (int batch : batches) {
                        TransportBench.Passes rowPasses = passes.passes(batch);
                        Map<Long, Double> points = pointsPerBatch.computeIfAbsent(batch, b -> new LinkedHashMap<>());
                        progress.printf("kvbridge bench: %s %s %s, batch %d ...%n", plugin.name(), rowPasses.op(), Sizes.format(size), batch);
                        progress.flush();
                        TransportBench.Result result = bench.measure(size, Integrity.OFF, rowPasses);
                        TransportBench.Result digested = null;
                        if (integrity) {
                            // alternated, the best of each: what differs between them is the digests, not the moment
                            digested = bench.measure(size, Integrity.CRC32C, rowPasses);
                            TransportBench.Result again = bench.measure(size, Integrity.OFF, rowPasses);
                            result = again.gigabytesPerSecond() > result.gigabytesPerSecond() ? again : result;
                            TransportBench.Result digestedAgain = bench.measure(size, Integrity.CRC32C, rowPasses);
                            digested = digestedAgain.gigabytesPerSecond() > digested.gigabytesPerSecond() ? digestedAgain : digested;
                        }
                        Double memcpy = baseline.gigabytesPerSecond().get(size);
                        Double probed = ownProbe == null ? null : ownProbe.gigabytesPerSecond().get(size);
                        Double tcp = ownTcp == null ? null : ownTcp.gigabytesPerSecond().get(size);
                        Map<String, Object> row = new LinkedHashMap<>();
                        row.put("transport", plugin.name());
                        row.put("op", rowPasses.op().name());
                        row.put("blockBytes", size);
                        row.put("batch", batch);
                        row.put("transfers", result.transfers());
                        row.put("memory", transportMemory ? "transport" : "process");
                        if ("true".equals(plugin.details().get("fake"))) {
                            // a transport bound to a test fake of its native library moves bytes, but its figures are the fake's
                            row.put("driver", "fake");
                        }
                        row.put("gbPerSecond", significant(result.gigabytesPerSecond()));
                        row.put("p50Micros", round(result.p50Micros()));
                        row.put("p99Micros", round(result.p99Micros()));
                        row.put("ratioToMemcpy", memcpy == null ? null : significant(result.gigabytesPerSecond() / memcpy));
                        row.put("probeGbPerSecond", probed);
                        row.put("ratioToProbe", probed == null ? null : significant(result.gigabytesPerSecond() / probed));
                        if (ownPerBlock != null) {
                            Double perBlock = ownPerBlock.gigabytesPerSecond().get(size);
                            row.put("perBlockProbeGbPerSecond", perBlock);
                            row.put("ratioToPerBlockProbe", perBlock == null ? null : significant(result.gigabytesPerSecond() / perBlock));
                        }
                        row.put("tcpGbPerSecond", tcp);
                        row.put("ratioToTcp", tcp == null ? null : significant(result.gigabytesPerSecond() / tcp));
                        if (digested != null) {
                            row.put("crc32cGbPerSecond", significant(digested.gigabytesPerSecond()));
                            row.put("crc32cP50Micros", round(digested.p50Micros()));
                            row.put("crc32cCostPercent", round(100 * (1 - digested.gigabytesPerSecond() / result.gigabytesPerSecond())));
                        }
                        rows.add(row);
                        points.put(size, result.gigabytesPerSecond());
                    }
                }
            }
            catch (KvBridgeException e) {
                // a transport that fails must not report a figure; the others still run
                failed = true;
                skipped.add(skip(plugin.name(), "failed: " + e.getMessage()));
                rows.removeIf(row -> row.get("transport").equals(plugin.name()));
                continue;
            }
            // one line per batch where several are swept
            pointsPerBatch.forEach((batch, points) -> series.put(batches.size() > 1 ? plugin.name() + " batch " + batch : plugin.name(), points));
            boolean deviceMemory = plugin.capabilities().containsAll(List.of(Capability.DEVICE_MEMORY, Capability.TRANSPORT_ALLOCATION));
            if (deviceMemory && passes.op() != TransferOp.WRITE) {
                skipped.add(skip(plugin.name() + " device", "device rows are measured with --op WRITE only; the bench READs host memory"));
            }
            else if (deviceMemory) {
                failed |= !measureDevice(plugin, totalBytes, blockSizes, rows, skipped, series, device, progress);
            }
        }
        if (baseline.available()) {
            series.put(MEMCPY_SERIES, baseline.gigabytesPerSecond());
        }
        if (probe.available()) {
            series.put(PROBE_SERIES, probe.gigabytesPerSecond());
        }
        if (nixlProbe.available()) {
            series.put(NIXL_PROBE_SERIES, nixlProbe.gigabytesPerSecond());
        }
        if (tcpStream.available()) {
            series.put(TCP_SERIES, tcpStream.gigabytesPerSecond());
        }
        if (device.baseline.available()) {
            series.put(DEVICE_BASELINE_SERIES, device.baseline.gigabytesPerSecond());
        }
        if (plot != null) {
            writePlot(totalBytes, blockSizes, series);
        }

        if (json) {
            Map<String, Object> document = new LinkedHashMap<>();
            document.put("totalBytes", totalBytes);
            document.put("window", window);
            document.put("op", passes.op().name());
            document.put("batches", batches);
            document.put("iterations", passes.iterations());
            document.put("warmup", passes.warmup());
            document.put("transportOptions", List.copyOf(transportOptions));
            document.put("blockSizes", blockSizes);
            document.put("rows", rows);
            document.put("baseline", baselineJson(baseline));
            document.put("probe", probeJson(probe, probeMemory));
            document.put("nixlProbe", nixlProbeJson(nixlProbe, false));
            document.put("nixlProbePerBlock", nixlProbeJson(nixlPerBlock, true));
            document.put("tcpStream", tcpStreamJson(tcpStream));
            document.put("deviceBaseline", deviceBaselineJson(device));
            document.put("issueCost", device.issueCosts);
            document.put("skipped", skipped);
            document.put("plot", plot == null ? null : plot.toString());
            out.println(Json.write(document));
        }
        else {
            printTable(out, totalBytes, rows, baseline, probe, nixlProbe, nixlPerBlock, tcpStream, skipped);
            printDevice(out, device);
        }
        out.flush();
        return failed || rows.isEmpty() ? 1 : 0;
    }

    /** {@return the {@code --transport-option}s given for one transport, checked in {@link #validate}} */
    private Map<String, String> optionsOf(String transport)
    {
        Map<String, String> options = new LinkedHashMap<>();
        for (String option : transportOptions) {
            int dot = option.indexOf('.');
            int equals = option.indexOf('=');
            if (option.substring(0, dot).equals(transport)) {
                options.put(option.substring(dot + 1, equals), option.substring(equals + 1));
            }
        }
        return options;
    }

    /** @return the distinct block sizes, once every value was checked: nothing is measured before, so nothing is lost to a refusal. */
    private List<Long> validate()
    {
        for (String option : transportOptions) {
            int dot = option.indexOf('.');
            int equals = option.indexOf('=');
            check(dot > 0 && equals > dot + 1, "--transport-option=%s is not TRANSPORT.KEY=VALUE (e.g. ucx.access=registered)", option);
        }
        // each named transport checks its options now, as it would read them: a bad one is refused before any baseline runs
        Map<String, DiscoveredTransport> discovered = PluginRegistry.discover(BenchCommand.class.getClassLoader()).transports();
        Set<String> named = new LinkedHashSet<>();
        transportOptions.forEach(option -> named.add(option.substring(0, option.indexOf('.'))));
        for (String name : named) {
            DiscoveredTransport transport = discovered.get(name);
            check(transport != null, "--transport-option names transport '%s', which is not discovered; use one of %s", name,
                    String.join(", ", discovered.keySet()));
            ConfigCommand.transportProblem(transport, optionsOf(name)).ifPresent(problem -> check(false, "--transport-option: %s", problem));
        }
        check(totalBytes <= MAX_TOTAL_BYTES, "--total-bytes=%s is more than %s; give a smaller total", written(totalBytes), written(MAX_TOTAL_BYTES));
        // a source and a destination of the total in this process, and the same again in each baseline's processes
        OptionalLong available = InputChecks.availableMemory();
        check(available.isEmpty() || 2 * totalBytes <= available.getAsLong(),
                "--total-bytes=%s needs %s (a source and a destination) but %.1f GiB of memory is available; give at most %s", written(totalBytes),
                Sizes.format(2 * totalBytes), available.orElse(0) / (double) (1L << 30), written(Long.highestOneBit(Math.max(1, available.orElse(2) / 2))));
        List<Long> blockSizes = new ArrayList<>();
        // a target holds one buffer of the total; the initiator's block sizes are its own
        for (long size : roles.target() ? List.<Long>of() : blockSizesList) {
            check(size >= MIN_BLOCK_BYTES, "--block-sizes=%d is smaller than %d bytes, where a transfer measures its own overhead only; give a larger block",
                    size, MIN_BLOCK_BYTES);
            check(totalBytes % size == 0, "--block-sizes=%d does not divide --total-bytes=%d; pick sizes that divide the total", size, totalBytes);
            check(totalBytes / size <= MAX_TRANSFERS, "--block-sizes=%s makes %,d transfers of --total-bytes=%s, more than %,d; use a block of at least %s "
                    + "or a smaller total", written(size), totalBytes / size, written(totalBytes), MAX_TRANSFERS,
                    written(Math.max(MIN_BLOCK_BYTES, Long.highestOneBit(Math.max(1, (totalBytes - 1) / MAX_TRANSFERS)) << 1)));
            if (!blockSizes.contains(size)) {
                blockSizes.add(size);
            }
        }
        check(window >= 1 && window <= 4096, "--window=%d must be between 1 and 4096", window);
        check(deviceIndex >= 0, "--device=%d is not a device index; give 0 or more", deviceIndex);
        if (plot != null) {
            check(plot.toString().endsWith(".svg"), "--plot=%s must name an .svg file", plot);
            InputChecks.checkWritable(spec, "--plot", plot);
        }
        return blockSizes;
    }

    /**
     * Device rows of a transport that allocates device memory: device to device between two instances,
     * next to the same-run C baseline, and the issue cost of one transfer of many descriptors.
     *
     * @return false when the transport failed (no figure is then reported for it).
     */
    private boolean measureDevice(PluginInfo plugin, long totalBytes, List<Long> blockSizes, List<Map<String, Object>> rows, List<Map<String, Object>> skipped,
            Map<String, Map<Long, Double>> series, DeviceFigures device, PrintWriter progress)
    {
        // kvbridge's test fake of the driver moves "device" memory with memmove on a thread: its figures say nothing about a GPU
        device.driver = "true".equals(plugin.details().get("fake")) ? "fake" : "CUDA driver " + plugin.details().getOrDefault("driverVersion", "?");
        if (plugin.name().equals(CudaD2dBaseline.TRANSPORT)) {
            progress.printf("kvbridge bench: device-to-device cuMemcpy baseline (%s, CUDA toolkit, device %d, %s) ...%n", compiler, deviceIndex, device.driver);
            progress.flush();
            device.baseline = CudaD2dBaseline.measure(compiler, deviceIndex, totalBytes, blockSizes);
        }
        List<Map<String, Object>> measured = new ArrayList<>();
        Map<Long, Double> points = new LinkedHashMap<>();
        try (TransportBench bench = TransportBench.onDevice(plugin.name(), totalBytes, window, deviceIndex)) {
            for (long size : blockSizes) {
                progress.printf("kvbridge bench: %s %s device to device ...%n", plugin.name(), Sizes.format(size));
                progress.flush();
                // one block per transfer, as the device baseline copies
                TransportBench.Result result = bench.measure(size, Integrity.OFF, passes.passes(1));
                Double peak = device.baseline.gigabytesPerSecond().get(size);
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("transport", plugin.name());
                row.put("op", TransferOp.WRITE.name());
                row.put("blockBytes", size);
                row.put("batch", 1);
                row.put("transfers", result.transfers());
                row.put("memory", "device " + deviceIndex);
                row.put("driver", device.driver);
                row.put("gbPerSecond", significant(result.gigabytesPerSecond()));
                row.put("p50Micros", round(result.p50Micros()));
                row.put("p99Micros", round(result.p99Micros()));
                // a host memcpy says nothing about device memory
                row.put("ratioToMemcpy", null);
                row.put("probeGbPerSecond", peak);
                row.put("ratioToProbe", peak == null ? null : significant(result.gigabytesPerSecond() / peak));
                row.put("tcpGbPerSecond", null);
                row.put("ratioToTcp", null);
                measured.add(row);
                points.put(size, result.gigabytesPerSecond());
            }
            for (boolean contiguous : new boolean[] {true, false}) {
                TransportBench.IssueCost cost = bench.issueCost(ISSUE_DESCRIPTORS, contiguous);
                if (cost != null) {
                    Map<String, Object> figure = new LinkedHashMap<>();
                    figure.put("transport", plugin.name());
                    figure.put("memory", "device " + deviceIndex);
                    figure.put("driver", device.driver);
                    figure.put("descriptors", cost.descriptors());
                    figure.put("descriptorBytes", cost.descriptorBytes());
                    figure.put("contiguous", cost.contiguous());
                    figure.put("operations", cost.operations());
                    figure.put("postMicros", round(cost.postMicros()));
                    figure.put("doneMicros", round(cost.doneMicros()));
                    device.issueCosts.add(figure);
                }
            }
        }
        catch (KvBridgeException e) {
            skipped.add(skip(plugin.name() + " device", "failed: " + e.getMessage()));
            return false;
        }
        rows.addAll(measured);
        series.put(plugin.name() + " device", points);
        return true;
    }

    private static Map<String, Object> deviceBaselineJson(DeviceFigures device)
    {
        Map<String, Object> document = baselineJson(device.baseline);
        document.put("name", "cuda_d2d_peak");
        document.put("transport", CudaD2dBaseline.TRANSPORT);
        document.put("driver", device.driver);
        document.put("figure", "best of 5 timed passes, wall clock from the first copy queued to the last event reached");
        return document;
    }

    private static void printDevice(PrintWriter out, DeviceFigures device)
    {
        if (device.driver == null) {
            return;
        }
        String label = device.driver.equals("fake") ? " [FAKE DRIVER: kvbridge's test fake of libcuda.so.1, memmove on a thread; not GPU figures]" : "";
        out.println();
        if (device.baseline.available()) {
            out.print("device rows' baseline (cuda_d2d_peak.c, one process, cuMemcpyAsync device to device, same run" + label + "):");
            device.baseline.gigabytesPerSecond().forEach((size, gbps) -> out.printf(Locale.ROOT, " %s %.2f GB/s;", Sizes.format(size), gbps));
            out.println();
        }
        else {
            out.println("device rows' baseline: not measured, " + device.baseline.reason() + " (probe columns of the device rows left empty)");
        }
        for (Map<String, Object> cost : device.issueCosts) {
            out.printf(Locale.ROOT, "issue cost, %s %s, %d descriptors of %d bytes %s: post() %.1f us, post to DONE %.1f us, %d operations%s%n",
                    cost.get("transport"), cost.get("memory"), cost.get("descriptors"), cost.get("descriptorBytes"),
                    Boolean.TRUE.equals(cost.get("contiguous")) ? "adjacent on both sides" : "spaced apart", cost.get("postMicros"), cost.get("doneMicros"),
                    cost.get("operations"), label);
        }
        out.println("  device rows: two instances in this process, memory from allocate(DEVICE) on both sides, filled and checked through the "
                + "transport's host copies; probe GB/s is the device rows' baseline." + label);
    }

    private void writePlot(long totalBytes, List<Long> blockSizes, Map<String, Map<Long, Double>> series)
    {
        String title = String.format(Locale.ROOT, "kvbridge %s throughput, %s per block size, window %d, best of %d", passes.op(), Sizes.format(totalBytes),
                window, passes.iterations());
        try {
            Path parent = plot.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Set<String> baselines = Set.of(MEMCPY_SERIES, PROBE_SERIES, NIXL_PROBE_SERIES, TCP_SERIES, DEVICE_BASELINE_SERIES);
            Files.writeString(plot, SvgChart.render(title, blockSizes, series, baselines), StandardCharsets.UTF_8);
        }
        catch (IOException e) {
            throw new UncheckedIOException("could not write --plot=" + plot + ": " + e.getMessage(), e);
        }
    }

    static Map<String, Object> baselineJson(BaselineResult baseline)
    {
        Map<String, Object> document = new LinkedHashMap<>();
        document.put("name", "memcpy");
        document.put("available", baseline.available());
        document.put("reason", baseline.available() ? null : baseline.reason());
        List<Map<String, Object>> rows = new ArrayList<>();
        baseline.gigabytesPerSecond().forEach((size, gbps) -> {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("blockBytes", size);
            row.put("gbPerSecond", gbps);
            rows.add(row);
        });
        document.put("rows", rows);
        return document;
    }

    private static Map<String, Object> nixlProbeJson(BaselineResult probe, boolean requestPerBlock)
    {
        Map<String, Object> document = baselineJson(probe);
        document.put("name", "nixl_probe");
        document.put("transport", NixlProbeBaseline.TRANSPORT);
        document.put("figure", "best of " + NixlProbeBaseline.TIMED_PASSES + " timed passes, " + (requestPerBlock
                ? "one request made, posted and released per block, in turn" : "one unmerged request of every block per pass"));
        return document;
    }

    private static Map<String, Object> tcpStreamJson(BaselineResult tcpStream)
    {
        Map<String, Object> document = baselineJson(tcpStream);
        document.put("name", "tcp_stream");
        document.put("transports", TcpStreamBaseline.TRANSPORTS);
        document.put("figure", "best of " + TcpStreamBaseline.TIMED_PASSES + " timed passes, one TCP connection on 127.0.0.1, default socket buffers, TCP_NODELAY");
        return document;
    }

    private static Map<String, Object> probeJson(BaselineResult probe, boolean probeMemory)
    {
        Map<String, Object> document = baselineJson(probe);
        document.put("name", "ucx_probe");
        document.put("transport", UcxProbeBaseline.TRANSPORT);
        document.put("op", "put");
        document.put("memory", probeMemory ? "ucx (UCP_MEM_MAP_ALLOCATE)" : "own (allocated by the probe, registered with UCX)");
        document.put("ucxTls", System.getenv("UCX_TLS"));
        document.put("timedPasses", UcxProbeBaseline.TIMED_PASSES);
        document.put("figure", "best timed pass");
        return document;
    }

    private void printTable(PrintWriter out, long totalBytes, List<Map<String, Object>> rows, BaselineResult baseline, BaselineResult probe,
            BaselineResult nixlProbe, BaselineResult nixlPerBlock, BaselineResult tcpStream, List<Map<String, Object>> skipped)
    {
        out.printf(Locale.ROOT, "%s, %s streamed per block size, BATCH blocks per transfer, %d untimed pass(es), then the best of %d timed%n%n",
                passes.op(), Sizes.format(totalBytes), passes.warmup(), passes.iterations());
        out.printf(Locale.ROOT, "%-18s %10s %6s %9s %10s %10s %10s %11s %9s %7s%n", "TRANSPORT", "BLOCK", "BATCH", "GB/s", "p50 us", "p99 us", "x memcpy", "probe GB/s", "x probe",
                "x tcp");
        for (Map<String, Object> row : rows) {
            String memory = String.valueOf(row.get("memory"));
            out.printf(Locale.ROOT, "%-18s %10s %6d %9s %10.1f %10.1f %10s %11s %9s %7s%n",
                    row.get("transport") + (memory.startsWith("device") ? " dev" + memory.substring("device ".length()) : "")
                            + ("fake".equals(row.get("driver")) ? " fake" : ""),
                    Sizes.format((Long) row.get("blockBytes")), (Integer) row.get("batch"),
                    readable(row.get("gbPerSecond")), (Double) row.get("p50Micros"), (Double) row.get("p99Micros"),
                    readable(row.get("ratioToMemcpy")), readable(row.get("probeGbPerSecond")), readable(row.get("ratioToProbe")), readable(row.get("ratioToTcp")));
        }
        out.println();
        printIntegrity(out, rows);
        printBaseline(out, "memcpy baseline (single thread, same run)", "memcpy baseline", baseline, "ratio column");
        printBaseline(out, "UCX probe baseline (C, two processes, same run, " + UcxProbeBaseline.transports() + ")", "UCX probe baseline", probe, "probe columns");
        printBaseline(out, "NIXL probe baseline (C, two agents in one process, same run)", "NIXL probe baseline", nixlProbe, "probe columns of nixl");
        printBaseline(out, "NIXL probe, one request per block (C, same run)", "NIXL per-block probe", nixlPerBlock, "no column");
        for (Map<String, Object> row : rows) {
            if (row.get("ratioToPerBlockProbe") != null) {
                out.printf(Locale.ROOT, "  %s %s: %s x the per-block probe%n", row.get("transport"), Sizes.format((Long) row.get("blockBytes")),
                        readable(row.get("ratioToPerBlockProbe")));
            }
        }
        printBaseline(out, "TCP stream baseline (C, one connection on 127.0.0.1, two processes, same run)", "TCP stream baseline", tcpStream, "x tcp column");
        for (Map<String, Object> skip : skipped) {
            out.printf("skipped %s: %s%n", skip.get("transport"), skip.get("reason"));
        }
        out.println();
        out.printf(Locale.ROOT, "GB/s: two instances of the transport in this process, the initiator %s the other's buffer, BATCH blocks (one descriptor each) "
                + "per transfer, %d in flight, polled (yielding while transfers end, else parked until the transport's wake-up, as an engine waits); "
                + "%d untimed pass(es), then the best of %d timed; total / (first post to last completion), destination checked after each. "
                + "p50/p99: per transfer.%n", passes.op() == TransferOp.READ ? "READs" : "WRITEs", window, passes.warmup(), passes.iterations());
        out.println("x memcpy: against memcpy_stream.c, one thread copying the same total in the same blocks, best of 5.");
        out.printf(Locale.ROOT, "probe GB/s: ucx_probe.c, two forked processes calling UCP directly, one ucp_put_nbx per block over the same total, "
                + "one ucp_ep_flush_nbx; one untimed pass, then the best of %d timed; total / (first put to flush done), destination checked.%n",
                UcxProbeBaseline.TIMED_PASSES);
        out.printf(Locale.ROOT, "  For nixl: nixl_probe.c, two agents in one process calling libnixl_capi directly, one request naming every block "
                + "(merging off), posted once per pass; best of %d timed passes. With one request per block (nixl_probe.c --request-per-block), the same "
                + "probe makes, posts and releases one request per block in turn, as the transport posts: the gap between the two probes is NIXL's "
                + "own cost per request.%n", NixlProbeBaseline.TIMED_PASSES);
        out.printf(Locale.ROOT, "x tcp: the tcp and ucx rows against tcp_stream.c, two forked processes sending the same total in the same blocks over one TCP "
                + "connection on 127.0.0.1 (default socket buffers, TCP_NODELAY); best of %d timed passes; the wire tcp, and ucx with UCX_TLS=tcp, should fill.%n",
                TcpStreamBaseline.TIMED_PASSES);
        out.println("  Memory: a transport that allocates memory it moves faster (ucx) is measured on memory from its allocate(), and the probe "
                + "on UCX-allocated memory too; other transports on this process's memory. Same UCX_* environment on both sides; the transport "
                + "also asks UCX for peer error handling, wake-ups and keepalives, the probe does not.");
    }

    /** With --integrity: each host row's figure with block digests, and what they cost. */
    private static void printIntegrity(PrintWriter out, List<Map<String, Object>> rows)
    {
        boolean header = false;
        for (Map<String, Object> row : rows) {
            if (row.get("crc32cGbPerSecond") == null) {
                continue;
            }
            if (!header) {
                out.println("integrity=crc32c (CRC32C of each block before post and after done, on the stream's thread; alternated, best of each):");
                out.printf(Locale.ROOT, "  %-16s %10s %9s %11s %13s %7s%n", "TRANSPORT", "BLOCK", "GB/s", "crc32c GB/s", "crc32c p50 us", "cost %");
                header = true;
            }
            out.printf(Locale.ROOT, "  %-16s %10s %9s %11s %13.1f %7.1f%n", row.get("transport"), Sizes.format((Long) row.get("blockBytes")),
                    readable(row.get("gbPerSecond")), readable(row.get("crc32cGbPerSecond")), (Double) row.get("crc32cP50Micros"),
                    (Double) row.get("crc32cCostPercent"));
        }
        if (header) {
            out.println();
        }
    }

    /** One line per baseline: its figures, or why there are none and which columns stay empty. */
    static void printBaseline(PrintWriter out, String measuredLabel, String name, BaselineResult result, String emptyColumns)
    {
        if (result.available()) {
            out.print(measuredLabel + ":");
            result.gigabytesPerSecond().forEach((size, gbps) -> out.printf(Locale.ROOT, " %s %.2f GB/s;", Sizes.format(size), gbps));
            out.println();
        }
        else {
            out.println(name + ": not measured, " + result.reason() + " (" + emptyColumns + " left empty)");
        }
    }

    /** Two decimals, or two significant digits below 0.1, so that small ratios stay readable. */
    static String readable(Object value)
    {
        if (value == null) {
            return "";
        }
        double number = (Double) value;
        return number >= 0.1 || !Double.isFinite(number) ? String.format(Locale.ROOT, "%.2f", number)
                : new BigDecimal(number).round(new MathContext(2)).toPlainString();
    }

    private static Map<String, Object> skip(String transport, String reason)
    {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("transport", transport);
        row.put("reason", reason);
        return row;
    }

    static double round(double value)
    {
        return Math.round(value * 1000) / 1000.0;
    }

    /** Four significant digits: a slow transport's 0.0009 x memcpy must not read as 0. */
    static double significant(double value)
    {
        return Double.isFinite(value) ? new BigDecimal(value).round(new MathContext(4)).doubleValue() : value;
    }

    /** @return a size as the options take it back: {@code 4KiB}, {@code 3000}. */
    private static String written(long bytes)
    {
        String formatted = Sizes.format(bytes);
        return formatted.endsWith(" B") ? Long.toString(bytes) : formatted.replace(" ", "");
    }

    private void check(boolean condition, String format, Object... args)
    {
        InputChecks.check(spec, condition, format, args);
    }
}
