package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractLateWriterConformanceTest;

/** No write after free over the fake driver in one process: nothing is proven before a copy ends, so blocks are reused only then. */
final class CudaIpcFakeLateWriterConformanceTest extends AbstractLateWriterConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return FakeCuda.factory();
    }
}
