package io.kvbridge.examples.cli;

import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.wire.GeometryTable;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
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
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code kvbridge inspect HOST:PORT}: what a peer's side channel advertises, rank by rank. */
@Command(name = "inspect", mixinStandardHelpOptions = true, description = "Print the cache geometry a peer advertises on its side channel.")
final class InspectCommand implements Callable<Integer>
{
    @Spec
    private CommandSpec spec;

    @Parameters(index = "0", paramLabel = "HOST:PORT", description = "The peer's side-channel address.")
    private String address;

    @Option(names = "--pp", defaultValue = "1", description = "Pipeline stages to fetch, ranks 0..N-1 (default: ${DEFAULT-VALUE}).")
    private int ppSize;

    @Option(names = "--tp", defaultValue = "1", description = "Tensor-parallel ranks to fetch, 0..N-1 (default: ${DEFAULT-VALUE}).")
    private int tpSize;

    @Option(names = "--secret-file", description = "File holding the side channel's shared secret, when it authenticates.")
    private Path secretFile;

    @Option(names = "--timeout", defaultValue = "PT5S", description = "Handshake deadline, ISO-8601 (default: ${DEFAULT-VALUE}).")
    private Duration timeout;

    @Option(names = "--json", description = "Print one JSON list, one entry per rank.")
    private boolean json;

    @Override
    public Integer call()
    {
        InetSocketAddress peer = parseAddress();
        if (ppSize < 1 || tpSize < 1 || (long) ppSize * tpSize > 4096) {
            throw new ParameterException(spec.commandLine(), "--pp=" + ppSize + " x --tp=" + tpSize + " must be between 1 and 4096 ranks");
        }
        SideChannelSettings.Builder settings = SideChannelSettings.builder().handshakeTimeout(timeout)
                .readTimeout(timeout).connectTimeout(timeout);
        if (secretFile != null) {
            try {
                settings.secret(Files.readAllBytes(secretFile));
            }
            catch (IOException e) {
                throw new UncheckedIOException("cannot read --secret-file " + secretFile, e);
            }
        }
        List<RankKey> ranks = new ArrayList<>();
        for (int pp = 0; pp < ppSize; pp++) {
            for (int tp = 0; tp < tpSize; tp++) {
                ranks.add(new RankKey(pp, tp));
            }
        }
        SideChannelClient client = new SideChannelClient(settings.build(), SideChannelClock.system());
        PrintWriter out = spec.commandLine().getOut();
        List<Map<String, Object>> all = new ArrayList<>();
        for (SideChannelClient.Fetched fetched : client.fetch(peer, ranks)) {
            // decoded without a compatibility check: inspecting a peer needs no local model
            HandshakePayload payload = HandshakePayload.decode(fetched.payload(), WireLimits.DEFAULT);
            RankMetadata metadata = MetadataCodec.decode(payload.metadata(), WireLimits.DEFAULT);
            if (json) {
                all.add(GeometryTable.toData(metadata));
            }
            else {
                out.printf("%s rank %s (compatibility hash %s, %d metadata bytes)%n", peer, fetched.rank(), payload.compatibilityHash(),
                        payload.metadata().length);
                out.println(GeometryTable.render(metadata));
            }
        }
        if (json) {
            out.println(Json.write(all));
        }
        return 0;
    }

    private InetSocketAddress parseAddress()
    {
        int colon = address.lastIndexOf(':');
        try {
            int port = Integer.parseInt(address.substring(colon + 1));
            String host = address.substring(0, colon).replace("[", "").replace("]", "");
            if (colon <= 0 || port < 1 || port > 65535) {
                throw new NumberFormatException();
            }
            return new InetSocketAddress(host, port);
        }
        catch (NumberFormatException | StringIndexOutOfBoundsException e) {
            throw new ParameterException(spec.commandLine(), "address=" + address + " is not HOST:PORT (for example 127.0.0.1:5600)");
        }
    }
}
