package io.kvbridge.backend.ucx;

import java.util.Map;

/** The UCX transport keeps the whole contract over shared memory (UCX_TLS=sm). */
final class UcxSharedMemoryConformanceTest extends UcxConformanceTestBase
{
    @Override
    protected Map<String, String> config()
    {
        return Map.of("tls", "sm");
    }
}
