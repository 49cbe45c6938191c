package io.kvbridge.examples.cli;

import io.kvbridge.core.config.BridgeConfig;
import io.kvbridge.core.config.ConfigDocument;
import io.kvbridge.core.config.Configuration;
import io.kvbridge.core.plugin.DiscoveredTransport;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.json.internal.JsonFields;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code kvbridge config}: the bridge's configuration document. */
@Command(name = "config", mixinStandardHelpOptions = true, description = "Write or check a bridge's configuration document.",
        subcommands = {ConfigCommand.Init.class, ConfigCommand.Validate.class})
final class ConfigCommand implements Callable<Integer>
{
    @Spec
    private CommandSpec spec;

    /** No subcommand is a usage error, as at the top level: the usage goes where errors go. */
    @Override
    public Integer call()
    {
        spec.commandLine().usage(spec.commandLine().getErr());
        return KvBridgeCli.USAGE;
    }

    /**
     * {@code kvbridge config init}: a valid document to start from on stdout, what each key means on
     * stderr (JSON has no comments, and the reader refuses them), so that {@code config init > FILE}
     * writes a document {@code config validate} accepts.
     */
    @Command(name = "init", mixinStandardHelpOptions = true,
            description = {"Print a configuration document to start from, every key at its default, on stdout, and what each key",
                    "means on stderr: `kvbridge config init > kvbridge.json` writes the document alone."})
    static final class Init implements Callable<Integer>
    {
        /** The template: a valid document, kvbridge's keys at their defaults. */
        static final String TEMPLATE = """
                {
                  "kv_connector": "kvbridge",
                  "kv_role": "kv_both",
                  "engine_id": "engine-0",
                  "kv_load_failure_policy": "fail",
                  "kv_connector_extra_config": {
                    "transport": "auto",
                    "side_channel_host": "127.0.0.1",
                    "side_channel_port": 0,
                    "kv_lease_duration": "30s",
                    "transfer_timeout": "30s",
                    "push_registration_timeout": "60s",
                    "modes": ["push", "pull"]
                  }
                }""";

        /** What each key means, one line each, as the notes on stderr give them. */
        static final List<String> NOTES = List.of(
                "kv_role: kv_producer (prefill), kv_consumer (decode) or kv_both; a bridge refuses connectors of the other kind",
                "engine_id: the same on every rank of one engine, unique among engines",
                "kv_load_failure_policy: fail or recompute, reported with a decoder's failed requests",
                "transport: auto (the best that can run here), local, tcp, ucx, nixl or cuda-ipc; `kvbridge plugins` says which can run",
                "side_channel_host, side_channel_port: where this engine's side channel listens; port 0 picks a free one",
                "  beyond loopback add \"secret_file\": \"/path\" (at least 16 random bytes that other users cannot read),",
                "  the same on every engine, or TLS (docs/configuration.md); an engine serving beyond loopback without either refuses to start",
                "kv_lease_duration: how long a producer holds a finished request's blocks for its decoder",
                "transfer_timeout: deadline of one transfer; push_registration_timeout: how long a decoder's push registration waits",
                "modes: push, pull or both; the decoder picks per request",
                "every key, layouts, discovery and the KVBRIDGE_* variables that override them: docs/configuration.md",
                "check a document with: kvbridge config validate FILE");

        @Spec
        private CommandSpec spec;

        @Override
        public Integer call()
        {
            PrintWriter err = spec.commandLine().getErr();
            NOTES.forEach(note -> err.println("# " + note));
            err.flush();
            PrintWriter out = spec.commandLine().getOut();
            out.println(TEMPLATE);
            out.flush();
            return 0;
        }
    }

    /** {@code kvbridge config validate FILE}: every problem of a document at once. */
    @Command(name = "validate", mixinStandardHelpOptions = true,
            description = {"Read a configuration document as a bridge would, with the KVBRIDGE_* environment variables over it,",
                    "and print every problem at once, each transport's options as that transport reads them when it starts",
                    "(exit 0: valid, 1: invalid). A valid document is printed as the bridge reads it."})
    static final class Validate implements Callable<Integer>
    {
        @Spec
        private CommandSpec spec;

        @Parameters(paramLabel = "FILE", arity = "0..1", description = "The JSON document's file (or give --kv-transfer-config).")
        private Path file;

        @Option(names = "--kv-transfer-config", paramLabel = "JSON",
                description = "The document itself, as vLLM users pass --kv-transfer-config (instead of FILE).")
        private String inline;

        @Option(names = "--no-env", description = "Ignore the KVBRIDGE_* environment variables.")
        private boolean noEnvironment;

        @Override
        public Integer call()
        {
            PrintWriter out = spec.commandLine().getOut();
            Map<String, String> environment = noEnvironment ? Map.of() : System.getenv();
            if ((file == null) == (inline == null)) {
                throw new ParameterException(spec.commandLine(), "give the document as FILE or as --kv-transfer-config JSON, one of the two");
            }
            Configuration.Resolved resolved = Configuration.resolve(inline, file, environment);
            String name = file != null ? file.toString() : "--kv-transfer-config";
            List<String> problems = new ArrayList<>(resolved.problems());
            problems.addAll(plugins(resolved.config()));
            if (!problems.isEmpty()) {
                out.printf("%s: %d problem%s%n", name, problems.size(), problems.size() == 1 ? "" : "s");
                problems.forEach(problem -> out.println("  " + problem));
                out.flush();
                return 1;
            }
            out.println(name + ": valid" + (noEnvironment ? "" : " (with the KVBRIDGE_* environment)"));
            out.println(ConfigDocument.write(resolved.config()));
            out.flush();
            return 0;
        }

        /** Names of plugins that are not on the class path: the bridge would refuse them at build time. */
        private static List<String> plugins(BridgeConfig config)
        {
            PluginRegistry registry = PluginRegistry.discover(ConfigCommand.class.getClassLoader());
            List<String> problems = new ArrayList<>();
            if (config.transport() != null && !config.transport().equals("auto") && !registry.transports().containsKey(config.transport())) {
                problems.add("transport " + config.transport() + " is not on the class path" + JsonFields.suggestion(config.transport(),
                        registry.transports().keySet()));
            }
            for (String name : config.transportOptions().keySet()) {
                if (!registry.transports().containsKey(name)) {
                    problems.add("kv_connector_extra_config.transports." + name + " names no transport on the class path"
                            + JsonFields.suggestion(name, registry.transports().keySet()));
                }
            }
            // each transport's block as the transport reads it at start, the selected one's defaults included
            Map<String, Map<String, String>> blocks = new LinkedHashMap<>(config.transportOptions());
            if (config.transport() != null) {
                blocks.putIfAbsent(config.transport(), Map.of());
            }
            blocks.forEach((name, options) -> {
                DiscoveredTransport transport = registry.transports().get(name);
                if (transport != null) {
                    transportProblem(transport, options).ifPresent(problem -> problems.add("kv_connector_extra_config.transports." + name + ": " + problem));
                }
            });
            if (config.layout() != null && !registry.layouts().containsKey(config.layout())) {
                problems.add("layout " + config.layout() + " is not on the class path" + JsonFields.suggestion(config.layout(), registry.layouts().keySet()));
            }
            if (config.discovery() != null) {
                String scheme = DirectoryConfig.parse(config.discovery()).scheme();
                java.util.Set<String> schemes = registry.directories().keySet();
                if (!schemes.contains(scheme)) {
                    problems.add("discovery " + config.discovery() + " names scheme " + scheme + ", which no discovery plugin on the class path serves"
                            + " (schemes found: " + schemes + ")");
                }
            }
            return problems;
        }
    }

    /**
     * Asks a transport's factory to check options as it would read them at start, opening nothing.
     *
     * @param transport the transport.
     * @param options its options.
     * @return every bad key and value, in the transport's words, or empty when they are valid or the
     *     transport checks its options only when it starts ({@code checkOptions} not implemented).
     */
    static Optional<String> transportProblem(DiscoveredTransport transport, Map<String, String> options)
    {
        try {
            transport.factory().checkOptions(options);
            return Optional.empty();
        }
        catch (KvBridgeException e) {
            return Optional.of(e.getMessage().substring(e.code().id().length() + 2));
        }
    }
}
