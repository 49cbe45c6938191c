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
            description = "C compiler for the baselines written in C: memcpy, the UCX and NIXL probes, the TCP stream and device to device "
                    + "(with --role, this side's) (default: ${DEFAULT-VALUE}).")
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
        BenchReport.DeviceFigures device = new BenchReport.DeviceFigures();
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
                skipped.add(BenchReport.skip(plugin.name(), "unavailable: " + String.join("; ", plugin.reasons())));
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
                        row.put("gbPerSecond", BenchReport.significant(result.gigabytesPerSecond()));
                        row.put("p50Micros", BenchReport.round(result.p50Micros()));
                        row.put("p99Micros", BenchReport.round(result.p99Micros()));
                        row.put("ratioToMemcpy", memcpy == null ? null : BenchReport.significant(result.gigabytesPerSecond() / memcpy));
                        row.put("probeGbPerSecond", probed);
                        row.put("ratioToProbe", probed == null ? null : BenchReport.significant(result.gigabytesPerSecond() / probed));
                        if (ownPerBlock != null) {
                            Double perBlock = ownPerBlock.gigabytesPerSecond().get(size);
                            row.put("perBlockProbeGbPerSecond", perBlock);
                            row.put("ratioToPerBlockProbe", perBlock == null ? null : BenchReport.significant(result.gigabytesPerSecond() / perBlock));
                        }
                        row.put("tcpGbPerSecond", tcp);
                        row.put("ratioToTcp", tcp == null ? null : BenchReport.significant(result.gigabytesPerSecond() / tcp));
                        if (digested != null) {
                            row.put("crc32cGbPerSecond", BenchReport.significant(digested.gigabytesPerSecond()));
                            row.put("crc32cP50Micros", BenchReport.round(digested.p50Micros()));
                            row.put("crc32cCostPercent", BenchReport.round(100 * (1 - digested.gigabytesPerSecond() / result.gigabytesPerSecond())));
                        }
                        rows.add(row);
                        points.put(size, result.gigabytesPerSecond());
                    }
                }
            }
            catch (KvBridgeException e) {
                // a transport that fails must not report a figure; the others still run
                failed = true;
                skipped.add(BenchReport.skip(plugin.name(), "failed: " + e.getMessage()));
                rows.removeIf(row -> row.get("transport").equals(plugin.name()));
                continue;
            }
            // one line per batch where several are swept
            pointsPerBatch.forEach((batch, points) -> series.put(batches.size() > 1 ? plugin.name() + " batch " + batch : plugin.name(), points));
            boolean deviceMemory = plugin.capabilities().containsAll(List.of(Capability.DEVICE_MEMORY, Capability.TRANSPORT_ALLOCATION));
            if (deviceMemory && passes.op() != TransferOp.WRITE) {
                skipped.add(BenchReport.skip(plugin.name() + " device", "device rows are measured with --op WRITE only; the bench READs host memory"));
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
            document.put("baseline", BenchReport.baselineJson(baseline));
            document.put("probe", BenchReport.probeJson(probe, probeMemory));
            document.put("nixlProbe", BenchReport.nixlProbeJson(nixlProbe, false));
            document.put("nixlProbePerBlock", BenchReport.nixlProbeJson(nixlPerBlock, true));
            document.put("tcpStream", BenchReport.tcpStreamJson(tcpStream));
            document.put("deviceBaseline", BenchReport.deviceBaselineJson(device));
            document.put("issueCost", device.issueCosts);
            document.put("skipped", skipped);
            document.put("plot", plot == null ? null : plot.toString());
            out.println(Json.write(document));
        }
        else {
            BenchReport.printTable(out, passes, window, totalBytes, rows, baseline, probe, nixlProbe, nixlPerBlock, tcpStream, skipped);
            BenchReport.printDevice(out, device);
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
            Map<String, Map<Long, Double>> series, BenchReport.DeviceFigures device, PrintWriter progress)
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
                row.put("gbPerSecond", BenchReport.significant(result.gigabytesPerSecond()));
                row.put("p50Micros", BenchReport.round(result.p50Micros()));
                row.put("p99Micros", BenchReport.round(result.p99Micros()));
                // a host memcpy says nothing about device memory
                row.put("ratioToMemcpy", null);
                row.put("probeGbPerSecond", peak);
                row.put("ratioToProbe", peak == null ? null : BenchReport.significant(result.gigabytesPerSecond() / peak));
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
                    figure.put("postMicros", BenchReport.round(cost.postMicros()));
                    figure.put("doneMicros", BenchReport.round(cost.doneMicros()));
                    device.issueCosts.add(figure);
                }
            }
        }
        catch (KvBridgeException e) {
            skipped.add(BenchReport.skip(plugin.name() + " device", "failed: " + e.getMessage()));
            return false;
        }
        rows.addAll(measured);
        series.put(plugin.name() + " device", points);
        return true;
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
