package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * The transport contract on the installed NVIDIA driver with the target in a child JVM
 * ({@code -Preal-cuda}, and {@code benchmarks/bin/gpu-check.sh}): the same suite as
 * {@link CudaIpcFakeTwoProcessConformanceTest}, its target's memory the transport's own exported host
 * allocation, pinned by the real driver. Skipped, with the reason, where no GPU, driver or IPC
 * support is found.
 */
@Tag("real-cuda")
@EnabledIf(value = "io.kvbridge.backend.cudaipc.CudaIpcRealDriverConformanceTest#realDriver", disabledReason = "no usable CUDA driver and GPU here; "
        + "see CudaIpcAvailability.unavailabilityCause() (run ./kvbridge plugins for the reason)")
final class CudaIpcRealDriverTwoProcessConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new CudaIpcBackendFactory(false);
    }

    @Override
    protected boolean targetInChildProcess()
    {
        return true;
    }
}
