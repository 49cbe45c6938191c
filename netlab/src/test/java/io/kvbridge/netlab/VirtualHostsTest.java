package io.kvbridge.netlab;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void aRelayedCableDelaysAndDropsFramesEachWayAndIsRestoredAfter(@TempDir Path dir) throws Exception
    {
        Namespaces.assumeFrameRelay();
        int delayMillis = 20;
        double lossPercent = 10;
        try (VirtualHosts hosts = VirtualHosts.create(PREFIX, List.of("server", "client"))) {
            VirtualHosts.Host server = hosts.host("server");
            VirtualHosts.Host client = hosts.host("client");
            Process probe = HostProbe.Launcher.serve(server, dir.resolve("server.log"));
            try {
                double direct = medianRoundTrip(client, server);

                hosts.impairByRelay(client, 0, 0);
                assertRelayed(hosts, client, true);
                double relayed = medianRoundTrip(client, server);
                double sent = stream(client, server, "send");
                double received = stream(client, server, "receive");
                RelayCounters streamed = hosts.relayCounters(client).orElseThrow();
                System.out.printf(Locale.ROOT, "relay delay 0 loss 0: round trip %.3f ms (direct %.3f ms); TCP %.1f MB/s to the bridge, %.1f MB/s to the host; "
                        + "mean frame %.0f / %.0f bytes; %s%n", relayed, direct, sent, received, streamed.toBridge().meanFrameBytes(),
                        streamed.toHost().meanFrameBytes(), streamed);
                // large segments pass whole (GSO): frames far above the 1,514 bytes of one Ethernet frame
                assertTrue(streamed.toBridge().meanFrameBytes() > 4 * 1514 && streamed.toHost().meanFrameBytes() > 4 * 1514, streamed.toString());
                assertTrue(sent > 20 && received > 20, "a stream through the relay moves at least 20 MB/s each way: " + sent + " and " + received + " MB/s");
                assertEquals(0, streamed.lost() + streamed.toBridge().overflowed() + streamed.toHost().overflowed(), streamed.toString());

                hosts.impairByRelay(client, delayMillis, 0);
                double delayed = medianRoundTrip(client, server);
                System.out.printf(Locale.ROOT, "relay delay %d ms loss 0: round trip %.3f ms, %.3f ms more than relayed without delay%n", delayMillis, delayed,
                        delayed - relayed);
                assertTrue(delayed - relayed >= 2 * delayMillis - 1 && delayed - relayed <= 2 * delayMillis + 10,
                        "a round trip gains twice the one-way delay of " + delayMillis + " ms: " + delayed + " ms against " + relayed + " ms");

                hosts.impairByRelay(client, 0, lossPercent);
                Matcher datagrams = HostProbe.Launcher.client(client, Pattern.compile("datagrams sent=(\\d+) echoed=(\\d+)"), "datagrams", server.address(), "4000");
                RelayCounters lossy = hosts.relayCounters(client).orElseThrow();
                double echoed = Double.parseDouble(datagrams.group(2)) / Double.parseDouble(datagrams.group(1));
                System.out.printf(Locale.ROOT, "relay loss %.0f %%: %s of %s datagrams echoed (%.3f); lost %d of %d frames to the bridge (%.3f), %d of %d to the host (%.3f)%n",
                        lossPercent, datagrams.group(2), datagrams.group(1), echoed, lossy.toBridge().lost(), lossy.toBridge().received(),
                        lossy.toBridge().lossShare(), lossy.toHost().lost(), lossy.toHost().received(), lossy.toHost().lossShare());
                // 4,000 frames each way: a share of 0.07 to 0.13 is about five standard deviations either side of 0.10
                assertTrue(Math.abs(lossy.toBridge().lossShare() - lossPercent / 100) < 0.03, lossy.toString());
                assertTrue(Math.abs(lossy.toHost().lossShare() - lossPercent / 100) < 0.03, lossy.toString());
                assertTrue(Math.abs(echoed - 0.81) < 0.06, "about 0.9 * 0.9 of the datagrams come back: " + echoed);

                hosts.clearImpairment(client);
                assertRelayed(hosts, client, false);
                assertEquals(Optional.empty(), hosts.relayCounters(client));
                double restored = medianRoundTrip(client, server);
                System.out.printf(Locale.ROOT, "restored: round trip %.3f ms%n", restored);
                assertTrue(restored < direct + delayMillis / 2.0, "the restored cable has no delay: " + restored + " ms against " + direct + " ms before");
            }
            finally {
                probe.destroyForcibly();
            }
        }
    }

    private static double medianRoundTrip(VirtualHosts.Host from, VirtualHosts.Host to)
    {
        return Double.parseDouble(HostProbe.Launcher.client(from, Pattern.compile("median_ms=([0-9.]+)"), "ping", to.address(), "100").group(1));
    }

    private static double stream(VirtualHosts.Host from, VirtualHosts.Host to, String direction)
    {
        return Double.parseDouble(HostProbe.Launcher.client(from, Pattern.compile("megabytes_per_second=([0-9.]+)"), direction, to.address(), "1500").group(1));
    }

    /** Whether the switch's end of the host's cable is replaced on the bridge by the relay's TAP, the relay running in the switch. */
    private static void assertRelayed(VirtualHosts hosts, VirtualHosts.Host host, boolean relayed)
    {
        String onBridge = HostCommands.run("ip", "-n", hosts.switchNamespace(), "-o", "link", "show", "master", "br0");
        String tap = "tap" + host.switchPort().substring("port".length());
        assertEquals(!relayed, onBridge.contains(" " + host.switchPort() + "@"), onBridge);
        assertEquals(relayed, onBridge.contains(" " + tap + ":"), onBridge);
        assertEquals(relayed, !HostCommands.run("ip", "netns", "pids", hosts.switchNamespace()).isBlank(), "a relay runs in the switch only while relayed");
        if (!relayed) {
            assertFalse(HostCommands.run("ip", "-n", hosts.switchNamespace(), "-o", "link", "show").contains(" " + tap + ":"), "the TAP is gone");
        }
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
        Path deadRelay = Files.createTempDirectory("kvbridge-relay-" + gone.pid() + "-");
        Files.writeString(deadRelay.resolve("frame_relay"), "a binary a killed run compiled");
        try {
            assertEquals(List.of(dead), VirtualHosts.removeLeftovers(PREFIX));
            assertFalse(Files.exists(deadRelay), "the relay binary of a dead run is removed too");
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
