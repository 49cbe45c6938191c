package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@code demo --hosts} refuses, in one line and before anything starts, what it cannot run. */
final class DemoHostsCommandTest
{
    @Test
    void optionsThatContradictHostsAreRefused()
    {
        CliRun discovery = CliRun.of("demo", "--hosts", "--discovery", "etcd://127.0.0.1:2379");
        assertEquals(2, discovery.exitCode());
        assertTrue(discovery.err().contains("--discovery cannot be combined with --hosts: the hosts run an etcd of their own"), discovery.err());
        CliRun local = CliRun.of("demo", "--hosts", "--backend", "local");
        assertEquals(2, local.exitCode());
        assertTrue(local.err().contains("--hosts needs a transport that reaches other processes, and 'local' cannot"), local.err());
        CliRun metrics = CliRun.of("demo", "--hosts", "--metrics-port", "0");
        assertEquals(2, metrics.exitCode());
        assertTrue(metrics.err().contains("--metrics-port cannot be combined with --processes (implied by --hosts)"), metrics.err());
        assertTrue(metrics.out().isEmpty(), metrics.out());
    }

    @Test
    void ucxBetweenHostsIsRefusedWithoutTheOptInAndTheHostsDefaultToTheTcpTransport()
    {
        CliRun ucx = CliRun.of("demo", "--hosts", "--backend", "ucx");
        assertEquals(2, ucx.exitCode(), ucx.err());
        // one line says why and how
        String first = ucx.err().lines().findFirst().orElse("");
        assertTrue(first.contains("--hosts --backend ucx runs UCX's tcp transport between the hosts, whose wire protocol writes wherever a put request "
                + "names") && first.contains("use --backend tcp (the default with --hosts), or add --allow-unchecked-tcp-lane"), ucx.err());
        assertTrue(ucx.out().isEmpty(), ucx.out());
        // without --backend the hosts run the tcp transport, which the opt-in does not apply to
        CliRun defaults = CliRun.of("demo", "--hosts", "--allow-unchecked-tcp-lane");
        assertEquals(2, defaults.exitCode(), defaults.err());
        assertTrue(defaults.err().contains("--allow-unchecked-tcp-lane is an option of --backend ucx and nixl, not of 'tcp'"), defaults.err());
    }

    @Test
    void aMissingEtcdIsRefusedNamingIt()
    {
        String before = System.getProperty("kvbridge.etcd.binary");
        System.setProperty("kvbridge.etcd.binary", "/nonexistent/etcd");
        try {
            CliRun run = CliRun.of("demo", "--hosts", "--backend", "ucx", "--allow-unchecked-tcp-lane");
            assertEquals(2, run.exitCode(), run.err());
            // ucx may be unavailable here, which is refused first; otherwise etcd is
            assertTrue(run.err().contains("--hosts cannot run here: no etcd binary at /nonexistent/etcd: install Debian's etcd-server package")
                    || run.err().contains("--backend=ucx is not available here"), run.err());
        }
        finally {
            if (before == null) {
                System.clearProperty("kvbridge.etcd.binary");
            }
            else {
                System.setProperty("kvbridge.etcd.binary", before);
            }
        }
    }
}
