package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.KvBridge;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class MetricsEndpointTest
{
    @Test
    void aScrapeBeforeTheEnginesExistWaitsAndGetsEveryMeterNotAnEmptyBody()
            throws Exception
    {
        HttpClient client = HttpClient.newHttpClient();
        try (MetricsEndpoint endpoint = MetricsEndpoint.start(0, 2)) {
            URI uri = URI.create("http://127.0.0.1:" + endpoint.port() + "/metrics");
            CompletableFuture<HttpResponse<String>> early = client.sendAsync(HttpRequest.newBuilder(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
            try (KvBridge prefill = KvBridge.builder().transport("local").meterRegistry(endpoint.registry("prefill")).build();
                    KvBridge decode = KvBridge.builder().transport("local").meterRegistry(endpoint.registry("decode")).build()) {
                endpoint.built();
                Thread.sleep(200);
                assertFalse(early.isDone(), "not answered while an engine is missing");
                endpoint.built();
                HttpResponse<String> response = early.get(20, TimeUnit.SECONDS);
                assertEquals(200, response.statusCode());
                assertEquals(MetricsEndpoint.PROMETHEUS_TEXT, response.headers().firstValue("Content-Type").orElse(""));
                for (String engine : new String[] {"prefill", "decode"}) {
                    for (String meter : new String[] {"kvbridge_request_time_seconds_count", "kvbridge_handover_time_seconds_count",
                            "kvbridge_handshake_time_seconds_count", "kvbridge_transfers_in_flight", "kvbridge_leases_held", "kvbridge_peers",
                            "kvbridge_registrations", "kvbridge_transfer_time_seconds_count"}) {
                        assertTrue(response.body().matches("(?s).*\\n" + meter + "\\{[^}]*engine=\"" + engine + "\"[^}]*} 0(\\.0)?\\n.*"),
                                meter + " of " + engine + " in\n" + response.body());
                    }
                }

                HttpResponse<String> openMetrics = client.send(HttpRequest.newBuilder(uri)
                        .header("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5").GET().build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(MetricsEndpoint.OPENMETRICS_TEXT, openMetrics.headers().firstValue("Content-Type").orElse(""));
                String body = openMetrics.body();
                assertTrue(body.endsWith("\n# EOF\n"), body);
                assertEquals(1, body.lines().filter(line -> line.equals("# EOF")).count(), body);
                assertEquals(1, body.lines().filter(line -> line.startsWith("# TYPE kvbridge_transfer_failed ")).count(), body);
                assertTrue(body.contains("# TYPE kvbridge_transfer_failed counter"), body);
                assertEquals(1, body.lines().filter(line -> line.equals("# TYPE kvbridge_request_time_seconds histogram")).count(), body);
                assertTrue(body.matches("(?s).*kvbridge_transfer_failed_total\\{engine=\"decode\"[^}]*} 0\\.0\\n.*"), body);
            }
        }
    }
}
