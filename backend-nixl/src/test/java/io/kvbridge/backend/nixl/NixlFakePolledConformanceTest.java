package io.kvbridge.backend.nixl;

/** The contract against the fake NIXL: the data is copied at post but the status reads IN_PROG for five more polls, so notifications leave only from a later poll. */
final class NixlFakePolledConformanceTest extends AbstractNixlFakeConformanceTest
{
    @Override
    FakeNixl fake()
    {
        return FakeNixl.HEAD;
    }

    @Override
    String completion()
    {
        return "polls:5";
    }
}
