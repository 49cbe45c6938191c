package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
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
 * Serves the engines' Micrometer meters in Prometheus text format at {@code /metrics} on the
 * loopback interface. Each engine's registry gets a Prometheus registry of its own, tagged
 * {@code engine=<name>}; a scrape merges them so that every metric family appears once.
 */
public final class MetricsEndpoint implements AutoCloseable
{
    private record Attached(CompositeMeterRegistry engine, PrometheusMeterRegistry prometheus)
    {
    }

    private final HttpServer server;
    private final List<Attached> attached = new CopyOnWriteArrayList<>();

    private MetricsEndpoint(HttpServer server)
    {
        this.server = server;
    }

    /**
     * Starts serving on 127.0.0.1.
     *
     * @param port the TCP port; 0 picks a free one (see {@link #port()}).
     * @return the running endpoint.
     */
    public static MetricsEndpoint start(int port)
    {
        KvBridgeException.checkArgument(port >= 0 && port <= 65_535, "--metrics-port=%d is outside [0, 65535]", port);
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID,
                    "--metrics-port=" + port + " cannot be bound on 127.0.0.1 (" + e.getMessage() + "); pick a free port or 0 for any", e);
        }
        MetricsEndpoint endpoint = new MetricsEndpoint(server);
        server.createContext("/metrics", endpoint::handle);
        server.start();
        return endpoint;
    }

    /** @return the port it listens on. */
    public int port()
    {
        return server.getAddress().getPort();
    }

    /**
     * Exposes an engine's meters, past and future, tagged {@code engine=<name>}.
     *
     * @param name the engine's name.
     * @param registry the engine's registry, as {@code KvBridge.metricsRegistry(MeterRegistry.class)} returns it.
     */
    public void attach(String name, MeterRegistry registry)
    {
        requireNonNull(name, "name is null");
        if (!(registry instanceof CompositeMeterRegistry composite)) {
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "the engine's registry is a " + registry.getClass().getName()
                    + ", not a composite one, so a Prometheus registry cannot be added to it");
        }
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        prometheus.config().commonTags("engine", name);
        // a composite hands the meters it already has to a registry added later, so nothing is missed
        composite.add(prometheus);
        attached.add(new Attached(composite, prometheus));
    }

    /** Text exposition of every attached registry, each metric family once with the samples of all engines. */
    public String scrape()
    {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        Map<String, List<String>> samples = new LinkedHashMap<>();
        for (Attached engine : attached) {
            String family = null;
            for (String line : engine.prometheus().scrape().split("\n")) {
                if (line.isBlank()) {
                    continue;
                }
                if (line.startsWith("# HELP ") || line.startsWith("# TYPE ")) {
                    family = line.substring(7).split(" ", 2)[0];
                    List<String> familyHeaders = headers.computeIfAbsent(family, key -> new ArrayList<>());
                    samples.computeIfAbsent(family, key -> new ArrayList<>());
                    if (familyHeaders.size() < 2 && !familyHeaders.contains(line)) {
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
        return text.toString();
    }

    private void handle(HttpExchange exchange) throws IOException
    {
        try (exchange) {
            if (!exchange.getRequestMethod().equals("GET")) {
                exchange.sendResponseHeaders(405, -1);
                return;
            }
            byte[] body = scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    @Override
    public void close()
    {
        server.stop(0);
        for (Attached engine : attached) {
            engine.engine().remove(engine.prometheus());
            engine.prometheus().close();
        }
        attached.clear();
    }
}
