package io.kvbridge.backend.tcp;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractLateWriterConformanceTest;

/** No write after free over TCP: a revoke and a release both return only once no byte can land. */
final class TcpLateWriterConformanceTest extends AbstractLateWriterConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new TcpBackendFactory();
    }
}
