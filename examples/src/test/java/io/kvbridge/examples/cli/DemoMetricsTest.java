package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class DemoMetricsTest
{
    private static final Pattern URL = Pattern.compile("metrics: (http://127\\.0\\.0\\.1:\\d+/metrics)");

    @Test
    void demoServesBothEnginesMetricsInPrometheusFormatWhileItRuns() throws Exception
    {
        // a successful run warns about nothing, Micrometer's registries included
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        root.addAppender(logged);
        try {
            runsAndServes();
        }
        finally {
            root.detachAppender(logged);
        }
        List<String> warnings = logged.list.stream().filter(event -> event.getLevel().isGreaterOrEqual(Level.WARN))
                .map(event -> event.getLoggerName() + ": " + event.getFormattedMessage()).toList();
        assertEquals(List.of(), warnings);
    }

    private static void runsAndServes() throws Exception
    {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CompletableFuture<Integer> demo = CompletableFuture.supplyAsync(() -> KvBridgeCli.execute(new PrintWriter(out, true), new PrintWriter(err, true),
                "demo", "--json", "--requests", "20", "--max-tokens", "2048", "--idle-seconds", "5", "--metrics-port", "0"));
        String url = null;
        while (url == null && !demo.isDone()) {
            Matcher matcher = URL.matcher(err.toString());
            if (matcher.find()) {
                url = matcher.group(1);
            }
            else {
                Thread.sleep(20);
            }
        }
        assertTrue(url != null, err.toString());

        // scrape until the transfers show up: the demo keeps serving through its idle wait
        HttpClient client = HttpClient.newHttpClient();
        String body = "";
        while (!demo.isDone() && !body.matches("(?s).*kvbridge_transfer_bytes_count\\{engine=\"prefill\"[^}]*} [1-9].*")) {
            HttpResponse<String> response = client.send(HttpRequest.newBuilder(URI.create(url)).GET().build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, response.statusCode());
            assertTrue(response.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"), response.headers().toString());
            body = response.body();
            Thread.sleep(50);
        }
        assertTrue(body.contains("# TYPE kvbridge_transfer_time_seconds summary") || body.contains("# TYPE kvbridge_transfer_time_seconds histogram"), body);
        assertTrue(body.matches("(?s).*kvbridge_transfer_bytes_count\\{engine=\"prefill\"[^}]*} [1-9].*"), body);
        assertTrue(body.contains("engine=\"decode\""), body);
        assertEquals(body.lines().filter(line -> line.startsWith("# TYPE kvbridge_transfer_failed_total ")).count(), 1, body);
        assertEquals(0, demo.get(), err.toString() + out);
        // the audit's latency percentiles come from the decoder's timers, one request time per request
        assertTrue(out.toString().matches("(?s).*\"latency\"\\s*:\\s*\\{\\s*\"request\"\\s*:\\s*\\{\\s*\"count\"\\s*:\\s*20\\s*,\\s*\"p50Ms\"\\s*:\\s*[0-9.]+.*"),
                out.toString());
    }

    @Test
    void metricsPortOutsideTheRangeIsRefused()
    {
        CliRun run = CliRun.of("demo", "--metrics-port", "70000");
        assertEquals(2, run.exitCode(), run.out());
        assertTrue(run.err().contains("--metrics-port=70000 is outside [0, 65535]"), run.err());
    }
}
