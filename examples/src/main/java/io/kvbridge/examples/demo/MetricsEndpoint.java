package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Serves the engines' Micrometer meters at {@code /metrics} on the loopback interface, in the
 * Prometheus text format or, for a scraper that asks for it ({@code Accept:
 * application/openmetrics-text}), in OpenMetrics. Each engine is built with a Prometheus registry of
 * its own ({@link #registry}, tagged {@code engine=<name>}), which it records into from its first
 * meter; a scrape merges them so that every metric family appears once. Handing the registry to the
 * bridge's builder, rather than adding it to the bridge's composite later, keeps Micrometer from
 * warning that a registry joined a composite that already had meters.
 *
 * <p>The port is bound at once, so that it can be printed, but answered only once every expected
 * engine is built: a scrape that arrives earlier waits in the socket's backlog, so the first
 * answer already holds every engine's meters (each bridge registers all of its meters when it is
 * built) instead of an empty body that would read as "no metrics".
 */
public final class MetricsEndpoint implements AutoCloseable
{
    /** The Prometheus text format's content type. */
    static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
    /** OpenMetrics' content type. */
    static final String OPENMETRICS_TEXT = "application/openmetrics-text; version=1.0.0; charset=utf-8";

    private final HttpServer server;
    private final int engines;
    private final List<PrometheusMeterRegistry> registries = new CopyOnWriteArrayList<>();
    private int built;
    private boolean serving;

    private MetricsEndpoint(HttpServer server, int engines)
    {
        this.server = server;
        this.engines = engines;
    }

    /**
     * Binds 127.0.0.1 and serves once the expected engines are attached.
     *
     * @param port the TCP port; 0 picks a free one (see {@link #port()}).
     * @param engines how many engines will be {@link #built} before the first scrape is answered.
     * @return the endpoint.
     */
    public static MetricsEndpoint start(int port, int engines)
    {
        KvBridgeException.checkArgument(engines >= 1, "engines=%d is not positive", engines);
        KvBridgeException.checkArgument(port >= 0 && port <= 65_535, "--metrics-port=%d is outside [0, 65535]", port);
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID,
                    "--metrics-port=" + port + " cannot be bound on 127.0.0.1 (" + e.getMessage() + "); pick a free port or 0 for any", e);
        }
        MetricsEndpoint endpoint = new MetricsEndpoint(server, engines);
        server.createContext("/metrics", endpoint::handle);
        return endpoint;
    }

    /** @return the port it listens on. */
    public int port()
    {
        return server.getAddress().getPort();
    }

    /**
     * Returns a new registry for an engine's bridge to be built with ({@code KvBridge.Builder.meterRegistry}).
     *
     * @param name the engine's name, its meters' {@code engine} tag.
     * @return a Prometheus registry this endpoint scrapes and closes.
     */
    public MeterRegistry registry(String name)
    {
        requireNonNull(name, "name is null");
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        prometheus.config().commonTags("engine", name);
        registries.add(prometheus);
        return prometheus;
    }

    /** Counts one engine built with its {@link #registry}; the first scrape is answered once all expected are. */
    public synchronized void built()
    {
        built++;
        startServingOnce(built >= engines);
    }

    private synchronized void startServingOnce(boolean ready)
    {
        if (ready && !serving) {
            serving = true;
            server.start();
        }
    }

    /** @return the Prometheus text exposition of every attached registry, each metric family once with the samples of all engines. */
    public String scrape()
    {
        return scrape(PROMETHEUS_TEXT);
    }

    /**
     * Exposes every attached registry in one format, each metric family once with the samples of all engines.
     *
     * @param contentType {@link #PROMETHEUS_TEXT} or {@link #OPENMETRICS_TEXT}.
     * @return the exposition.
     */
    String scrape(String contentType)
    {
        boolean openMetrics = contentType.equals(OPENMETRICS_TEXT);
        Map<String, List<String>> headers = new LinkedHashMap<>();
        Map<String, List<String>> samples = new LinkedHashMap<>();
        for (PrometheusMeterRegistry engine : registries) {
            String family = null;
            for (String line : engine.scrape(contentType).split("\n")) {
                if (line.isBlank() || line.equals("# EOF")) {
                    continue;
                }
                // "# HELP name ...", "# TYPE name type", and in OpenMetrics "# UNIT name unit"
                if (line.startsWith("# ")) {
                    family = line.split(" ", 4)[2];
                    List<String> familyHeaders = headers.computeIfAbsent(family, key -> new ArrayList<>());
                    samples.computeIfAbsent(family, key -> new ArrayList<>());
                    if (!familyHeaders.contains(line) && familyHeaders.stream().noneMatch(known -> known.startsWith(line.substring(0, 7)))) {
                        familyHeaders.add(line);
                    }
                }
                else if (family != null) {
                    samples.get(family).add(line);
                }
            }
        }
        StringBuilder text = new StringBuilder();
        headers.forEach((family, lines) -> {
            lines.forEach(line -> text.append(line).append('\n'));
            samples.get(family).forEach(line -> text.append(line).append('\n'));
        });
        if (openMetrics) {
            text.append("# EOF\n");
        }
        return text.toString();
    }

    private void handle(HttpExchange exchange) throws IOException
    {
        try (exchange) {
            if (!exchange.getRequestMethod().equals("GET")) {
                exchange.sendResponseHeaders(405, -1);
                return;
            }
            // what Prometheus sends when it prefers OpenMetrics: application/openmetrics-text;version=1.0.0,...;q=0.5,...
            String accept = exchange.getRequestHeaders().getFirst("Accept");
            String contentType = accept != null && accept.contains("application/openmetrics-text") ? OPENMETRICS_TEXT : PROMETHEUS_TEXT;
            byte[] body = scrape(contentType).getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", contentType);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    @Override
    public void close()
    {
        // a scrape waiting for engines that never came is answered by the connection closing
        startServingOnce(true);
        server.stop(0);
        for (PrometheusMeterRegistry engine : registries) {
            engine.close();
        }
        registries.clear();
    }
}
