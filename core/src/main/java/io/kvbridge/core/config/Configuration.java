package io.kvbridge.core.config;

import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Resolves a bridge's configuration from its sources, lowest precedence first: the defaults, the
 * configuration document (the text or file the embedder gives, else the document
 * {@code KVBRIDGE_KV_TRANSFER_CONFIG} holds or the file {@code KVBRIDGE_CONFIG_FILE} names), the
 * {@code KVBRIDGE_*} environment; the embedder's explicit
 * builder calls override all of them (applied by the runtime). The environment overrides the file
 * because it is what differs per host and container while the file is shared; explicit calls win
 * because code that sets a value means it. Every problem of every source is collected, so that one
 * run names them all.
 */
public final class Configuration
{
    /** The shortest lease a connector accepts (its heartbeat period is a sixth of it). */
    private static final Duration MIN_LEASE = Duration.ofMillis(6);

    /**
     * What the sources resolve to.
     *
     * @param config the layered configuration, without defaults.
     * @param secret the side channel secret read from the configured file, or null when none is configured.
     * @param tls the side channel's TLS settings loaded from the configured files, or null when none are configured.
     * @param problems every problem found; the configuration is usable only when empty.
     */
    public record Resolved(BridgeConfig config, byte[] secret, List<String> problems, SideChannelTls tls)
    {
        /** Copies the problems. */
        public Resolved
        {
            problems = List.copyOf(problems);
        }

        /**
         * Throws when a problem was found.
         *
         * @return this, when none was.
         * @throws KvBridgeException {@code CONFIG_INVALID} listing every problem.
         */
        public Resolved orThrow()
        {
            if (!problems.isEmpty()) {
                throw new KvBridgeException(ErrorCode.CONFIG_INVALID, describe(problems));
            }
            return this;
        }
    }

    private Configuration()
    {
    }

    /**
     * Resolves the configuration.
     *
     * @param text the document the embedder passed as text, or null.
     * @param file the document's file the embedder named, or null.
     * @param environment the process environment, or a map standing for it.
     * @return the result, with every problem.
     */
    public static Resolved resolve(String text, Path file, Map<String, String> environment)
    {
        List<String> problems = new ArrayList<>();
        BridgeConfig document = BridgeConfig.EMPTY;
        String inline = text == null && file == null ? environment.get(ConfigEnvironment.KV_TRANSFER_CONFIG) : null;
        if (text != null) {
            document = ConfigDocument.read("configuration", text, problems);
        }
        else if (inline != null && !inline.isEmpty()) {
            document = ConfigDocument.read(ConfigEnvironment.KV_TRANSFER_CONFIG, inline, problems);
            if (ConfigEnvironment.configFile(environment, new ArrayList<>()) != null) {
                problems.add(ConfigEnvironment.KV_TRANSFER_CONFIG + " and " + ConfigEnvironment.CONFIG_FILE + " are both set; give the document one way");
            }
        }
        Path named = file != null || text != null || (inline != null && !inline.isEmpty()) ? file : ConfigEnvironment.configFile(environment, problems);
        if (named != null) {
            String where = file != null ? "configuration file " + named : ConfigEnvironment.CONFIG_FILE + "=" + named;
            String contents = readDocument(where, named, problems);
            if (contents != null) {
                document = document.overriddenBy(ConfigDocument.read(where, contents, problems));
            }
        }
        BridgeConfig fromEnvironment = ConfigEnvironment.read(environment, problems);
        BridgeConfig config = document.overriddenBy(fromEnvironment);
        if (config.leaseDuration() != null && config.leaseDuration().compareTo(MIN_LEASE) < 0) {
            problems.add("kv_lease_duration=" + Durations.format(config.leaseDuration()) + " is shorter than 6ms");
        }
        byte[] secret = null;
        if (config.secretFile() != null) {
            String where = fromEnvironment.secretFile() != null ? "KVBRIDGE_SECRET_FILE" : "kv_connector_extra_config.secret_file";
            secret = SecretFile.read(where, config.secretFile(), problems);
        }
        SideChannelTls tls = TlsLoader.load(config.tls(), problems);
        return new Resolved(config, secret, problems, tls);
    }

    /**
     * Describes problems as one message.
     *
     * @param problems the problems.
     * @return {@code "configuration is invalid (2 problems): a; b"}.
     */
    public static String describe(List<String> problems)
    {
        return "configuration is invalid (" + problems.size() + " problem" + (problems.size() == 1 ? "" : "s") + "): " + String.join("; ", problems);
    }

    private static String readDocument(String where, Path file, List<String> problems)
    {
        if (!Files.isRegularFile(file)) {
            problems.add(where + (Files.exists(file) ? " is not a regular file" : " does not exist"));
            return null;
        }
        try (InputStream in = Files.newInputStream(file)) {
            // at most four bytes a character: one byte more than that many is too long whatever it holds
            byte[] bytes = in.readNBytes(4 * ConfigDocument.MAX_CHARS + 1);
            if (bytes.length > 4 * ConfigDocument.MAX_CHARS) {
                problems.add(where + " is longer than " + Sizes.format(4L * ConfigDocument.MAX_CHARS) + "; a configuration is a few hundred bytes");
                return null;
            }
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        }
        catch (CharacterCodingException e) {
            problems.add(where + " is not UTF-8 text");
            return null;
        }
        catch (IOException | SecurityException e) {
            problems.add(where + " cannot be read: " + e.getMessage());
            return null;
        }
    }
}
