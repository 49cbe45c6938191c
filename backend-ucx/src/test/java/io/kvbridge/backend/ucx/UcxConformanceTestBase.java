package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import org.junit.jupiter.api.extension.ExtendWith;

/** The conformance suite for the UCX transport; subclasses choose the UCX transports. */
@ExtendWith(UcxInstalled.class)
abstract class UcxConformanceTestBase extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new UcxBackendFactory();
    }
}
