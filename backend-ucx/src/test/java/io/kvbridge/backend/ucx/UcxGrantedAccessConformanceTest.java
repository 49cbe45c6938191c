package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractGrantedAccessConformanceTest;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;

/** What the UCX transport refuses with access=granted (the default), over shared memory. */
final class UcxGrantedAccessConformanceTest extends AbstractGrantedAccessConformanceTest
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
