package io.kvbridge.core.local;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractLateWriterConformanceTest;

/** No write after free on the local transport: its revoke waits for the copies it admitted. */
final class LocalLateWriterTest extends AbstractLateWriterConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new LocalBackendFactory();
    }
}
