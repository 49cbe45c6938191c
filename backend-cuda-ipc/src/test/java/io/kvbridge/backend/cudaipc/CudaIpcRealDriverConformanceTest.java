package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * The transport contract on the installed NVIDIA driver ({@code -Preal-cuda}); the whole class is
 * skipped, with the probe's reason in the report, where no GPU, driver or IPC support is found.
 */
@Tag("real-cuda")
@EnabledIf(value = "io.kvbridge.backend.cudaipc.CudaIpcRealDriverConformanceTest#realDriver", disabledReason = "no usable CUDA driver and GPU here; "
        + "see CudaIpcAvailability.unavailabilityCause() (run ./kvbridge plugins for the reason)")
final class CudaIpcRealDriverConformanceTest extends AbstractTransferBackendConformanceTest
{
    static boolean realDriver()
    {
        return new CudaIpcBackendFactory(false).probe().available();
    }

    @Override
    protected TransferBackendFactory newFactory()
    {
        return new CudaIpcBackendFactory(false);
    }
}
