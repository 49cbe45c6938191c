package io.kvbridge.backend.nixl;

/** The contract against the fake NIXL: the 96-function library of NIXL 0.10.1 .. 1.4, whose failures read -2. */
final class NixlFake14ConformanceTest extends AbstractNixlFakeConformanceTest
{
    @Override
    FakeNixl fake()
    {
        return FakeNixl.V1_4;
    }

    @Override
    String completion()
    {
        return "async";
    }
}
