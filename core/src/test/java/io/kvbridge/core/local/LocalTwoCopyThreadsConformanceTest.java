package io.kvbridge.core.local;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.Map;

/** The local transport keeps the contract with two copy threads, where transfers over 1 MiB are split. */
final class LocalTwoCopyThreadsConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new LocalBackendFactory();
    }

    @Override
    protected Map<String, String> config()
    {
        return Map.of("copy-threads", "2");
    }
}
