package io.kvbridge.testkit;

import io.kvbridge.spi.transfer.TransferBackendFactory;

/** The reference fake keeps the whole contract. */
final class TestingTransferBackendConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new TestingTransferBackendFactory();
    }
}
