package io.kvbridge.backend.ucx;

/**
 * A range a peer advertised, with its remote key unpacked on this instance's endpoint to the peer.
 * The owner thread creates and destroys the key; other threads read the final fields and
 * {@link #live}.
 */
final class UcxRemoteRegion
{
    final UcxMetadata.Region advertised;
    final long rkey;
    volatile boolean live = true;
    // owner thread only
    boolean destroyed;

    UcxRemoteRegion(UcxMetadata.Region advertised, long rkey)
    {
        this.advertised = advertised;
        this.rkey = rkey;
    }

    long address()
    {
        return advertised.address();
    }

    long length()
    {
        return advertised.length();
    }
}
