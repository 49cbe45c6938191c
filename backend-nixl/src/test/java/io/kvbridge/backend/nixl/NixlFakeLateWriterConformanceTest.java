package io.kvbridge.backend.nixl;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractLateWriterConformanceTest;
import java.util.Map;

/** No write after free against the fake NIXL: nothing is proven before a transfer ends, so blocks are reused only then. */
final class NixlFakeLateWriterConformanceTest extends AbstractLateWriterConformanceTest
{
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
