package io.kvbridge.backend.nixl;

/** The contract against the fake NIXL: posts return IN_PROG and a worker thread copies, so every transfer is polled to completion. */
final class NixlFakeConformanceTest extends AbstractNixlFakeConformanceTest
{
    @Override
    FakeNixl fake()
    {
        return FakeNixl.HEAD;
    }

    @Override
    String completion()
    {
        return "async";
    }
}
