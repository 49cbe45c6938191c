package io.kvbridge.core.config;

import io.kvbridge.api.FailurePolicy;
import io.kvbridge.api.TransferMode;
import io.kvbridge.json.internal.JsonFields;
import io.kvbridge.json.internal.JsonReader;
import io.kvbridge.json.internal.JsonWriter;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The configuration document: one JSON object shaped like vLLM's {@code --kv-transfer-config}, so
 * that a vLLM user recognises it. The top level carries vLLM's own keys; everything kvbridge adds is
 * under {@code kv_connector_extra_config}, as vLLM keeps connector-specific keys:
 *
 * <pre>{@code
 * {
 *   "kv_connector": "kvbridge",
 *   "kv_role": "kv_producer",
 *   "engine_id": "prefill-0",
 *   "kv_load_failure_policy": "fail",
 *   "kv_connector_extra_config": {
 *     "transport": "ucx",
 *     "transports": {"ucx": {"max-in-flight": 64}},
 *     "agent_name": "prefill-0-host-a",
 *     "side_channel_host": "0.0.0.0",
 *     "side_channel_port": 5600,
 *     "advertised_host": "10.0.0.5",
 *     "secret_file": "/etc/kvbridge/secret",
 *     "kv_lease_duration": "30s",
 *     "transfer_timeout": "30s",
 *     "push_registration_timeout": "60s",
 *     "modes": ["push", "pull"],
 *     "layout": "hma",
 *     "layout_options": {},
 *     "discovery": "etcd://10.0.0.1:2379,10.0.0.2:2379",
 *     "discovery_lease_ttl": "10s",
 *     "side_channel_allow_unauthenticated": false
 *   }
 * }
 * }</pre>
 *
 * <p>Durations are text ({@code 500ms}, {@code 30s}, {@code PT30S}) or, as vLLM writes
 * {@code kv_lease_duration}, whole seconds. Option values are strings, integers or booleans,
 * handed to the plugin as text. Unknown keys are refused with the nearest valid name; a key of vLLM's
 * own (as its users write them for its NIXL connector) that kvbridge does not use is ignored, as vLLM
 * ignores other connectors' keys, and named in one INFO line. Reading reports every problem of the
 * document at once.
 */
public final class ConfigDocument
{
    private static final Logger LOG = LoggerFactory.getLogger(ConfigDocument.class);
    /** The longest document read: a configuration is a few hundred bytes; a megabyte is a mistake. */
    public static final int MAX_CHARS = 1 << 20;

    private static final JsonReader READER = JsonReader.of(ErrorCode.CONFIG_INVALID, MAX_CHARS, 8, 10_000);
    private static final String EXTRA = "kv_connector_extra_config";
    private static final List<String> TOP = List.of("kv_connector", "kv_role", "engine_id", "kv_load_failure_policy", EXTRA);
    private static final List<String> EXTRA_KEYS = List.of("transport", "transports", "agent_name", "side_channel_host", "side_channel_port",
            "advertised_host", "secret_file", "kv_lease_duration", "transfer_timeout", "push_registration_timeout", "modes", "layout", "layout_options",
            "discovery", "discovery_lease_ttl", "tls", "side_channel_allow_unauthenticated", "integrity");
    private static final List<String> TLS_KEYS = List.of("cert_file", "key_file", "keystore_file", "keystore_password_file", "ca_file",
            "truststore_file", "truststore_password_file", "client_auth", "verify_hostname");
    // vLLM's own keys of --kv-transfer-config and of NIXL's extra config that kvbridge has no use for
    private static final Set<String> VLLM_ONLY = Set.of("kv_buffer_device", "kv_buffer_size", "kv_rank", "kv_parallel_size", "kv_ip", "kv_port",
            "kv_connector_module_path", "enable_permute_local_kv", "backends", "num_threads", "engine_ttl", "enforce_handshake_compat",
            "bidirectional_kv_xfer", "kv_recompute_threshold", "decoder_kv_blocks_ttl", "background_receiver");

    private ConfigDocument()
    {
    }

    /**
     * Reads a document.
     *
     * @param what where the text came from, for the messages (a file name, or {@code configuration}).
     * @param text the document.
     * @param problems where every problem is added.
     * @return what the document gives; values with a problem are left out.
     */
    public static BridgeConfig read(String what, String text, List<String> problems)
    {
        Object document;
        try {
            document = READER.read(what, text);
        }
        catch (KvBridgeException e) {
            problems.add(ConfigValues.reason(e));
            return BridgeConfig.EMPTY;
        }
        if (!(document instanceof Map<?, ?> map)) {
            problems.add(what + " must hold a JSON object, not " + JsonFields.describe(document));
            return BridgeConfig.EMPTY;
        }
        @SuppressWarnings("unchecked")
        JsonFields top = new JsonFields("", (Map<String, ?>) map, problems);
        List<String> ignored = new ArrayList<>();
        refuseUnknown(top, TOP, ignored);
        top.string("kv_connector", ConfigValues.MAX_NAME).filter(name -> !name.equals("kvbridge"))
                .ifPresent(name -> top.problem("kv_connector", "=" + name + " is not kvbridge: this document configures another connector"
                        + " (to configure kvbridge with the rest of it, write \"kv_connector\": \"kvbridge\")"));
        BridgeConfig.Role role = top.string("kv_role", 32).map(text2 -> ConfigValues.role("kv_role", text2, problems)).orElse(null);
        String engineId = top.string("engine_id", 4096).map(id -> ConfigValues.name("engine_id", id, problems)).orElse(null);
        FailurePolicy policy = top.string("kv_load_failure_policy", 32)
                .map(name -> ConfigValues.failurePolicy("kv_load_failure_policy", name, problems)).orElse(null);
        JsonFields extra = top.object(EXTRA).orElse(new JsonFields(EXTRA, Map.of(), problems));
        refuseUnknown(extra, EXTRA_KEYS, ignored);
        if (!ignored.isEmpty()) {
            // vLLM ignores the keys of other connectors; so does kvbridge with vLLM's, and says which
            LOG.info("{}: ignoring vLLM settings kvbridge does not use: {}", what, String.join(", ", ignored));
        }
        Map<String, Map<String, String>> transports = new LinkedHashMap<>();
        extra.object("transports").ifPresent(all -> {
            for (String name : all.keys()) {
                all.object(name).ifPresent(options -> transports.put(name, options(options)));
            }
        });
        Set<TransferMode> modes = extra.array("modes", 2).map(list -> ConfigValues.modes(extra.pathOf("modes"), strings(extra, "modes", list), problems))
                .orElse(null);
        Integer port = extra.integer("side_channel_port", 0, 65_535).stream().mapToObj(value -> (int) value).findFirst().orElse(null);
        return new BridgeConfig(role, engineId, name(extra, "transport", problems), transports, name(extra, "agent_name", problems),
                name(extra, "side_channel_host", problems), port, name(extra, "advertised_host", problems), path(extra, "secret_file"), policy,
                duration(extra, "kv_lease_duration", problems), duration(extra, "transfer_timeout", problems),
                duration(extra, "push_registration_timeout", problems), modes, name(extra, "layout", problems),
                extra.object("layout_options").map(ConfigDocument::options).orElse(Map.of()),
                extra.string("discovery", 4096).map(location -> ConfigValues.discovery(extra.pathOf("discovery"), location, problems)).orElse(null),
                leaseTtl(extra, problems),
                extra.object("tls").map(tls -> tls(tls, problems)).orElse(TlsFiles.EMPTY),
                extra.bool("side_channel_allow_unauthenticated").orElse(null),
                extra.string("integrity", 32).map(setting -> ConfigValues.integrity(extra.pathOf("integrity"), setting, problems)).orElse(null));
    }

    private static TlsFiles tls(JsonFields tls, List<String> problems)
    {
        refuseUnknown(tls, TLS_KEYS, new ArrayList<>());
        return new TlsFiles(path(tls, "cert_file"), path(tls, "key_file"), path(tls, "keystore_file"), path(tls, "keystore_password_file"),
                path(tls, "ca_file"), path(tls, "truststore_file"), path(tls, "truststore_password_file"),
                tls.string("client_auth", 32).map(text -> TlsFiles.clientAuth(tls.pathOf("client_auth"), text, problems)).orElse(null),
                tls.bool("verify_hostname").orElse(null));
    }

    private static Map<String, Object> write(TlsFiles tls)
    {
        Map<String, Object> map = new LinkedHashMap<>();
        putIfGiven(map, "cert_file", tls.certFile());
        putIfGiven(map, "key_file", tls.keyFile());
        putIfGiven(map, "keystore_file", tls.keystoreFile());
        putIfGiven(map, "keystore_password_file", tls.keystorePasswordFile());
        putIfGiven(map, "ca_file", tls.caFile());
        putIfGiven(map, "truststore_file", tls.truststoreFile());
        putIfGiven(map, "truststore_password_file", tls.truststorePasswordFile());
        putIfGiven(map, "client_auth", tls.clientAuth() == null ? null : tls.clientAuth().name().toLowerCase(Locale.ROOT));
        putIfGiven(map, "verify_hostname", tls.verifyHostname());
        return map;
    }

    /**
     * Writes a configuration as a document {@link #read} reads back to an equal configuration.
     *
     * @param config the configuration.
     * @return the document, indented by two spaces.
     */
    public static String write(BridgeConfig config)
    {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("kv_connector", "kvbridge");
        putIfGiven(top, "kv_role", config.role() == null ? null : config.role().configName());
        putIfGiven(top, "engine_id", config.engineId());
        putIfGiven(top, "kv_load_failure_policy", config.failurePolicy() == null ? null : config.failurePolicy().name().toLowerCase(Locale.ROOT));
        Map<String, Object> extra = new LinkedHashMap<>();
        putIfGiven(extra, "transport", config.transport());
        if (!config.transportOptions().isEmpty()) {
            extra.put("transports", new LinkedHashMap<>(config.transportOptions()));
        }
        putIfGiven(extra, "agent_name", config.agentName());
        putIfGiven(extra, "side_channel_host", config.sideChannelHost());
        putIfGiven(extra, "side_channel_port", config.sideChannelPort());
        putIfGiven(extra, "advertised_host", config.advertisedHost());
        putIfGiven(extra, "secret_file", config.secretFile() == null ? null : config.secretFile().toString());
        putIfGiven(extra, "kv_lease_duration", config.leaseDuration() == null ? null : Durations.format(config.leaseDuration()));
        putIfGiven(extra, "transfer_timeout", config.transferTimeout() == null ? null : Durations.format(config.transferTimeout()));
        putIfGiven(extra, "push_registration_timeout", config.registrationTimeout() == null ? null : Durations.format(config.registrationTimeout()));
        putIfGiven(extra, "modes", config.modes() == null ? null : EnumSet.copyOf(config.modes()).stream().map(m -> m.name().toLowerCase(Locale.ROOT)).toList());
        putIfGiven(extra, "layout", config.layout());
        if (!config.layoutOptions().isEmpty()) {
            extra.put("layout_options", config.layoutOptions());
        }
        putIfGiven(extra, "discovery", config.discovery());
        putIfGiven(extra, "discovery_lease_ttl", config.discoveryLeaseTtl() == null ? null : Durations.format(config.discoveryLeaseTtl()));
        if (config.tls().given()) {
            extra.put("tls", write(config.tls()));
        }
        putIfGiven(extra, "side_channel_allow_unauthenticated", config.allowUnauthenticated());
        putIfGiven(extra, "integrity", config.integrity() == null ? null : config.integrity().configName());
        top.put(EXTRA, extra);
        return JsonWriter.write(top, false, 2);
    }

    private static void putIfGiven(Map<String, Object> map, String key, Object value)
    {
        if (value != null) {
            map.put(key, value instanceof Path path ? path.toString() : value);
        }
    }

    private static void refuseUnknown(JsonFields fields, List<String> known, List<String> ignored)
    {
        for (String key : fields.keys()) {
            if (VLLM_ONLY.contains(key)) {
                ignored.add(fields.pathOf(key));
            }
            else if (!known.contains(key)) {
                fields.problem(key, "is not a known key" + JsonFields.suggestion(key, known));
            }
        }
    }

    private static String name(JsonFields fields, String key, List<String> problems)
    {
        return fields.string(key, 4096).map(text -> ConfigValues.name(fields.pathOf(key), text, problems)).orElse(null);
    }

    private static Path path(JsonFields fields, String key)
    {
        Optional<String> text = fields.string(key, 4096);
        if (text.isEmpty()) {
            return null;
        }
        try {
            return Path.of(text.get());
        }
        catch (InvalidPathException e) {
            fields.problem(key, "=" + text.get() + " is not a path: " + e.getMessage());
            return null;
        }
    }

    private static Duration duration(JsonFields fields, String key, List<String> problems)
    {
        if (fields.raw(key) instanceof Long seconds) {
            // whole seconds, as vLLM writes kv_lease_duration
            if (seconds <= 0 || seconds > ConfigValues.MAX_DURATION.toSeconds()) {
                fields.problem(key, "=" + seconds + " seconds is outside [1, 86400] (or write a duration such as \"500ms\")");
                return null;
            }
            return Duration.ofSeconds(seconds);
        }
        if (fields.has(key) && !(fields.raw(key) instanceof String)) {
            fields.problem(key, "must be a duration such as \"30s\" or whole seconds, not " + JsonFields.describe(fields.raw(key)));
            return null;
        }
        return fields.string(key, 64).map(text -> ConfigValues.duration(fields.pathOf(key), text, problems)).orElse(null);
    }

    private static Duration leaseTtl(JsonFields fields, List<String> problems)
    {
        Duration ttl = duration(fields, "discovery_lease_ttl", problems);
        if (ttl != null && ttl.compareTo(Duration.ofSeconds(1)) < 0) {
            // etcd counts leases in whole seconds
            fields.problem("discovery_lease_ttl", "=" + Durations.format(ttl) + " is below 1s (write e.g. \"10s\")");
            return null;
        }
        return ttl;
    }

    private static Map<String, String> options(JsonFields options)
    {
        Map<String, String> values = new LinkedHashMap<>();
        for (String key : options.keys()) {
            switch (options.raw(key)) {
                case String text -> options.string(key, 4096).ifPresent(value -> values.put(key, value));
                case Long number -> values.put(key, number.toString());
                case Boolean bool -> values.put(key, bool.toString());
                case Object other -> options.problem(key, "must be a string, an integer or a boolean, not " + JsonFields.describe(other));
                case null -> options.problem(key, "must be a string, an integer or a boolean, not null");
            }
        }
        return values;
    }

    private static List<String> strings(JsonFields fields, String key, List<?> list)
    {
        List<String> names = new ArrayList<>();
        for (Object value : list) {
            if (value instanceof String name) {
                names.add(name);
            }
            else {
                fields.problem(key, "holds " + JsonFields.describe(value) + " (expected: strings)");
            }
        }
        return names;
    }
}
