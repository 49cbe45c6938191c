package io.kvbridge.core.wire;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvbridge.core.engine.EngineBackendContext;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ConnectionKeysTest
{
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(UTF_8);

    @Test
    void engineWithoutSecretGivesNoKey()
    {
        assertThat(ConnectionKeys.derive(new byte[0], "tcp")).isEmpty();
        assertThat(EngineBackendContext.of("a", "127.0.0.1", new byte[0], "tcp").connectionKey()).isEmpty();
    }

    @Test
    void sameSecretAndTransportGiveSameKeyInEveryEngine()
    {
        byte[] first = ConnectionKeys.derive(SECRET, "cuda-ipc").orElseThrow();
        byte[] second = EngineBackendContext.of("other-agent", "0.0.0.0", SECRET.clone(), "cuda-ipc").connectionKey().orElseThrow();
        assertThat(first).hasSize(ConnectionKeys.KEY_BYTES).isEqualTo(second);
    }

    @Test
    void keysDifferPerTransportAndPerSecretAndRevealNoSecret()
    {
        byte[] cudaIpc = ConnectionKeys.derive(SECRET, "cuda-ipc").orElseThrow();
        byte[] tcp = ConnectionKeys.derive(SECRET, "tcp").orElseThrow();
        byte[] otherSecret = ConnectionKeys.derive("another secret of 32 bytes......".getBytes(UTF_8), "tcp").orElseThrow();
        assertThat(cudaIpc).isNotEqualTo(tcp);
        assertThat(tcp).isNotEqualTo(otherSecret);
        assertThat(tcp).isNotEqualTo(SECRET);
    }

    @Test
    void contextHandsOutCopies()
    {
        EngineBackendContext context = EngineBackendContext.of("a", "127.0.0.1", SECRET, "tcp");
        byte[] handedOut = context.connectionKey().orElseThrow();
        handedOut[0] ^= 1;
        assertThat(context.connectionKey()).map(k -> k[0]).isNotEqualTo(Optional.of(handedOut[0]));
    }
}
