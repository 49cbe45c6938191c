package io.kvbridge.examples.cli;

import io.kvbridge.core.config.Sizes;
import io.kvbridge.examples.bench.BaselineResult;
import io.kvbridge.examples.bench.CudaD2dBaseline;
import io.kvbridge.examples.bench.NixlProbeBaseline;
import io.kvbridge.examples.bench.TcpStreamBaseline;
import io.kvbridge.examples.bench.UcxProbeBaseline;
import io.kvbridge.spi.transfer.TransferOp;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@code kvbridge bench} reports once it measured: the text table with its baselines and legend,
 * the JSON documents of the baselines, and the rounding both use. {@link BenchCommand} measures;
 * {@link InitiatorReport} reports the two-process bench with the same helpers.
 */
final class BenchReport
{
    private BenchReport()
    {
    }

    /** The device rows' baseline, issue costs and which driver they came from. */
    static final class DeviceFigures
    {
        BaselineResult baseline = BaselineResult.unavailable("no transport that allocates device memory is available here");
        final List<Map<String, Object>> issueCosts = new ArrayList<>();
        String driver;
    }

    static Map<String, Object> deviceBaselineJson(DeviceFigures device)
    {
        Map<String, Object> document = baselineJson(device.baseline);
        document.put("name", "cuda_d2d_peak");
        document.put("transport", CudaD2dBaseline.TRANSPORT);
        document.put("driver", device.driver);
        document.put("figure", "best of 5 timed passes, wall clock from the first copy queued to the last event reached");
        return document;
    }

    static void printDevice(PrintWriter out, DeviceFigures device)
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

    static Map<String, Object> nixlProbeJson(BaselineResult probe, boolean requestPerBlock)
    {
        Map<String, Object> document = baselineJson(probe);
        document.put("name", "nixl_probe");
        document.put("transport", NixlProbeBaseline.TRANSPORT);
        document.put("figure", "best of " + NixlProbeBaseline.TIMED_PASSES + " timed passes, " + (requestPerBlock
                ? "one request made, posted and released per block, in turn" : "one unmerged request of every block per pass"));
        return document;
    }

    static Map<String, Object> tcpStreamJson(BaselineResult tcpStream)
    {
        Map<String, Object> document = baselineJson(tcpStream);
        document.put("name", "tcp_stream");
        document.put("transports", TcpStreamBaseline.TRANSPORTS);
        document.put("figure", "best of " + TcpStreamBaseline.TIMED_PASSES + " timed passes, one TCP connection on 127.0.0.1, default socket buffers, TCP_NODELAY");
        return document;
    }

    static Map<String, Object> probeJson(BaselineResult probe, boolean probeMemory)
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

    /** The one-process bench's table, its baselines, what was skipped and how each column was measured. */
    static void printTable(PrintWriter out, BenchPasses passes, int window, long totalBytes, List<Map<String, Object>> rows, BaselineResult baseline,
            BaselineResult probe, BaselineResult nixlProbe, BaselineResult nixlPerBlock, BaselineResult tcpStream, List<Map<String, Object>> skipped)
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
    static void printIntegrity(PrintWriter out, List<Map<String, Object>> rows)
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

    static Map<String, Object> skip(String transport, String reason)
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
}
