package io.kvbridge.backend.nixl;

import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** The two-process test against an installed NIXL (profile {@code real-nixl}); skipped, saying why, without one. */
@Tag("real-nixl")
@ExtendWith(RequiresRealNixl.class)
@Timeout(300)
final class RealNixlTwoProcessTest extends AbstractNixlTwoProcessTest
{
    @Override
    String library()
    {
        return null;
    }

    @Override
    boolean allowFake()
    {
        return false;
    }

    @Override
    Map<String, String> childEnvironment()
    {
        // UCX must not install its own SIGSEGV handlers in a JVM
        return Map.of("UCX_ERROR_SIGNALS", "");
    }
}
