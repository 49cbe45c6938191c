package io.kvbridge.transport.example;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;

/** The toolkit's smallest transport keeps the whole transport contract. */
final class ExampleTransportConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new ExampleTransport();
    }
}
