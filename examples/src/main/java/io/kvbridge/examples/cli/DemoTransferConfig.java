package io.kvbridge.examples.cli;

import io.kvbridge.api.Integrity;
import io.kvbridge.core.config.BridgeConfig;
import io.kvbridge.core.config.ConfigEnvironment;
import io.kvbridge.core.config.Configuration;
import io.kvbridge.core.config.TlsFiles;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Model.CommandSpec;

/**
 * A configuration document for {@code kvbridge demo}, given as {@code --kv-transfer-config} or in
 * {@code KVBRIDGE_KV_TRANSFER_CONFIG}, read as {@code config validate} and a bridge read it. The demo
 * runs both engines and sets their names, side channels and layout itself, so it honours only the
 * settings it has options for: the transport and its options, the lease, block digests and
 * discovery. Every other key is refused rather than silently dropped.
 *
 * @param source where the document came from, as refusals name it.
 * @param transport {@code kv_connector_extra_config.transport}, or null (also for {@code auto}, which leaves the demo's choice).
 * @param transportOptions options per transport.
 * @param leaseSeconds {@code kv_lease_duration} in seconds, or null.
 * @param integrity {@code integrity}, or null.
 * @param discovery {@code discovery}, or null.
 */
record DemoTransferConfig(String source, String transport, Map<String, Map<String, String>> transportOptions, Double leaseSeconds, Integrity integrity,
        String discovery)
{
    static final String OPTION = "--kv-transfer-config";

    /**
     * Reads the option's document, else the environment's, refusing a document with problems or with
     * settings the demo cannot honour.
     *
     * @param spec the demo command, refusals are reported for.
     * @param value the option's value: the JSON itself, {@code @FILE} or a file's path; null when not given.
     * @param environment the process environment.
     * @return the document's settings, empty when neither gives one.
     */
    static Optional<DemoTransferConfig> read(CommandSpec spec, String value, Map<String, String> environment)
    {
        Configuration.Resolved resolved;
        String source;
        if (value != null) {
            boolean inline = value.strip().startsWith("{");
            Path file = inline ? null : Path.of(value.startsWith("@") ? value.substring(1) : value);
            source = OPTION + (inline ? "" : "=" + value);
            // the option's document alone: the KVBRIDGE_* variables stay the bridges' own to read
            resolved = Configuration.resolve(inline ? value : null, file, Map.of());
        }
        else if (environment.containsKey(ConfigEnvironment.KV_TRANSFER_CONFIG)) {
            source = ConfigEnvironment.KV_TRANSFER_CONFIG;
            resolved = Configuration.resolve(null, null, Map.of(ConfigEnvironment.KV_TRANSFER_CONFIG, environment.get(ConfigEnvironment.KV_TRANSFER_CONFIG)));
        }
        else {
            return Optional.empty();
        }
        InputChecks.check(spec, resolved.problems().isEmpty(), "%s has %d problem(s): %s; check it with kvbridge config validate", source,
                resolved.problems().size(), String.join("; ", resolved.problems()));
        BridgeConfig config = resolved.config();
        List<String> unhonoured = new ArrayList<>();
        add(unhonoured, "kv_role", config.role());
        add(unhonoured, "engine_id", config.engineId());
        add(unhonoured, "kv_load_failure_policy", config.failurePolicy());
        add(unhonoured, "agent_name", config.agentName());
        add(unhonoured, "side_channel_host", config.sideChannelHost());
        add(unhonoured, "side_channel_port", config.sideChannelPort());
        add(unhonoured, "advertised_host", config.advertisedHost());
        add(unhonoured, "secret_file", config.secretFile());
        add(unhonoured, "transfer_timeout", config.transferTimeout());
        add(unhonoured, "push_registration_timeout", config.registrationTimeout());
        add(unhonoured, "modes", config.modes());
        add(unhonoured, "layout", config.layout());
        add(unhonoured, "layout_options", config.layoutOptions().isEmpty() ? null : config.layoutOptions());
        add(unhonoured, "discovery_lease_ttl", config.discoveryLeaseTtl());
        add(unhonoured, "tls", TlsFiles.EMPTY.equals(config.tls()) ? null : config.tls());
        add(unhonoured, "side_channel_allow_unauthenticated", config.allowUnauthenticated());
        InputChecks.check(spec, unhonoured.isEmpty(), "%s sets %s, which the demo sets itself for both its engines (use its options, e.g. --mode, "
                + "--layout); give only transport, transports, kv_lease_duration, integrity and discovery", source, String.join(", ", unhonoured));
        Double lease = config.leaseDuration() == null ? null : config.leaseDuration().toNanos() / 1e9;
        String transport = "auto".equals(config.transport()) ? null : config.transport();
        return Optional.of(new DemoTransferConfig(source, transport, config.transportOptions(), lease, config.integrity(), config.discovery()));
    }

    private static void add(List<String> names, String key, Object value)
    {
        if (value != null) {
            names.add(key);
        }
    }
}
