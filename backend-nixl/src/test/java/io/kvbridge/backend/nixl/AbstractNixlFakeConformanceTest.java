package io.kvbridge.backend.nixl;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole transport contract through the real FFM binding against a fake NIXL, in one of the
 * fake's completion modes. After each test and its tear-down the fake holds nothing and saw no
 * stale handle.
 */
@Timeout(180)
abstract class AbstractNixlFakeConformanceTest extends AbstractTransferBackendConformanceTest
{
    @RegisterExtension
    final FakeLeakCheck leakCheck = new FakeLeakCheck(fake());

    /** @return the fake library under test. */
    abstract FakeNixl fake();

    /** @return the fake's completion mode: async, inline or polls:N. */
    abstract String completion();

    @BeforeEach
    void selectCompletion()
    {
        fake().option("completion", completion());
    }

    @AfterEach
    void restoreCompletion()
    {
        fake().option("completion", "async");
    }

    @Override
    protected TransferBackendFactory newFactory()
    {
        return fake().factory();
    }

    @Override
    protected Map<String, String> config()
    {
        return fake().options();
    }
}
