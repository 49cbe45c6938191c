package io.kvbridge.spi.transfer;

/** State of a posted transfer. */
public enum TransferStatus
{
    /** Data may still be moving. */
    IN_PROGRESS,
    /** Every byte is in place and the notification, if any, has been handed to the peer. */
    DONE,
    /** The transfer failed; the destination bytes are undefined. */
    FAILED;

    /**
     * Tells whether the transfer has stopped moving data.
     *
     * @return true for {@link #DONE} and {@link #FAILED}.
     */
    public boolean terminal()
    {
        return this != IN_PROGRESS;
    }
}
