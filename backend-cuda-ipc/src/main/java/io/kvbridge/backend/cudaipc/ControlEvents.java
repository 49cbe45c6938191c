package io.kvbridge.backend.cudaipc;

/** What a {@link ControlChannel} hands to its transport; called on the channel's thread. */
interface ControlEvents
{
    /** A peer's notification arrived; {@code message} is owned by the receiver. */
    void notification(String sender, byte[] message);

    /** A link to or from the peer of that agent name hung up. */
    void peerGone(String agentName, String reason);

    /**
     * The descriptor of a region this instance exports, for a peer that asked under a grant key.
     *
     * @param key a buffer holding the key the peer presented.
     * @param keyLength how many of its bytes are the key (0: none).
     * @param peer the authenticated peer's agent name.
     * @return the descriptor (still owned by the transport), or -1 when the region is not
     *     exported or no live grant under the key lies in it.
     */
    int exportedFd(int regionId, byte[] key, int keyLength, String peer);

    /** @return the pid the metadata of a connected peer of that name names, or -1 when none is connected. */
    int knownPid(String agentName);

    /**
     * The peer at the other end of one of this instance's links is closing: its memory must be
     * unmapped here, after the copies running against it, and {@link #unmapped} sent on the link.
     */
    void peerClosing(ControlChannel.Link link);

    /**
     * The peer at the other end of one of this instance's links revoked its last grant in some of
     * its regions: their mappings must be closed here, after the copies running against the peer,
     * and {@link ControlChannel#regionsUnmapped} sent on the link.
     */
    void peerRevoked(ControlChannel.Link link, int[] regionIds);
}
