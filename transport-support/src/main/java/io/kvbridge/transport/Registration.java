package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.memory.Allocation;

/**
 * One registered allocation. Transports extend it with their native handles (a UCX memory handle,
 * a packed key). It turns dead when deregistered or when its transport closes; prepared lists that
 * lie in it become unusable at that moment.
 *
 * <p>Threads: any; liveness is volatile and turns false once, under the {@link Registrations} lock.
 */
public class Registration
{
    private final Allocation allocation;
    private volatile boolean live = true;

    /**
     * Creates a live registration.
     *
     * @param allocation the registered memory.
     */
    public Registration(Allocation allocation)
    {
        this.allocation = requireNonNull(allocation, "allocation is null");
    }

    /** {@return the registered memory} */
    public final Allocation allocation()
    {
        return allocation;
    }

    /** {@return false once deregistered or closed} */
    public final boolean live()
    {
        return live;
    }

    final void retire()
    {
        live = false;
    }
}
