package io.kvbridge.backend.nixl;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Checks, after each test and its tear-down, that the fake NIXL holds no agent, request, prepared
 * list or container, and that no stale handle was used: proof that close() releases everything in
 * the order NIXL needs.
 */
public final class FakeLeakCheck implements BeforeEachCallback, AfterEachCallback
{
    private final FakeNixl fake;
    private FakeNixl.Stats before;

    public FakeLeakCheck(FakeNixl fake)
    {
        this.fake = fake;
    }

    @Override
    public void beforeEach(ExtensionContext context)
    {
        before = fake.stats();
    }

    @Override
    public void afterEach(ExtensionContext context)
    {
        // null where beforeEach skipped the test (the fake was not built): nothing ran to check
        if (before == null) {
            return;
        }
        fake.assertNothingLeft(before);
    }
}
