package io.kvbridge.core.local;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;

/** The local transport keeps the whole contract with one copy thread. */
final class LocalConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new LocalBackendFactory();
    }

}
