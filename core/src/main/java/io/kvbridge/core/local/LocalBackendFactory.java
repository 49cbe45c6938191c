package io.kvbridge.core.local;

import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.transport.AbstractTransferBackendFactory;
import io.kvbridge.transport.NativeLibrary;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Factory of the {@code local} transport: peers in one JVM, always available.
 *
 * <p>Options: {@code copy-threads} (1..64, default 1), {@code simulate-device} (accept device
 * allocations backed by host memory, default false), {@code max-in-flight} (posted, unreleased
 * transfers, default 65536).
 */
public final class LocalBackendFactory extends AbstractTransferBackendFactory
{
    /** The transport's name. */
    public static final String NAME = "local";

    /** Creates the factory; {@link java.util.ServiceLoader} finds it through {@code META-INF/services}. */
    public LocalBackendFactory()
    {
        super(NAME, 0);
    }

    @Override
    public Availability probe()
    {
        Map<String, String> details = new LinkedHashMap<>();
        details.put("copy", "MemorySegment.copy on the transport's own threads");
        details.put("peers", "same JVM");
        details.put("native-access", NativeLibrary.nativeAccessDetail(LocalBackendFactory.class));
        return Availability.available(EnumSet.of(Capability.HOST_MEMORY, Capability.SIMULATED_DEVICE_MEMORY, Capability.COALESCING, Capability.GRANTED_ACCESS), details);
    }

    /**
     * Reads the options as {@link #create} does.
     *
     * @param config transport options.
     * @return true: the options were checked.
     */
    @Override
    protected boolean readOptions(Map<String, String> config)
    {
        LocalOptions.parse(config);
        return true;
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        LocalOptions options = LocalOptions.parse(config);
        return new LocalTransferBackend(context.agentName(), options.copyThreads(), options.simulateDevice(), options.maxInFlight());
    }

    /** The options, read once for {@link #checkOptions} and {@link #create} alike. */
    private record LocalOptions(int copyThreads, boolean simulateDevice, int maxInFlight)
    {
        static LocalOptions parse(Map<String, String> config)
        {
            PluginConfig options = new PluginConfig(NAME, config);
            int copyThreads = options.intValue("copy-threads", 1, 1, 64);
            boolean simulateDevice = options.booleanValue("simulate-device", false);
            int maxInFlight = options.intValue("max-in-flight", 65536, 1, 1 << 24);
            options.finish();
            return new LocalOptions(copyThreads, simulateDevice, maxInFlight);
        }
    }
}
