package io.kvbridge.testkit;

import io.kvbridge.spi.transfer.TransferBackendFactory;

/** Without faults the fault-injecting wrapper keeps the whole transport contract. */
final class FaultInjectingWithoutFaultsConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new FaultInjectingBackendFactory(new TestingTransferBackendFactory(), FaultPlan.none(1));
    }
}
