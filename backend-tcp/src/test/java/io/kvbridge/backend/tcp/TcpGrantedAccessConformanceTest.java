package io.kvbridge.backend.tcp;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractGrantedAccessConformanceTest;
import java.util.Map;

/** What the tcp transport refuses: every access is checked against the target's grants. */
final class TcpGrantedAccessConformanceTest extends AbstractGrantedAccessConformanceTest
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
