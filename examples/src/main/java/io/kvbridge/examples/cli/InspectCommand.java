package io.kvbridge.examples.cli;

import io.kvbridge.core.config.SecretFile;
import io.kvbridge.core.config.TlsFiles;
import io.kvbridge.core.config.TlsLoader;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.tools.PeerInspector;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code kvbridge inspect HOST:PORT}: what a peer's side channel advertises, rank by rank. */
@Command(name = "inspect", mixinStandardHelpOptions = true, description = "Print the cache geometry a peer advertises on its side channel.")
final class InspectCommand implements Callable<Integer>
{
    private static final int MAX_RANKS = 4096;
    private static final Duration MIN_TIMEOUT = Duration.ofMillis(1);
    private static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

    @Spec
    private CommandSpec spec;

    @Parameters(index = "0", paramLabel = "HOST:PORT", description = "The peer's side-channel address.")
    private String address;

    @Option(names = "--pp", paramLabel = "N", defaultValue = "1", description = "Pipeline stages to fetch, ranks 0..N-1 (default: ${DEFAULT-VALUE}).")
    private int ppSize;

    @Option(names = "--tp", paramLabel = "N", defaultValue = "1", description = "Tensor-parallel ranks to fetch, 0..N-1 (default: ${DEFAULT-VALUE}).")
    private int tpSize;

    @Option(names = "--secret-file", paramLabel = "FILE",
            description = "File holding the side channel's shared secret, when it authenticates: checked and read as the configuration's secret_file "
                    + "(a regular file others may neither read nor write, 16 to 4096 bytes, one trailing line break removed).")
    private Path secretFile;

    @Option(names = "--tls-ca", paramLabel = "FILE",
            description = "PEM bundle of the CA that signed the peer's certificate: connects over TLS 1.3, as to a side channel configured with tls.")
    private Path tlsCa;

    @Option(names = "--tls-cert", paramLabel = "FILE", description = "PEM certificate chain to show a peer that requires client certificates.")
    private Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE", description = "PKCS#8 PEM private key of --tls-cert (chmod 600).")
    private Path tlsKey;

    @Option(names = "--tls-no-verify-hostname", description = "Accept a peer certificate that does not name HOST (still signed by --tls-ca).")
    private boolean tlsNoVerifyHostname;

    @Option(names = "--timeout", defaultValue = "5s", paramLabel = "DURATION",
            description = "Handshake deadline, at most 10m: 500ms, 5s, 2m or ISO-8601 (PT5S) (default: ${DEFAULT-VALUE}).")
    private Duration timeout;

    @Option(names = "--json", description = "Print one JSON list, one entry per rank.")
    private boolean json;

    @Override
    public Integer call()
    {
        InetSocketAddress peer = InputChecks.address(spec, "address", address, false);
        InputChecks.check(spec, ppSize >= 1 && tpSize >= 1 && (long) ppSize * tpSize <= MAX_RANKS, "--pp=%d x --tp=%d must be between 1 and %d ranks",
                ppSize, tpSize, MAX_RANKS);
        InputChecks.within(spec, "--timeout", timeout, MIN_TIMEOUT, MAX_TIMEOUT);
        byte[] secret = null;
        if (secretFile != null) {
            // the configuration's own checks: a secret others may read or write authenticates nothing
            List<String> problems = new ArrayList<>();
            secret = SecretFile.read("--secret-file", secretFile, problems);
            InputChecks.check(spec, secret != null, "%s; give the file the peer was started with", String.join("; ", problems));
        }
        SideChannelTls tls = null;
        if (tlsCa != null || tlsCert != null || tlsKey != null) {
            List<String> problems = new ArrayList<>();
            tls = TlsLoader.load(new TlsFiles(tlsCert, tlsKey, null, null, tlsCa, null, null, null, tlsNoVerifyHostname ? false : null), problems);
            InputChecks.check(spec, problems.isEmpty(), "TLS options refused: %s (tls.* here are --tls-cert, --tls-key and --tls-ca)",
                    String.join("; ", problems));
        }
        PrintWriter out = spec.commandLine().getOut();
        List<Map<String, Object>> all = new ArrayList<>();
        for (PeerInspector.RankReport rank : new PeerInspector(timeout, secret, tls).inspect(peer, ppSize, tpSize)) {
            if (json) {
                all.add(rank.data());
            }
            else {
                out.printf("%s rank %s (compatibility hash %s, %d metadata bytes)%n", peer, rank.rank(), rank.compatibilityHash(), rank.metadataBytes());
                out.println(rank.table());
            }
        }
        if (json) {
            out.println(Json.write(all));
        }
        return 0;
    }
}
