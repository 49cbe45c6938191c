package io.kvbridge.core.plugin;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.util.List;
import java.util.Map;

/**
 * A transport factory found on the class path, with the result of its one probe. The probe runs
 * when its result is first asked for, not at discovery: a probe may load a native library, and a
 * bridge that names its transport should load no other (two UCX builds under one soname, for
 * example, cannot both live in one process). Thread-safe.
 */
public final class DiscoveredTransport
{
    private final TransferBackendFactory factory;
    private final String source;
    private volatile Availability availability;

    /**
     * Describes a discovered factory; nothing is probed yet.
     *
     * @param factory the factory.
     * @param source where the factory class was loaded from.
     */
    public DiscoveredTransport(TransferBackendFactory factory, String source)
    {
        this.factory = requireNonNull(factory, "factory is null");
        this.source = requireNonNull(source, "source is null");
    }

    /** {@return the factory} */
    public TransferBackendFactory factory()
    {
        return factory;
    }

    /** {@return where the factory class was loaded from} */
    public String source()
    {
        return source;
    }

    /** {@return the transport name} */
    public String name()
    {
        return factory.name();
    }

    /**
     * Returns what the probe reported, probing on the first call only; a probe that throws is
     * reported as the reason the transport cannot run.
     *
     * @return the availability.
     */
    public Availability availability()
    {
        Availability known = availability;
        if (known == null) {
            synchronized (this) {
                known = availability;
                if (known == null) {
                    known = probe(factory);
                    availability = known;
                }
            }
        }
        return known;
    }

    /** {@return true once the probe has run} */
    public boolean probed()
    {
        return availability != null;
    }

    private static Availability probe(TransferBackendFactory factory)
    {
        try {
            return requireNonNull(factory.probe(), "probe() returned null");
        }
        catch (RuntimeException | LinkageError e) {
            // a probe must not throw; one that does is reported as the reason instead of stopping the caller
            return Availability.unavailable(List.of("probe of " + factory.getClass().getName() + " failed: " + e), Map.of());
        }
    }

    @Override
    public String toString()
    {
        return "DiscoveredTransport[" + name() + (probed() ? ", " + (availability.available() ? "available" : "unavailable") : ", not probed") + "]";
    }
}
