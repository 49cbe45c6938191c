package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;

/** The UCX transport keeps the whole contract over shared memory (UCX_TLS=sm). */
final class UcxSharedMemoryConformanceTest extends AbstractTransferBackendConformanceTest
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

    @Override
    protected Map<String, String> config()
    {
        return Map.of("tls", "sm");
    }
}
