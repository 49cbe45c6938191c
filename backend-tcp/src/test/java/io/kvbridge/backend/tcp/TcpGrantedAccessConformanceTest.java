package io.kvbridge.backend.tcp;

import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractGrantedAccessConformanceTest;
import java.util.Map;
import java.util.Optional;

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

    /** Refusals are what a peer did, reported apart from the instance's health. */
    @Override
    protected Optional<String> refusalReport(TransferBackend victim)
    {
        return ((TcpTransferBackend) victim).peerReport();
    }
}
