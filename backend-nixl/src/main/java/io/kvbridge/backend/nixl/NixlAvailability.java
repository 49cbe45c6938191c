package io.kvbridge.backend.nixl;

import io.kvbridge.transport.NativeLibrary;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Whether the {@code nixl} transport can run in this JVM with its default configuration, in the
 * manner of Netty's {@code Epoll.isAvailable()}: {@link #isAvailable()} and
 * {@link #unavailabilityCause()} give the answer the default factory's {@code probe()} gives, and
 * the kill switch {@code -Dkvbridge.nixl.enabled=false} makes it "no" before anything is located
 * or loaded.
 */
public final class NixlAvailability
{
    private NixlAvailability()
    {
    }

    /** {@return true when the default {@code nixl} factory would create an instance here} */
    public static boolean isAvailable()
    {
        return unavailabilityCause().isEmpty();
    }

    /**
     * Tells why the transport cannot run with its default configuration.
     *
     * @return every reason with its fix, or empty when it can run.
     */
    public static Optional<String> unavailabilityCause()
    {
        try {
            NixlProbe.Result result = NixlProbe.run(configuredLibrary(), allowFake());
            return result.availability().available() ? Optional.empty() : Optional.of(String.join("; ", result.availability().reasons()));
        }
        catch (RuntimeException | LinkageError e) {
            return Optional.of("probing NIXL failed: " + e);
        }
    }

    /**
     * The kill switch, checked before anything is located or loaded.
     *
     * @return why the transport is switched off, or empty.
     * @throws io.kvbridge.spi.KvBridgeException {@code CONFIG_INVALID} for a value other than true or false.
     */
    static Optional<String> switchedOff()
    {
        return NativeLibrary.disabled(NixlBackendFactory.NAME);
    }

    /** @return the {@code kvbridge.nixl.library} file or directory, or null to search. */
    static String configuredLibrary()
    {
        return NativeLibrary.configured(NixlBackendFactory.NAME).map(Path::toString).orElse(null);
    }

    /** @return whether {@code kvbridge.nixl.allow-fake} accepts kvbridge's test fake. */
    static boolean allowFake()
    {
        return Boolean.getBoolean(NixlBackendFactory.ALLOW_FAKE_PROPERTY);
    }
}
