package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractLateWriterConformanceTest;
import java.util.Map;
import org.junit.jupiter.api.extension.ExtendWith;

/** No write after free over UCX with access=granted (the default), over shared memory: a revoke cuts off what it admitted. */
@ExtendWith(UcxInstalled.class)
final class UcxLateWriterConformanceTest extends AbstractLateWriterConformanceTest
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
}
