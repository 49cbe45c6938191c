package io.kvbridge.core.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.transfer.TransferBackend;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What the {@code local} transport reports to health checks beyond the conformance suite's closed instance. */
final class LocalProblemTest
{
    @Test
    void aCopyThreadThatStoppedIsReportedByName()
            throws InterruptedException
    {
        String agent = "problem-" + System.nanoTime();
        TransferBackend transport = new LocalBackendFactory().create(Map.of("copy-threads", "2"), () -> agent);
        try {
            assertEquals(Optional.empty(), transport.problem());
            String name = "kvbridge-local-" + agent + "-copy-1";
            Thread copier = Thread.getAllStackTraces().keySet().stream().filter(thread -> thread.getName().equals(name)).findFirst().orElseThrow();
            // an interrupted copy thread ends: the parts of transfers queued on it would never be copied
            copier.interrupt();
            copier.join(10_000);

            String problem = transport.problem().orElseThrow();
            assertTrue(problem.startsWith("copy thread " + name + " of local transport '" + agent + "' has stopped (state=TERMINATED)"), problem);
        }
        finally {
            transport.close();
        }
        assertEquals(Optional.of("local transport '" + agent + "' is closed"), transport.problem());
    }
}
