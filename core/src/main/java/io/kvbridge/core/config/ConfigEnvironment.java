package io.kvbridge.core.config;

import io.kvbridge.json.internal.JsonFields;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The {@code KVBRIDGE_*} environment variables, each the counterpart of one key of the
 * configuration document, for the values that differ per host or deployment. An unknown
 * {@code KVBRIDGE_} variable is refused with the nearest valid name, since a mistyped variable
 * would otherwise be ignored in silence; {@code KVBRIDGE_JAVA_OPTS}, which the {@code kvbridge}
 * launcher reads, is not this class's.
 */
public final class ConfigEnvironment
{
    /** The variable naming the configuration file, when the embedder names none. */
    public static final String CONFIG_FILE = "KVBRIDGE_CONFIG_FILE";
    /** The variable holding the configuration document itself, as vLLM users pass {@code --kv-transfer-config}. */
    public static final String KV_TRANSFER_CONFIG = "KVBRIDGE_KV_TRANSFER_CONFIG";

    /** Each variable with the key of the document it stands for, in the order the docs list them. */
    public static final Map<String, String> VARIABLES = orderedMap(
            CONFIG_FILE, "(the configuration file)",
            KV_TRANSFER_CONFIG, "(the configuration document itself, JSON as vLLM's --kv-transfer-config; not with KVBRIDGE_CONFIG_FILE)",
            "KVBRIDGE_ROLE", "kv_role",
            "KVBRIDGE_ENGINE_ID", "engine_id",
            "KVBRIDGE_TRANSPORT", "kv_connector_extra_config.transport",
            "KVBRIDGE_AGENT_NAME", "kv_connector_extra_config.agent_name",
            "KVBRIDGE_SIDE_CHANNEL_HOST", "kv_connector_extra_config.side_channel_host",
            "KVBRIDGE_SIDE_CHANNEL_PORT", "kv_connector_extra_config.side_channel_port",
            "KVBRIDGE_SIDE_CHANNEL_ALLOW_UNAUTHENTICATED", "kv_connector_extra_config.side_channel_allow_unauthenticated (true, false)",
            "KVBRIDGE_ADVERTISED_HOST", "kv_connector_extra_config.advertised_host",
            "KVBRIDGE_SECRET_FILE", "kv_connector_extra_config.secret_file",
            "KVBRIDGE_FAILURE_POLICY", "kv_load_failure_policy",
            "KVBRIDGE_LEASE", "kv_connector_extra_config.kv_lease_duration",
            "KVBRIDGE_TRANSFER_TIMEOUT", "kv_connector_extra_config.transfer_timeout",
            "KVBRIDGE_MODES", "kv_connector_extra_config.modes (comma-separated)",
            "KVBRIDGE_LAYOUT", "kv_connector_extra_config.layout",
            "KVBRIDGE_INTEGRITY", "kv_connector_extra_config.integrity (off, crc32c)",
            "KVBRIDGE_DISCOVERY", "kv_connector_extra_config.discovery",
            "KVBRIDGE_TLS_CERT_FILE", "kv_connector_extra_config.tls.cert_file",
            "KVBRIDGE_TLS_KEY_FILE", "kv_connector_extra_config.tls.key_file",
            "KVBRIDGE_TLS_KEYSTORE_FILE", "kv_connector_extra_config.tls.keystore_file",
            "KVBRIDGE_TLS_KEYSTORE_PASSWORD_FILE", "kv_connector_extra_config.tls.keystore_password_file",
            "KVBRIDGE_TLS_CA_FILE", "kv_connector_extra_config.tls.ca_file",
            "KVBRIDGE_TLS_TRUSTSTORE_FILE", "kv_connector_extra_config.tls.truststore_file",
            "KVBRIDGE_TLS_TRUSTSTORE_PASSWORD_FILE", "kv_connector_extra_config.tls.truststore_password_file",
            "KVBRIDGE_TLS_CLIENT_AUTH", "kv_connector_extra_config.tls.client_auth (none, want, require)",
            "KVBRIDGE_TLS_VERIFY_HOSTNAME", "kv_connector_extra_config.tls.verify_hostname (true, false)");

    private static final Set<String> NOT_OURS = Set.of("KVBRIDGE_JAVA_OPTS");

    private ConfigEnvironment()
    {
    }

    /**
     * Reads the variables.
     *
     * @param environment the process environment, or a map standing for it.
     * @param problems where every problem is added.
     * @return what the variables give.
     */
    public static BridgeConfig read(Map<String, String> environment, List<String> problems)
    {
        for (String name : new TreeSet<>(environment.keySet())) {
            if (name.startsWith("KVBRIDGE_") && !VARIABLES.containsKey(name) && !NOT_OURS.contains(name)) {
                problems.add("unknown environment variable " + name + JsonFields.suggestion(name, VARIABLES.keySet()));
            }
        }
        Env env = new Env(environment, problems);
        return new BridgeConfig(
                env.get("KVBRIDGE_ROLE", ConfigValues::role),
                env.get("KVBRIDGE_ENGINE_ID", ConfigValues::name),
                env.get("KVBRIDGE_TRANSPORT", ConfigValues::name),
                Map.of(),
                env.get("KVBRIDGE_AGENT_NAME", ConfigValues::name),
                env.get("KVBRIDGE_SIDE_CHANNEL_HOST", ConfigValues::name),
                env.get("KVBRIDGE_SIDE_CHANNEL_PORT", (where, text, sink) -> {
                    try {
                        return ConfigValues.port(where, Long.parseLong(text), sink);
                    }
                    catch (NumberFormatException e) {
                        sink.add(where + "=" + text + " is not a port number");
                        return null;
                    }
                }),
                env.get("KVBRIDGE_ADVERTISED_HOST", ConfigValues::name),
                env.get("KVBRIDGE_SECRET_FILE", ConfigEnvironment::path),
                env.get("KVBRIDGE_FAILURE_POLICY", ConfigValues::failurePolicy),
                env.get("KVBRIDGE_LEASE", ConfigValues::duration),
                env.get("KVBRIDGE_TRANSFER_TIMEOUT", ConfigValues::duration),
                null,
                env.get("KVBRIDGE_MODES", (where, text, sink) -> ConfigValues.modes(where,
                        Arrays.stream(text.split(",", -1)).map(String::strip).filter(mode -> !mode.isEmpty()).toList(), sink)),
                env.get("KVBRIDGE_LAYOUT", ConfigValues::name),
                Map.of(),
                env.get("KVBRIDGE_DISCOVERY", ConfigValues::discovery),
                null,
                new TlsFiles(env.get("KVBRIDGE_TLS_CERT_FILE", ConfigEnvironment::path), env.get("KVBRIDGE_TLS_KEY_FILE", ConfigEnvironment::path),
                        env.get("KVBRIDGE_TLS_KEYSTORE_FILE", ConfigEnvironment::path),
                        env.get("KVBRIDGE_TLS_KEYSTORE_PASSWORD_FILE", ConfigEnvironment::path), env.get("KVBRIDGE_TLS_CA_FILE", ConfigEnvironment::path),
                        env.get("KVBRIDGE_TLS_TRUSTSTORE_FILE", ConfigEnvironment::path),
                        env.get("KVBRIDGE_TLS_TRUSTSTORE_PASSWORD_FILE", ConfigEnvironment::path),
                        env.get("KVBRIDGE_TLS_CLIENT_AUTH", TlsFiles::clientAuth), env.get("KVBRIDGE_TLS_VERIFY_HOSTNAME", TlsFiles::bool)),
                env.get("KVBRIDGE_SIDE_CHANNEL_ALLOW_UNAUTHENTICATED", TlsFiles::bool),
                env.get("KVBRIDGE_INTEGRITY", ConfigValues::integrity));
    }

    /**
     * Returns the configuration file the environment names.
     *
     * @param environment the process environment.
     * @param problems where a problem is added.
     * @return the file, or null when none is named.
     */
    public static Path configFile(Map<String, String> environment, List<String> problems)
    {
        String text = environment.get(CONFIG_FILE);
        return text == null || text.isEmpty() ? null : path(CONFIG_FILE, text, problems);
    }

    private static Path path(String where, String text, List<String> problems)
    {
        try {
            return Path.of(text);
        }
        catch (InvalidPathException e) {
            problems.add(where + "=" + text + " is not a path: " + e.getMessage());
            return null;
        }
    }

    private interface Parser<T>
    {
        T parse(String where, String text, List<String> problems);
    }

    private record Env(Map<String, String> environment, List<String> problems)
    {
        <T> T get(String name, Parser<T> parser)
        {
            String text = environment.get(name);
            // an empty variable is unset, as shells treat VAR= in most scripts
            return text == null || text.isEmpty() ? null : parser.parse(name, text.strip(), problems);
        }
    }

    private static Map<String, String> orderedMap(String... pairs)
    {
        LinkedHashMap<String, String> map = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            map.put(pairs[i], pairs[i + 1]);
        }
        return Collections.unmodifiableMap(map);
    }
}
