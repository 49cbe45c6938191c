package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.transport.AbstractTransferBackendFactory;
import java.util.List;
import java.util.Map;

/**
 * Factory of the {@code cuda-ipc} transport: KV caches in GPU memory moved between processes on one
 * node with the CUDA driver API ({@code libcuda.so.1}) bound through FFM. Available only where the
 * driver, a device and IPC support are found; it never pretends otherwise.
 *
 * <p>Options: {@code device} (the device ordinal the instance's context is on, default 0),
 * {@code streams} (copy streams, 1..64, default 4), {@code batch} ({@code auto}: a transfer of
 * more than one coalesced copy goes as {@code cuMemcpyBatchAsync} calls where the driver has it;
 * {@code off}: one {@code cuMemcpyAsync} per copy), {@code batch-size} (copies per batch call,
 * 2..65536, default 1024), {@code allocation} ({@code auto}, {@code vmm} or
 * {@code legacy}: what {@code allocate(DEVICE)} uses, default auto = VMM where the device exports
 * POSIX fds), {@code max-in-flight} (1..1048576, default 16384), {@code transfer-timeout-ms}
 * (copies not done by then fail the transfer, default 30000), {@code close-timeout-ms} (how long
 * {@code close()} waits for the copy loop to take its stop, 100..600000, default 30000; a loop
 * inside a driver call that does not return fails the close with {@code DEADLINE_EXCEEDED}),
 * {@code max-queued-notifications} (notifications received and not drained, beyond which more
 * are dropped and counted, 1..16777216, default 65536), {@code allow-fake} (accept kvbridge's
 * test fake of the driver; default: the {@value #ALLOW_FAKE_PROPERTY} property, else false).
 * {@code -D}{@value #LIBRARY_PROPERTY} names the driver file or its directory;
 * {@code -D}{@value #ENABLED_PROPERTY}{@code =false} switches the transport off before anything loads.
 */
public final class CudaIpcBackendFactory extends AbstractTransferBackendFactory
{
    /** The transport's name. */
    public static final String NAME = "cuda-ipc";
    /** System property naming {@code libcuda.so.1} or its directory. */
    public static final String LIBRARY_PROPERTY = "kvbridge.cuda-ipc.library";
    /** System property that switches the transport off ({@code false}) before anything loads. */
    public static final String ENABLED_PROPERTY = "kvbridge.cuda-ipc.enabled";
    /** System property that lets the transport run on kvbridge's test fake of the driver. */
    public static final String ALLOW_FAKE_PROPERTY = "kvbridge.cuda-ipc.allow-fake";

    /** Copies per {@code cuMemcpyBatchAsync} call unless {@code batch-size} says otherwise. */
    static final int DEFAULT_BATCH_SIZE = 1024;
    static final int MAX_BATCH_SIZE = 65536;

    private final Boolean allowFake;

    /** Creates the factory; it reads its system properties when it probes. */
    public CudaIpcBackendFactory()
    {
        this(null);
    }

    /** @param allowFake whether the test fake is acceptable, or null to read the property. */
    CudaIpcBackendFactory(Boolean allowFake)
    {
        // above the host-memory transports: where a GPU and IPC are found, this is the transport for device caches
        super(NAME, 30);
        this.allowFake = allowFake;
    }

    @Override
    public Availability probe()
    {
        try {
            return CudaIpcProbe.run(allowFake()).availability();
        }
        catch (RuntimeException | LinkageError e) {
            return Availability.unavailable(List.of("probing the CUDA driver failed: " + e), Map.of());
        }
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        PluginConfig options = new PluginConfig(NAME, config);
        int device = options.intValue("device", 0, 0, 1023);
        int streams = options.intValue("streams", 4, 1, 64);
        String batch = options.stringValue("batch", "auto");
        int batchSize = options.intValue("batch-size", DEFAULT_BATCH_SIZE, 2, MAX_BATCH_SIZE);
        String allocation = options.stringValue("allocation", "auto");
        int maxInFlight = options.intValue("max-in-flight", 16384, 1, 1 << 20);
        int timeoutMillis = options.intValue("transfer-timeout-ms", 30_000, 1, 3_600_000);
        int closeTimeoutMillis = options.intValue("close-timeout-ms", 30_000, 100, 600_000);
        int maxQueuedNotifications = options.intValue("max-queued-notifications", 65536, 1, 1 << 24);
        boolean chosenAllowFake = options.booleanValue("allow-fake", allowFake());
        options.finish();
        if (!List.of("auto", "off").contains(batch)) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "cuda-ipc option batch=" + batch + " is not auto (cuMemcpyBatchAsync where the driver "
                    + "has it) or off (one cuMemcpyAsync per coalesced run)");
        }
        if (!List.of("auto", "vmm", "legacy").contains(allocation)) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "cuda-ipc option allocation=" + allocation + " is not auto, vmm or legacy");
        }
        CudaIpcProbe.Result probe = CudaIpcProbe.run(chosenAllowFake);
        requireAvailable(probe.availability());
        if (device >= probe.devices()) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "cuda-ipc option device=" + device + " but the driver sees " + probe.devices()
                    + " device(s); use 0.." + (probe.devices() - 1) + " (CUDA_VISIBLE_DEVICES renumbers them)");
        }
        if (allocation.equals("vmm") && !probe.vmmFd()) {
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "cuda-ipc option allocation=vmm but the device cannot export VMM memory as POSIX fds; use auto or legacy");
        }
        return new CudaIpcTransferBackend(context.agentName(), device, streams, batch.equals("off") ? 0 : batchSize, maxInFlight, timeoutMillis, allocation,
                probe.vmmFd(), closeTimeoutMillis, context.connectionKey(), maxQueuedNotifications);
    }

    private boolean allowFake()
    {
        return allowFake != null ? allowFake : CudaIpcAvailability.allowFake();
    }
}
