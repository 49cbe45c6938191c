package io.kvbridge.backend.ucx.ffm;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.NativeLibrary;

/**
 * UCX statuses ({@code ucs_status_t}) and status pointers ({@code ucs_status_ptr_t}) as Java sees
 * them: the values the transport tests for, how a status pointer encodes an error, and a failed
 * call as a typed error naming the function and UCX's own text. Any thread.
 */
public final class UcpStatus
{
    /** {@code UCS_OK}. */
    public static final byte OK = 0;
    /** {@code UCS_INPROGRESS}. */
    public static final byte IN_PROGRESS = 1;
    /** {@code UCS_ERR_CANCELED}. */
    public static final byte ERR_CANCELED = -16;
    /** {@code UCS_ERR_CONNECTION_RESET}. */
    public static final byte ERR_CONNECTION_RESET = -25;
    /** {@code UCS_ERR_BUSY}. */
    static final byte ERR_BUSY = -15;

    // UCS_ERR_LAST: pointer values from here up to -1 encode a status (UCS_PTR_IS_ERR)
    private static final long ERR_LAST = -100L;

    private UcpStatus()
    {
    }

    /**
     * Tells whether a status pointer encodes an error ({@code UCS_PTR_IS_ERR}).
     *
     * @param statusPointer a value returned by an {@code _nbx} call.
     * @return true for an error.
     */
    public static boolean isError(long statusPointer)
    {
        return Long.compareUnsigned(statusPointer, ERR_LAST) >= 0;
    }

    /**
     * Extracts the status of an error pointer ({@code UCS_PTR_STATUS}).
     *
     * @param statusPointer a value for which {@link #isError} holds.
     * @return the status.
     */
    public static byte statusOf(long statusPointer)
    {
        return (byte) statusPointer;
    }

    /**
     * Returns UCX's description of a status.
     *
     * @param status a status.
     * @return the text, e.g. {@code Connection reset by remote peer}.
     */
    public static String statusString(byte status)
    {
        try {
            long text = (long) UcpNative.UCS_STATUS_STRING.invokeExact(status);
            return text == 0 ? "unknown status" : Scratch.pointer(text, 256).getString(0);
        }
        catch (Throwable e) {
            throw bug(e);
        }
    }

    /**
     * Builds the exception for a failed call.
     *
     * @param function the C function.
     * @param status what it returned.
     * @return {@code NATIVE_ERROR} naming both and UCX's status string.
     */
    public static KvBridgeException error(String function, byte status)
    {
        return NativeLibrary.failure(ErrorCode.NATIVE_ERROR, function, status, statusString(status));
    }

    /**
     * Describes a failed call without an error code prefix, for messages that wrap it.
     *
     * @param function the C function.
     * @param status what it returned.
     * @return e.g. {@code ucp_ep_flush_nbx returned -25 (Connection reset by remote peer)}.
     */
    public static String describeFailure(String function, byte status)
    {
        return error(function, status).getMessage();
    }

    static void check(byte status, String function)
    {
        if (status != OK) {
            throw error(function, status);
        }
    }

    static AssertionError bug(Throwable e)
    {
        if (e instanceof Error error) {
            throw error;
        }
        return new AssertionError("native call failed unexpectedly: " + e, e);
    }
}
