package io.kvbridge.core;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.KvBridge;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.InstantSource;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * What the embedding engine hands the bridge in place of the defaults.
 *
 * @param clock the clocks every connector reads.
 * @param meterRegistry the engine's registry to record into; empty when the bridge owns one.
 */
record EmbedderServices(SideChannelClock clock, Optional<MeterRegistry> meterRegistry)
{
    EmbedderServices
    {
        requireNonNull(clock, "clock is null");
        requireNonNull(meterRegistry, "meterRegistry is null");
    }

    /** @return the system clocks and a registry of the bridge's own. */
    static EmbedderServices defaults()
    {
        return new EmbedderServices(SideChannelClock.system(), Optional.empty());
    }

    /**
     * Reads the builder's clocks and registry.
     *
     * @param builder the embedder's builder.
     * @return the services, the system's where the builder sets none.
     * @throws KvBridgeException {@code CONFIG_INVALID} when the registry is not a Micrometer {@code MeterRegistry}.
     */
    static EmbedderServices from(KvBridge.Builder builder)
    {
        SideChannelClock system = SideChannelClock.system();
        LongSupplier monotonic = builder.monotonicClock().orElse(system::monotonicNanos);
        InstantSource wall = builder.wallClock().orElse(system);
        Optional<MeterRegistry> registry = builder.meterRegistry().map(EmbedderServices::meterRegistry);
        boolean defaultClocks = builder.monotonicClock().isEmpty() && builder.wallClock().isEmpty();
        return new EmbedderServices(defaultClocks ? system : SideChannelClock.of(monotonic, wall), registry);
    }

    private static MeterRegistry meterRegistry(Object given)
    {
        if (given instanceof MeterRegistry registry) {
            return registry;
        }
        // the same class name from another class loader is a different class: name both loaders
        String expected = MeterRegistry.class.getName();
        boolean otherLoader = isNamed(given.getClass(), expected);
        throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "meterRegistry is a " + given.getClass().getName() + ", not a " + expected
                + (otherLoader ? " as loaded by kvbridge-core's class loader " + MeterRegistry.class.getClassLoader()
                        + " (it was loaded by " + given.getClass().getClassLoader() + "; put one micrometer-core on the class path)"
                        : "; pass a Micrometer registry (micrometer-core), or no registry for the bridge's own"));
    }

    private static boolean isNamed(Class<?> type, String name)
    {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (c.getName().equals(name)) {
                return true;
            }
        }
        return false;
    }
}
