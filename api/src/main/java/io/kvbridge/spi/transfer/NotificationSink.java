package io.kvbridge.spi.transfer;

/** Receives notifications drained from a transport. */
@FunctionalInterface
public interface NotificationSink
{
    /**
     * Accepts one notification.
     *
     * @param peerName agent name of the sender.
     * @param message the bytes the sender attached; the sink owns the array.
     */
    void accept(String peerName, byte[] message);
}
