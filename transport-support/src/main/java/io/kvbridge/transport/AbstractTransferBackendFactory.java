package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.util.Map;

/**
 * The part of {@link TransferBackendFactory} that is the same for every transport built on the
 * toolkit: the name, the SPI version, the priority, the options check and the refusal to create
 * where the probe failed. A transport adds its probe and {@code create}.
 *
 * <p>{@link #spiVersion()} reports the version of the api this toolkit was built with: the toolkit
 * ships with the api it was built against, so a plugin built on it reports that version as it
 * would by returning {@link Spi#VERSION} itself.
 */
public abstract class AbstractTransferBackendFactory implements TransferBackendFactory
{
    private final String name;
    private final int priority;

    /**
     * Creates the common part.
     *
     * @param name the transport's name, as {@link TransferBackendFactory#name()} requires it.
     * @param priority the preference among available transports when none is named; {@code local} uses 0.
     */
    protected AbstractTransferBackendFactory(String name, int priority)
    {
        this.name = requireNonNull(name, "name is null");
        this.priority = priority;
    }

    @Override
    public final String name()
    {
        return name;
    }

    @Override
    public final int spiVersion()
    {
        return Spi.VERSION;
    }

    @Override
    public final int priority()
    {
        return priority;
    }

    /**
     * Reads the options through {@link #readOptions} when the transport can, opening nothing.
     *
     * @param config transport options.
     * @return true when {@link #readOptions} checked them; false when the transport does not check before {@code create}.
     */
    @Override
    public final boolean checkOptions(Map<String, String> config)
    {
        return readOptions(config);
    }

    /**
     * Reads the options as {@code create} does, without native work, sockets or a probe. The default
     * reads nothing, for a transport that cannot check its options that cheaply.
     *
     * @param config transport options.
     * @return true when the options were read and are valid; false when this transport does not check them.
     * @throws KvBridgeException {@code CONFIG_INVALID} naming every bad key and value.
     */
    protected boolean readOptions(Map<String, String> config)
    {
        return false;
    }

    /**
     * Refuses to create an instance where the probe found the transport cannot run.
     *
     * @param availability the probe's result.
     * @throws KvBridgeException {@code BACKEND_UNAVAILABLE} naming the transport and every reason.
     */
    protected final void requireAvailable(Availability availability)
    {
        if (!availability.available()) {
            throw new KvBridgeException(ErrorCode.BACKEND_UNAVAILABLE, "the " + name + " transport cannot run here: " + String.join("; ", availability.reasons()));
        }
    }

    @Override
    public String toString()
    {
        return getClass().getSimpleName() + "[" + name + "]";
    }
}
