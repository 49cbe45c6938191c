package io.kvbridge.core.planner;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Locale;

/**
 * Builds exceptions only once a check has failed: callers write {@code if (!ok) throw ...}, so a
 * passing check on the per-request path boxes no argument and allocates no varargs array.
 */
final class Checks
{
    private Checks()
    {
    }

    static KvBridgeException invalid(String format, Object... args)
    {
        return failure(ErrorCode.INVALID_ARGUMENT, format, args);
    }

    static KvBridgeException failure(ErrorCode code, String format, Object... args)
    {
        return new KvBridgeException(code, String.format(Locale.ROOT, format, args));
    }
}
