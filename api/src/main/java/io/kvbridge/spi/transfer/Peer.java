package io.kvbridge.spi.transfer;

/**
 * A remote transport instance this one is connected to. Only the instance that created it accepts it.
 */
public interface Peer
{
    /**
     * Returns the peer's agent name, as its notifications are labelled.
     *
     * @return the name.
     */
    String name();
}
