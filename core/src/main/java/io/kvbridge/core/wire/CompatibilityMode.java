package io.kvbridge.core.wire;

/** How a compatibility hash mismatch with a peer is handled. */
public enum CompatibilityMode
{
    /** A mismatch fails the handshake before the peer's metadata is decoded (the default). */
    STRICT,
    /**
     * A mismatch is logged as a warning and the handshake goes on: for peers known to be
     * compatible despite differing identities (e.g. the same weights under two model names).
     */
    LENIENT
}
