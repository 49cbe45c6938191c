package io.kvbridge.backend.nixl.ffm;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.NativeLibrary;

/**
 * The {@code nixl_capi_status_t} values and their translation into kvbridge errors. Values are
 * matched by number, never by order; an unknown value is reported as it is.
 */
final class NixlStatus
{
    static final int SUCCESS = 0;
    static final int IN_PROG = 1;
    static final int INVALID_PARAM = -1;
    static final int BACKEND = -2;
    static final int INVALID_STATE = -3;
    static final int EXCEPTION = -4;
    static final int NO_TELEMETRY = -5;
    static final int NOT_FOUND = -6;

    /** For calls whose failure can only be NIXL's or the binding's. */
    static final Meaning INTERNAL = new Meaning(ErrorCode.NATIVE_ERROR, ErrorCode.NATIVE_ERROR, ErrorCode.NATIVE_ERROR, false);

    private NixlStatus()
    {
    }

    /**
     * Throws the error for a failing status.
     *
     * @param status what the function returned.
     * @param function the C function, as exported.
     * @param meaning how to read the status for this function.
     * @param level the library's status dialect.
     * @param context what was being done, with the values involved.
     */
    static void check(int status, String function, Meaning meaning, NixlApiLevel level, String context)
    {
        if (status != SUCCESS) {
            throw error(function, status, meaning, level, context);
        }
    }

    static String name(int status)
    {
        return switch (status) {
            case SUCCESS -> "SUCCESS";
            case IN_PROG -> "IN_PROG";
            case INVALID_PARAM -> "ERROR_INVALID_PARAM";
            case BACKEND -> "ERROR_BACKEND";
            case INVALID_STATE -> "ERROR_INVALID_STATE";
            case EXCEPTION -> "ERROR_EXCEPTION";
            case NO_TELEMETRY -> "ERROR_NO_TELEMETRY";
            case NOT_FOUND -> "ERROR_NOT_FOUND";
            default -> "unknown status";
        };
    }

    /**
     * What a failing status means for one function.
     *
     * @param invalidParam code for {@code -1}: the binding passed something NIXL refused.
     * @param backend code for {@code -2}: NIXL or its backend failed.
     * @param notFound code for {@code -6}: a peer, registration or backend was not found.
     * @param hiddenNotFound true when NIXL up to 1.4 reports "not found" as {@code -2} for this
     *     function, so a {@code -2} from such a library is read as {@code notFound}.
     */
    record Meaning(ErrorCode invalidParam, ErrorCode backend, ErrorCode notFound, boolean hiddenNotFound)
    {
    }

    /**
     * Builds the error for a failing status.
     *
     * @param function the C function, as exported.
     * @param status what it returned.
     * @param meaning how to read the status for this function.
     * @param level the library's status dialect.
     * @param context what was being done, with the values involved.
     * @return the exception to throw.
     */
    static KvBridgeException error(String function, int status, Meaning meaning, NixlApiLevel level, String context)
    {
        ErrorCode code;
        String hint = "";
        switch (status) {
            case INVALID_PARAM -> code = meaning.invalidParam();
            case BACKEND -> {
                if (level == NixlApiLevel.V1_4 && meaning.hiddenNotFound()) {
                    code = meaning.notFound();
                    hint = " (NIXL up to 1.4 also reports a missing peer or registration as -2: reload the peer's metadata and retry)";
                }
                else {
                    code = meaning.backend();
                }
            }
            case NOT_FOUND -> code = meaning.notFound();
            case NO_TELEMETRY -> code = ErrorCode.UNSUPPORTED;
            case INVALID_STATE -> {
                code = ErrorCode.NATIVE_ERROR;
                hint = " (a request was destroyed before it was released: a binding bug)";
            }
            default -> code = ErrorCode.NATIVE_ERROR;
        }
        return NativeLibrary.failure(code, function, status, name(status), context + hint);
    }
}
