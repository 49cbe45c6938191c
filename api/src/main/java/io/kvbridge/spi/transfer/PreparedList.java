package io.kvbridge.spi.transfer;

import io.kvbridge.spi.memory.MemoryKind;

/**
 * A descriptor list checked and prepared once, then addressed by index in many transfers. Only the
 * transport instance that prepared it accepts it.
 */
public interface PreparedList
{
    /**
     * Returns the number of descriptors.
     *
     * @return the size; indices are in {@code [0, size())}.
     */
    int size();

    /**
     * Returns the memory kind of every descriptor in the list.
     *
     * @return the kind.
     */
    MemoryKind kind();

    /**
     * Returns the peer whose memory the list describes.
     *
     * @return the peer, or {@code null} for a local list.
     */
    Peer peer();
}
