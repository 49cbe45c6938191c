package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.KvBridgeAssertions;
import java.time.Duration;
import org.junit.jupiter.api.function.Executable;

/** Assertions the nixl tests share. */
public final class NixlTestSupport
{
    private NixlTestSupport()
    {
    }

    /**
     * Asserts that a call fails with a code and a message fragment (such as the C function and status).
     *
     * @param code the expected code.
     * @param fragment text the message must contain; empty for any.
     * @param executable the call.
     * @return the exception.
     */
    public static KvBridgeException assertFails(ErrorCode code, String fragment, Executable executable)
    {
        KvBridgeException e = KvBridgeAssertions.assertCode(code, executable);
        assertTrue(e.getMessage().contains(fragment), () -> "expected '" + fragment + "' in: " + e.getMessage());
        return e;
    }

    /** Polls a transfer until it is terminal, failing after the deadline. */
    static TransferStatus awaitTerminal(TransferBackend backend, long handle, Duration deadline)
    {
        long end = System.nanoTime() + deadline.toNanos();
        while (System.nanoTime() < end) {
            TransferStatus status = backend.status(handle);
            if (status.terminal()) {
                return status;
            }
            Thread.onSpinWait();
        }
        return fail("transfer still in progress after " + deadline);
    }
}
