package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;

/** The transport contract, in one process over the fake driver: host memory, same-process peers. */
final class CudaIpcFakeConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return FakeCuda.factory();
    }
}
