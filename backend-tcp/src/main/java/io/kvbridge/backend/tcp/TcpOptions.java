package io.kvbridge.backend.tcp;

import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.transfer.BackendContext;
import java.util.Map;

/**
 * The {@code tcp} transport's options, checked once at {@code create()}.
 *
 * @param host the address the listener binds to.
 * @param port the listener's port; 0 for any free one.
 * @param advertiseHost the address peers are told to connect to.
 * @param connectTimeoutMillis how long {@code connect()} waits for the peer's answer.
 * @param transferTimeoutMillis a transfer still moving after this long fails; 0 for none.
 * @param closeTimeoutMillis how long a revoke waits for admitted accesses before cutting their peers off.
 * @param keepaliveSeconds idle seconds before TCP keepalive probes a silent peer; 0 for none.
 * @param idleSpinMicros how long the owner keeps polling (yielding the CPU between polls) after its last event before it sleeps.
 * @param maxInFlight transfers posted and not finished or not released at once.
 * @param socketBufferBytes send and receive buffer of each socket; 0 for the system's (autotuned).
 */
record TcpOptions(String host, int port, String advertiseHost, int connectTimeoutMillis, int transferTimeoutMillis, int closeTimeoutMillis,
        int keepaliveSeconds, int idleSpinMicros, int maxInFlight, int socketBufferBytes)
{
    static final String DEFAULT_HOST = "127.0.0.1";

    static TcpOptions parse(Map<String, String> config, BackendContext context)
    {
        PluginConfig options = new PluginConfig(TcpBackendFactory.NAME, config);
        String side = context.sideChannelHost().orElse(DEFAULT_HOST);
        String host = options.stringValue("host", side);
        int port = options.intValue("port", 0, 0, 65535);
        String advertise = options.stringValue("advertise-host", "");
        int connectTimeout = options.intValue("connect-timeout-ms", 10_000, 1, 600_000);
        int transferTimeout = options.intValue("transfer-timeout-ms", 0, 0, 3_600_000);
        int closeTimeout = options.intValue("close-timeout-ms", 2_000, 1, 600_000);
        int keepalive = options.intValue("keepalive-s", 5, 0, 3_600);
        int spin = options.intValue("idle-spin-us", 50, 0, 100_000);
        int maxInFlight = options.intValue("max-in-flight", 65536, 1, 1 << 24);
        int buffer = options.intValue("socket-buffer-bytes", 0, 0, 1 << 30);
        if (host.isBlank()) {
            options.problem("host is empty; give an address to listen on, e.g. 127.0.0.1 or 0.0.0.0");
        }
        options.finish();
        return new TcpOptions(host, port, advertise, connectTimeout, transferTimeout, closeTimeout, keepalive, spin, maxInFlight, buffer);
    }
}
