package io.kvbridge.core.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.function.Executable;

/** Asserts typed planner errors and the values their messages name. */
final class Errors
{
    private Errors()
    {
    }

    static KvBridgeException assertError(ErrorCode code, Executable action, String... fragments)
    {
        KvBridgeException error = assertThrows(KvBridgeException.class, action);
        assertEquals(code, error.code(), error.getMessage());
        for (String fragment : fragments) {
            assertTrue(error.getMessage().contains(fragment), () -> "message lacks '" + fragment + "': " + error.getMessage());
        }
        return error;
    }
}
