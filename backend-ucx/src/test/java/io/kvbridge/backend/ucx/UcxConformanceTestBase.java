package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import org.junit.jupiter.api.BeforeAll;

/** The conformance suite for the UCX transport; subclasses choose the UCX transports. */
abstract class UcxConformanceTestBase extends AbstractTransferBackendConformanceTest
{
    @BeforeAll
    static void requireUcx()
    {
        UcxTestSupport.assumeUcxInstalled();
    }

    @Override
    protected TransferBackendFactory newFactory()
    {
        return new UcxBackendFactory();
    }
}
