package io.kvbridge.backend.nixl;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code close()} waits for NIXL's own shutdown no longer than {@code close-timeout-ms}: NIXL 1.4.0's
 * agent destruction was seen not to return, and the fake's {@code destroy_agent_stall} blocks the
 * same call for a while.
 */
@Timeout(60)
final class NixlCloseDeadlineTest
{
    @RegisterExtension
    final FakeLeakCheck leakCheck = new FakeLeakCheck(FakeNixl.HEAD);

    private final FakeNixl fake = FakeNixl.HEAD;

    @AfterEach
    void resetFaults()
    {
        fake.resetFaults();
    }

    private TransferBackend open(String closeTimeoutMillis)
    {
        Map<String, String> options = new HashMap<>(fake.options());
        options.put("close-timeout-ms", closeTimeoutMillis);
        String name = "closing-" + UUID.randomUUID();
        return fake.factory().create(options, () -> name);
    }

    @Test
    void aCloseWhoseAgentDestructionDoesNotReturnEndsByItsDeadlineNamingWhereItWaits() throws InterruptedException
    {
        TransferBackend backend = open("300");
        fake.failNth("destroy_agent_stall", 1, 3_000);
        long started = System.nanoTime();
        KvBridgeException late = assertCode(ErrorCode.DEADLINE_EXCEEDED, backend::close);
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(waitedMillis >= 300 && waitedMillis < 2_500, "close waited " + waitedMillis + " ms with close-timeout-ms=300 and a 3 s stall");
        String message = late.getMessage();
        assertTrue(message.contains("300 ms") && message.contains("destroying the agent") && message.contains("NixlAgent.destroy")
                && message.contains(backend.agentName()), message);
        assertCode(ErrorCode.CLOSED, backend::localMetadata);
        backend.close();
        // once NIXL returns, the owner finishes the shutdown it was in and stops: nothing stays behind
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (fake.stats().liveAgents() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(0, fake.stats().liveAgents(), "the agent is destroyed once the stalled call returns");
    }

    @Test
    void aCloseThatNixlAnswersInTimeIsNotCutShort()
    {
        TransferBackend backend = open("5000");
        fake.failNth("destroy_agent_stall", 1, 300);
        backend.close();
        assertEquals(0, fake.stats().liveAgents());
    }

    @Test
    void theCloseTimeoutIsChecked()
    {
        KvBridgeException refused = assertCode(ErrorCode.CONFIG_INVALID, () -> open("99"));
        assertTrue(refused.getMessage().contains("close-timeout-ms"), refused.getMessage());
    }
}
