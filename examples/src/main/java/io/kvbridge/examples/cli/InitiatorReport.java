package io.kvbridge.examples.cli;

import io.kvbridge.core.config.Sizes;
import io.kvbridge.examples.bench.BaselineResult;
import io.kvbridge.examples.bench.BenchInitiator;
import io.kvbridge.examples.bench.ControlSecurity;
import io.kvbridge.examples.bench.TransportBench;
import io.kvbridge.examples.bench.UcxProbeBaseline;
import io.kvbridge.spi.transfer.TransferOp;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a two-host bench initiator measured, as a table or as {@code --json}.
 *
 * @param transport the transport both sides ran.
 * @param batch descriptors per post.
 * @param common the bench command's values.
 * @param target the target's control address.
 * @param agent this side's transport agent.
 * @param control how the control connection was protected.
 * @param memory this side's buffer: {@code device N}, {@code transport} or {@code process}.
 * @param targetMemory the target's buffer: {@code device N} or {@code host}.
 * @param driver the driver that moved device memory ({@code fake} for kvbridge's test fake), or null.
 * @param rows the figures, per block size and operation.
 * @param memcpy the memcpy baseline, or why there is none.
 * @param tcp the TCP stream baseline, or why there is none.
 * @param probe the UCX C probe between the two hosts (gets next to READ, puts next to WRITE), or why there is none.
 */
record InitiatorReport(String transport, int batch, BenchRoles.Common common, String target, String agent, ControlSecurity control, String memory,
        String targetMemory, String driver, List<BenchInitiator.Row> rows, BaselineResult memcpy, BaselineResult tcp,
        UcxProbeBaseline.TwoHosts probe)
{
    /** {@return the report as the {@code --json} document} */
    Map<String, Object> document()
    {
        Map<String, Object> document = new LinkedHashMap<>();
        document.put("role", "initiator");
        document.put("transport", transport);
        document.put("target", target);
        document.put("agent", agent);
        document.put("totalBytes", common.totalBytes());
        document.put("window", common.window());
        document.put("batch", batch);
        document.put("blockSizes", common.blockSizes());
        document.put("transportOptions", common.transportOptions());
        document.put("memory", memory);
        document.put("targetMemory", targetMemory);
        document.put("driver", driver);
        Map<String, Object> connection = new LinkedHashMap<>();
        connection.put("tls", control.tls());
        connection.put("protocol", control.protocol());
        connection.put("cipherSuite", control.cipherSuite());
        connection.put("handshakeMillis", control.tls() ? BenchReport.round(control.handshakeMillis()) : null);
        connection.put("targetCertificate", control.peerCertificate());
        connection.put("clientCertificate", control.localCertificate());
        connection.put("authenticated", control.authenticated());
        document.put("control", connection);
        List<Map<String, Object>> measured = new ArrayList<>();
        for (BenchInitiator.Row row : rows) {
            Double base = memcpy.gigabytesPerSecond().get(row.blockBytes());
            Double stream = tcp.gigabytesPerSecond().get(row.blockBytes());
            Double probed = probe.of(row.op()).gigabytesPerSecond().get(row.blockBytes());
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("op", row.op().name());
            entry.put("blockBytes", row.blockBytes());
            entry.put("batch", row.batch());
            entry.put("transfers", row.transfers());
            entry.put("memory", memory);
            entry.put("targetMemory", targetMemory);
            entry.put("gbPerSecond", BenchReport.significant(row.gigabytesPerSecond()));
            entry.put("prepareMicros", BenchReport.round(row.prepareMicros()));
            entry.put("postP50Micros", BenchReport.round(row.postP50Micros()));
            entry.put("postP99Micros", BenchReport.round(row.postP99Micros()));
            entry.put("transferP50Micros", BenchReport.round(row.transferP50Micros()));
            entry.put("transferP99Micros", BenchReport.round(row.transferP99Micros()));
            entry.put("ratioToMemcpy", base == null ? null : BenchReport.significant(row.gigabytesPerSecond() / base));
            entry.put("probeGbPerSecond", probed);
            entry.put("ratioToProbe", probed == null ? null : BenchReport.significant(row.gigabytesPerSecond() / probed));
            entry.put("tcpGbPerSecond", stream);
            entry.put("ratioToTcp", stream == null ? null : BenchReport.significant(row.gigabytesPerSecond() / stream));
            measured.add(entry);
        }
        document.put("rows", measured);
        document.put("baseline", BenchReport.baselineJson(memcpy));
        Map<String, Object> stream = BenchReport.baselineJson(tcp);
        stream.put("name", "tcp_stream");
        stream.put("figure", "best of 5 timed passes, one TCP connection from this host to the target's, default socket buffers, TCP_NODELAY");
        document.put("tcpStream", stream);
        document.put("probe", probeJson());
        return document;
    }

    /**
     * Prints the report as a table with its baselines and what each column means.
     *
     * @param out where it goes.
     */
    void print(PrintWriter out)
    {
        out.printf(Locale.ROOT, "%s between two processes, this initiator and the target at %s: READ and WRITE of %s per block size, %d descriptor%s per post, "
                + "%d in flight%n", transport, target, Sizes.format(common.totalBytes()), batch, batch == 1 ? "" : "s", common.window());
        out.printf(Locale.ROOT, "memory: %s here, %s on the target%s%n", memory.startsWith("device ") ? memory : "host (" + memory + ")",
                targetMemory, driver == null ? "" : driver.equals("fake")
                        ? "; driver: kvbridge's test fake of the CUDA driver, which copies with memmove on a thread: these figures say nothing about a GPU"
                        : "; driver: " + driver);
        out.printf(Locale.ROOT, "control connection: %s%n%n", control.describe());
        out.printf(Locale.ROOT, "%-6s %10s %9s %11s %9s %9s %10s %10s %9s %11s %8s %7s%n", "OP", "BLOCK", "GB/s", "prepare us", "post p50", "post p99",
                "xfer p50", "xfer p99", "x memcpy", "probe GB/s", "x probe", "x tcp");
        for (BenchInitiator.Row row : rows) {
            Double base = memcpy.gigabytesPerSecond().get(row.blockBytes());
            Double stream = tcp.gigabytesPerSecond().get(row.blockBytes());
            Double probed = probe.of(row.op()).gigabytesPerSecond().get(row.blockBytes());
            out.printf(Locale.ROOT, "%-6s %10s %9s %11.1f %9.2f %9.2f %10.1f %10.1f %9s %11s %8s %7s%n", row.op(), Sizes.format(row.blockBytes()),
                    BenchReport.readable(row.gigabytesPerSecond()), row.prepareMicros(), row.postP50Micros(), row.postP99Micros(), row.transferP50Micros(),
                    row.transferP99Micros(), base == null ? "" : BenchReport.readable(row.gigabytesPerSecond() / base), BenchReport.readable(probed),
                    probed == null ? "" : BenchReport.readable(row.gigabytesPerSecond() / probed),
                    stream == null ? "" : BenchReport.readable(row.gigabytesPerSecond() / stream));
        }
        out.println();
        BenchReport.printBaseline(out, "memcpy baseline (single thread, this host, same run)", "memcpy baseline", memcpy, "x memcpy column");
        BenchReport.printBaseline(out, "TCP stream baseline (C, one connection from this host to the target's, same run)", "TCP stream baseline", tcp,
                "x tcp column");
        printProbe(out);
        out.println();
        out.printf(Locale.ROOT, "GB/s: total / (first post to last completion) of the fastest of %d timed passes after one untimed; every pass checked "
                + "(READ: the target fills a pattern of the pass, this side checks; WRITE: this side fills one, the target checks).%n", TransportBench.TIMED_PASSES);
        out.println("prepare us: building both descriptor lists and prepareLocal + prepareRemote, once per block size; post p50/p99: one post() call; "
                + "xfer p50/p99: post() to the completion seen by this side's poller (fastest pass).");
        out.printf(Locale.ROOT, "probe GB/s: ucx_probe.c, UCP called directly from C, one process on each host: ucp_get_nbx (READ rows) or ucp_put_nbx "
                + "(WRITE rows) per block, %d block%s then a flush per transfer, %d in flight, same total; best of %d timed passes.%n", batch,
                batch == 1 ? "" : "s", common.window(), UcxProbeBaseline.TIMED_PASSES);
    }

    /** The probe's figures per operation in one line, or why there are none in one line. */
    private void printProbe(PrintWriter out)
    {
        String label = "UCX probe baseline (C, this host to the target's, same run, " + UcxProbeBaseline.transports() + ")";
        if (!probe.available()) {
            out.println("UCX probe baseline: not measured, " + probe.reason() + " (probe columns left empty)");
            return;
        }
        StringBuilder line = new StringBuilder(label).append(':');
        for (TransferOp op : List.of(TransferOp.READ, TransferOp.WRITE)) {
            probe.of(op).gigabytesPerSecond().forEach((size, gbps) -> line.append(String.format(Locale.ROOT, " %s %s %.2f GB/s;",
                    op == TransferOp.READ ? "get" : "put", Sizes.format(size), gbps)));
        }
        out.println(line);
    }

    private Map<String, Object> probeJson()
    {
        Map<String, Object> document = new LinkedHashMap<>();
        document.put("name", "ucx_probe");
        document.put("transport", UcxProbeBaseline.TRANSPORT);
        document.put("available", probe.available());
        document.put("reason", probe.available() ? null : probe.reason());
        List<Map<String, Object>> figures = new ArrayList<>();
        for (TransferOp op : List.of(TransferOp.READ, TransferOp.WRITE)) {
            probe.of(op).gigabytesPerSecond().forEach((size, gbps) -> {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("op", op.name());
                row.put("call", op == TransferOp.READ ? "ucp_get_nbx" : "ucp_put_nbx");
                row.put("blockBytes", size);
                row.put("gbPerSecond", gbps);
                figures.add(row);
            });
        }
        document.put("rows", figures);
        document.put("memory", memory.equals("transport") ? "ucx (UCP_MEM_MAP_ALLOCATE)" : "own (allocated by the probe, registered with UCX)");
        document.put("ucxTls", System.getenv("UCX_TLS"));
        document.put("window", common.window());
        document.put("batch", batch);
        document.put("timedPasses", UcxProbeBaseline.TIMED_PASSES);
        document.put("figure", "best timed pass; one process on each host, a flush per transfer of batch blocks, window transfers in flight");
        return document;
    }
}
