package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.Map;

/**
 * The transport contract over the fake driver with the batch call turned off ({@code batch=off}):
 * every coalesced run is one {@code cuMemcpyAsync}, the path drivers older than CUDA 12.8 take.
 */
final class CudaIpcFakeSingleCopyConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return FakeCuda.factory();
    }

    @Override
    protected Map<String, String> config()
    {
        return Map.of("batch", "off");
    }
}
