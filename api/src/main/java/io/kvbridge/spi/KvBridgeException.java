package io.kvbridge.spi;

import static java.util.Objects.requireNonNull;

/**
 * The one exception type kvbridge throws for errors a caller can act on. It carries a stable
 * {@link ErrorCode}; the message names the values involved and how to fix the problem.
 */
public class KvBridgeException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    /** The stable code of this error. */
    private final ErrorCode code;

    /**
     * Creates an exception.
     *
     * @param code that identifies the kind of error.
     * @param message that names the values involved and what would fix the problem.
     */
    public KvBridgeException(ErrorCode code, String message)
    {
        super(message);
        this.code = requireNonNull(code, "code is null");
    }

    /**
     * Creates an exception with a cause.
     *
     * @param code that identifies the kind of error.
     * @param message that names the values involved and what would fix the problem.
     * @param cause the underlying failure.
     */
    public KvBridgeException(ErrorCode code, String message, Throwable cause)
    {
        super(message, cause);
        this.code = requireNonNull(code, "code is null");
    }

    /**
     * Returns the stable error code.
     *
     * @return the code.
     */
    public ErrorCode code()
    {
        return code;
    }

    @Override
    public String getMessage()
    {
        return code.id() + ": " + super.getMessage();
    }

    /**
     * Throws {@link ErrorCode#INVALID_ARGUMENT} unless the condition holds.
     *
     * @param condition that must hold.
     * @param format of the message, for {@link String#format}.
     * @param args of the message.
     */
    public static void checkArgument(boolean condition, String format, Object... args)
    {
        if (!condition) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, String.format(java.util.Locale.ROOT, format, args));
        }
    }

    /**
     * Throws an exception with the given code unless the condition holds.
     *
     * @param condition that must hold.
     * @param code of the exception thrown otherwise.
     * @param format of the message, for {@link String#format}.
     * @param args of the message.
     */
    public static void check(boolean condition, ErrorCode code, String format, Object... args)
    {
        if (!condition) {
            throw new KvBridgeException(code, String.format(java.util.Locale.ROOT, format, args));
        }
    }
}
