package io.kvbridge.backend.nixl;

/** The contract against the fake NIXL: posts copy and notify before they return, as UCX does for transfers that complete inside the post. */
final class NixlFakeInlineConformanceTest extends AbstractNixlFakeConformanceTest
{
    @Override
    FakeNixl fake()
    {
        return FakeNixl.HEAD;
    }

    @Override
    String completion()
    {
        return "inline";
    }
}
