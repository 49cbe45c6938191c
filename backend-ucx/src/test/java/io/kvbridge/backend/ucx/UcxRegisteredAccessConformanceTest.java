package io.kvbridge.backend.ucx;

import java.util.Map;

/**
 * The contract with {@code access=registered}: one-sided put/get over shared memory, which checks no
 * grants (its {@code grant()} returns {@code NO_GRANT}), as before grants existed.
 */
final class UcxRegisteredAccessConformanceTest extends UcxConformanceTestBase
{
    @Override
    protected Map<String, String> config()
    {
        return Map.of("tls", "sm", "access", "registered");
    }
}
