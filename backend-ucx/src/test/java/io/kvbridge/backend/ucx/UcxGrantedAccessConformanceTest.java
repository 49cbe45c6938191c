package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractGrantedAccessConformanceTest;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.extension.ExtendWith;

/** What the UCX transport refuses with access=granted (the default), over shared memory. */
@ExtendWith(UcxInstalled.class)
final class UcxGrantedAccessConformanceTest extends AbstractGrantedAccessConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new UcxBackendFactory();
    }

    @Override
    protected Map<String, String> config()
    {
        return Map.of("tls", "sm");
    }

    /** Refusals are what a peer did, reported apart from the instance's health. */
    @Override
    protected Optional<String> refusalReport(TransferBackend victim)
    {
        return ((UcxTransferBackend) victim).peerReport();
    }
}
