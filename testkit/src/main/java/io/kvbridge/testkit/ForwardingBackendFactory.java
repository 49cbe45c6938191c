package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.TransferBackendFactory;

/**
 * A factory that answers as another one does (name, version, probe, priority) and leaves
 * {@link #create} to the subclass, which wraps what the delegate creates: the base of factories
 * that record, count or break a real transport's instances.
 */
public abstract class ForwardingBackendFactory implements TransferBackendFactory
{
    /** The factory whose transports are wrapped. */
    protected final TransferBackendFactory delegate;

    /**
     * Wraps a factory.
     *
     * @param delegate creates the transports that move the bytes.
     */
    protected ForwardingBackendFactory(TransferBackendFactory delegate)
    {
        this.delegate = requireNonNull(delegate, "delegate is null");
    }

    @Override
    public String name()
    {
        return delegate.name();
    }

    @Override
    public int spiVersion()
    {
        return delegate.spiVersion();
    }

    @Override
    public Availability probe()
    {
        return delegate.probe();
    }

    @Override
    public int priority()
    {
        return delegate.priority();
    }
}
