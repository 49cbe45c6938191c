package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A peer's death is proven through its pidfd, never before it, and never by another process that gets its pid. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
final class PeerProcessesTest
{
    @Test
    void aWatchedProcessIsProvenExitedOnlyOnceItDied() throws Exception
    {
        Process child = new ProcessBuilder("sleep", "300").start();
        try (PeerProcesses processes = new PeerProcesses()) {
            processes.watch("writer", (int) child.pid());
            assertNull(processes.exited("writer"), "a running process was proven exited");
            assertNull(processes.exited("someone-else"), "an unwatched agent was proven exited");

            child.destroyForcibly();
            assertTrue(child.waitFor(10, TimeUnit.SECONDS));
            String proof = processes.exited("writer");
            assertEquals("process " + child.pid() + " of peer 'writer' exited (its pidfd polled readable)", proof);
        }
        finally {
            child.destroyForcibly();
        }
    }

    @Test
    void aPidThatIsGoneWhenWatchedIsProvenExitedAndAWatchIsReplacedByTheAgentsNextProcess() throws Exception
    {
        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        Process next = new ProcessBuilder("sleep", "300").start();
        try (PeerProcesses processes = new PeerProcesses()) {
            processes.watch("writer", (int) gone.pid());
            assertTrue(processes.exited("writer").contains("pidfd_open: ESRCH"), processes.exited("writer"));
            // the agent reconnected from another process: only that one's end proves anything now
            processes.watch("writer", (int) next.pid());
            assertNull(processes.exited("writer"));
            assertEquals(1, processes.size());
        }
        finally {
            next.destroyForcibly();
        }
    }
}
