package io.kvbridge.core.wire;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.engine.EngineBackendContext;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ConnectionKeysTest
{
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(UTF_8);

    @Test
    void engineWithoutSecretGivesNoKey()
    {
        assertTrue(ConnectionKeys.derive(new byte[0], "tcp").isEmpty());
        assertTrue(EngineBackendContext.of("a", "127.0.0.1", new byte[0], "tcp").connectionKey().isEmpty());
    }

    @Test
    void sameSecretAndTransportGiveSameKeyInEveryEngine()
    {
        byte[] first = ConnectionKeys.derive(SECRET, "cuda-ipc").orElseThrow();
        byte[] second = EngineBackendContext.of("other-agent", "0.0.0.0", SECRET.clone(), "cuda-ipc").connectionKey().orElseThrow();
        assertEquals(ConnectionKeys.KEY_BYTES, first.length);
        assertArrayEquals(first, second);
    }

    @Test
    void keysDifferPerTransportAndPerSecretAndRevealNoSecret()
    {
        byte[] cudaIpc = ConnectionKeys.derive(SECRET, "cuda-ipc").orElseThrow();
        byte[] tcp = ConnectionKeys.derive(SECRET, "tcp").orElseThrow();
        byte[] otherSecret = ConnectionKeys.derive("another secret of 32 bytes......".getBytes(UTF_8), "tcp").orElseThrow();
        assertFalse(Arrays.equals(cudaIpc, tcp));
        assertFalse(Arrays.equals(tcp, otherSecret));
        assertFalse(Arrays.equals(tcp, SECRET));
    }

    @Test
    void contextHandsOutCopies()
    {
        EngineBackendContext context = EngineBackendContext.of("a", "127.0.0.1", SECRET, "tcp");
        byte[] handedOut = context.connectionKey().orElseThrow();
        handedOut[0] ^= 1;
        assertFalse(Arrays.equals(handedOut, context.connectionKey().orElseThrow()));
    }
}
