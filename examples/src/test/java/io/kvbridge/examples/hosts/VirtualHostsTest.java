package io.kvbridge.examples.hosts;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Namespaces, cables and faults of {@link VirtualHosts}, with a real etcd as the service one host reaches on another. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class VirtualHostsTest
{
    private static final String PREFIX = "kvbtest";

    @Test
    void hostsReachOneAnotherUntilTheirCableIsCutAndLeaveNothingBehind(@TempDir Path dir)
    {
        Namespaces.assumeNamespaces();
        Namespaces.assumeEtcd();
        List<String> namespaces;
        try (VirtualHosts hosts = VirtualHosts.create(PREFIX, List.of("server", "client"));
                HostEtcd etcd = HostEtcd.start(hosts.host("server"), dir)) {
            VirtualHosts.Host client = hosts.host("client");
            namespaces = hosts.hosts().stream().map(VirtualHosts.Host::namespace).toList();
            assertNotEquals(hosts.host("server").address(), client.address());
            assertTrue(hosts.exec(client, "ip", "-o", "-4", "addr", "show", "dev", VirtualHosts.INTERFACE).contains(client.address() + "/24"));
            assertTrue(hosts.exec(client, "ip", "-o", "link", "show", "lo").contains("UP"), "lo is up in every host");
            assertTrue(etcd.answersFrom(client), "the client reaches etcd on the server's address");

            hosts.cut(client);
            assertFalse(etcd.answersFrom(client), "a cut cable passes nothing");
            assertTrue(etcd.answersFrom(hosts.host("server")), "the server itself still serves");
            hosts.restore(client);
            // the first try may meet the neighbour entry the cut left failed ("No route to host")
            assertTrue(eventually(() -> etcd.answersFrom(client)), "a restored cable passes again");

            hosts.limitRate(client, 10);
            assertTrue(hosts.exec(client, "tc", "qdisc", "show", "dev", VirtualHosts.INTERFACE).contains("tbf"));
            assertTrue(etcd.answersFrom(client), "a rate limit slows, never cuts");
            hosts.clearImpairment(client);
            assertFalse(hosts.exec(client, "tc", "qdisc", "show", "dev", VirtualHosts.INTERFACE).contains("tbf"));
            assertTrue(listNamespaces().containsAll(namespaces));
        }
        assertTrue(listNamespaces().stream().noneMatch(namespaces::contains), "close removes every namespace: " + listNamespaces());
    }

    @Test
    void aFailedCommandNamesItsExitCodeAndStderr()
    {
        Namespaces.assumeNamespaces();
        HostCommandException e = assertThrows(HostCommandException.class, () -> HostCommands.run("ip", "netns", "exec", "kvbtest-no-such-namespace", "true"));
        assertTrue(e.exitCode() > 0, e.getMessage());
        assertTrue(e.getMessage().startsWith("'ip netns exec kvbtest-no-such-namespace true' exited with code " + e.exitCode() + ": "), e.getMessage());
        assertTrue(e.getMessage().contains("kvbtest-no-such-namespace"), "stderr names the namespace: " + e.getMessage());
    }

    @Test
    void aCommandPastItsDeadlineIsKilledAndNamed()
    {
        HostCommandException e = assertThrows(HostCommandException.class, () -> HostCommands.run(java.time.Duration.ofMillis(200), List.of("sleep", "5")));
        assertEquals(HostCommandException.NO_EXIT_CODE, e.exitCode());
        assertEquals("'sleep 5' failed: did not finish within 200 ms", e.getMessage());
    }

    @Test
    void leftoversOfADeadRunAreRemovedAndThoseOfALiveOneKept() throws Exception
    {
        Namespaces.assumeNamespaces();
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        String dead = PREFIX + "-" + gone.pid() + "-1-decode";
        String live = PREFIX + "-" + ProcessHandle.current().pid() + "-999-decode";
        HostCommands.run("ip", "netns", "add", dead);
        HostCommands.run("ip", "netns", "add", live);
        try {
            assertEquals(List.of(dead), VirtualHosts.removeLeftovers(PREFIX));
            assertEquals(List.of(), VirtualHosts.removeLeftovers(PREFIX), "a second call finds nothing");
            assertTrue(listNamespaces().contains(live));
            assertFalse(listNamespaces().contains(dead));
        }
        finally {
            HostCommands.run("ip", "netns", "delete", live);
        }
    }

    private static boolean eventually(java.util.function.BooleanSupplier condition)
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
        }
        return true;
    }

    private static List<String> listNamespaces()
    {
        return HostCommands.run("ip", "netns", "list").lines().map(line -> line.strip().split("\\s+")[0]).toList();
    }
}
