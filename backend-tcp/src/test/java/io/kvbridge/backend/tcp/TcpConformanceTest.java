package io.kvbridge.backend.tcp;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.Map;

/** The tcp transport keeps the whole transfer contract between two instances in one process, over loopback. */
final class TcpConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new TcpBackendFactory();
    }

    @Override
    protected Map<String, String> config()
    {
        return Map.of("host", "127.0.0.1");
    }
}
