package io.kvbridge.backend.nixl;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole transport contract through the real FFM binding, against the fake NIXL with its
 * default completion mode: posts return IN_PROG and a worker thread copies, so every transfer is
 * polled to completion. After each test nothing native is left.
 */
@Timeout(180)
final class NixlFakeConformanceTest extends AbstractTransferBackendConformanceTest
{
    @RegisterExtension
    final FakeLeakCheck leakCheck = new FakeLeakCheck(FakeNixl.HEAD);

    @BeforeAll
    static void asyncCompletion()
    {
        FakeNixl.HEAD.option("completion", "async");
    }

    @AfterAll
    static void resetFaults()
    {
        FakeNixl.HEAD.resetFaults();
    }

    @Override
    protected TransferBackendFactory newFactory()
    {
        return FakeNixl.HEAD.factory();
    }

    @Override
    protected Map<String, String> config()
    {
        return FakeNixl.HEAD.options();
    }
}
