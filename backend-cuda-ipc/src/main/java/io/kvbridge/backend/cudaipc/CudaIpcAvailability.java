package io.kvbridge.backend.cudaipc;

import java.util.Optional;

/**
 * Whether the {@code cuda-ipc} transport can run in this JVM with its default configuration, in
 * the manner of Netty's {@code Epoll.isAvailable()}; the kill switch
 * {@code -Dkvbridge.cuda-ipc.enabled=false} makes it "no" before the driver is loaded.
 */
public final class CudaIpcAvailability
{
    private CudaIpcAvailability()
    {
    }

    /** {@return true when the default factory would create an instance here} */
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
            CudaIpcProbe.Result result = CudaIpcProbe.run(allowFake());
            return result.availability().available() ? Optional.empty() : Optional.of(String.join("; ", result.availability().reasons()));
        }
        catch (RuntimeException | LinkageError e) {
            return Optional.of("probing the CUDA driver failed: " + e);
        }
    }

    /** @return whether {@code kvbridge.cuda-ipc.allow-fake} accepts kvbridge's test fake. */
    static boolean allowFake()
    {
        return Boolean.getBoolean(CudaIpcBackendFactory.ALLOW_FAKE_PROPERTY);
    }
}
