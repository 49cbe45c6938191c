package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractLateWriterConformanceTest;
import java.util.Map;
import org.junit.jupiter.api.extension.ExtendWith;

/** No write after free over UCX with access=registered: one-sided puts prove nothing until they end. */
@ExtendWith(UcxInstalled.class)
final class UcxRegisteredLateWriterConformanceTest extends AbstractLateWriterConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new UcxBackendFactory();
    }

    @Override
    protected Map<String, String> config()
    {
        return Map.of("tls", "sm", "access", "registered");
    }
}
