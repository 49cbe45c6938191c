package io.kvbridge.transport;

/**
 * A transfer's notification, copied at post time into a buffer its slot keeps: the caller may
 * reuse its array once {@code post} returns, and a reused slot allocates only when a longer
 * message than any before arrives. Not thread-safe: written at post, read when the transfer ends.
 */
public final class NotificationCopy
{
    private byte[] bytes = new byte[0];
    private int length = -1;

    /** Creates a copy that holds no notification yet. */
    public NotificationCopy()
    {
    }

    /**
     * Keeps a copy of a message, or remembers that there is none.
     *
     * @param message the notification, or null when the transfer sends none.
     */
    public void set(byte[] message)
    {
        if (message == null) {
            length = -1;
            return;
        }
        if (bytes.length < message.length) {
            bytes = new byte[Math.max(message.length, bytes.length * 2)];
        }
        System.arraycopy(message, 0, bytes, 0, message.length);
        length = message.length;
    }

    /** {@return whether the transfer sends a notification} */
    public boolean present()
    {
        return length >= 0;
    }

    /** {@return the buffer holding the message in its first {@link #length()} bytes} */
    public byte[] bytes()
    {
        return bytes;
    }

    /** {@return the message's length, or -1 when there is none} */
    public int length()
    {
        return length;
    }
}
