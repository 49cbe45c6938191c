package io.kvbridge.core.planner;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.testkit.KvBridgeAssertions;
import org.junit.jupiter.api.function.Executable;

/** Asserts typed planner errors and the values their messages name. */
final class Errors
{
    private Errors()
    {
    }

    static KvBridgeException assertError(ErrorCode code, Executable action, String... fragments)
    {
        return KvBridgeAssertions.assertCode(code, action, fragments);
    }
}
