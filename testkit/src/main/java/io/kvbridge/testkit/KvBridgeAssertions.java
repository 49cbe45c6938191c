package io.kvbridge.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.function.Executable;

/** Assertions about kvbridge errors, for tests of every module. */
public final class KvBridgeAssertions
{
    private KvBridgeAssertions()
    {
    }

    /**
     * Asserts that running the code throws a {@link KvBridgeException} with the given code.
     *
     * @param code the expected error code.
     * @param executable the code that must fail.
     * @return the exception, for checks of its message.
     */
    public static KvBridgeException assertCode(ErrorCode code, Executable executable)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, executable);
        assertEquals(code, e.code(), () -> "expected " + code.id() + " but got: " + e.getMessage());
        return e;
    }

    /**
     * Asserts that running the code throws a {@link KvBridgeException} with the given code whose
     * message names every given fragment (the values a user needs to fix the problem).
     *
     * @param code the expected error code.
     * @param executable the code that must fail.
     * @param fragments text the message must contain.
     * @return the exception.
     */
    public static KvBridgeException assertCode(ErrorCode code, Executable executable, String... fragments)
    {
        KvBridgeException e = assertCode(code, executable);
        for (String fragment : fragments) {
            assertTrue(e.getMessage().contains(fragment), () -> "message lacks '" + fragment + "': " + e.getMessage());
        }
        return e;
    }
}
