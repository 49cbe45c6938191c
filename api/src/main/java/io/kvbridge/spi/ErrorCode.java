package io.kvbridge.spi;

/**
 * Stable identifiers of every error kvbridge reports. The {@link #id()} ({@code KVB/PascalCase}) is
 * part of the public contract: it never changes meaning, so users and tools may match on it.
 */
public enum ErrorCode
{
    /** A configuration value is missing, malformed, out of range, or an unknown key was given. */
    CONFIG_INVALID,
    /** A method argument is outside its documented domain. */
    INVALID_ARGUMENT,
    /** Two plugins of one kind share a name. */
    PLUGIN_DUPLICATE,
    /** A plugin was built against another SPI version. */
    PLUGIN_SPI_MISMATCH,
    /** A plugin name is malformed. */
    PLUGIN_NAME_INVALID,
    /** No plugin of the requested name is on the class path. */
    PLUGIN_UNKNOWN,
    /** The requested transport exists but cannot run here. */
    BACKEND_UNAVAILABLE,
    /** A native library call failed. */
    NATIVE_ERROR,
    /** The object was used after {@code close()}. */
    CLOSED,
    /** A memory allocation was registered twice, or overlaps one already registered. */
    ALREADY_REGISTERED,
    /** Memory was referenced that is not registered with the transport. */
    NOT_REGISTERED,
    /** A descriptor lies outside every registered allocation. */
    DESCRIPTOR_OUT_OF_RANGE,
    /** A descriptor index lies outside its prepared list. */
    INDEX_OUT_OF_RANGE,
    /** Paired descriptors have different lengths, or index arrays have different lengths. */
    LENGTH_MISMATCH,
    /** The memory kind is not supported by this transport or configuration. */
    MEMORY_KIND_UNSUPPORTED,
    /** A peer handle or prepared list does not belong to this transport instance. */
    FOREIGN_HANDLE,
    /** The peer is not known, not reachable, or was disconnected. */
    PEER_UNKNOWN,
    /** The discovery directory's store cannot be reached and nothing is cached for the question asked. */
    DISCOVERY_UNAVAILABLE,
    /** A transfer handle is unknown or already released. */
    HANDLE_UNKNOWN,
    /** A transfer failed after it was posted. */
    TRANSFER_FAILED,
    /** A transfer or handshake ran past its deadline. */
    DEADLINE_EXCEEDED,
    /** A geometry violates its own invariants (overflow, overlap, a layer in two regions, ...). */
    GEOMETRY_INVALID,
    /** Two geometries cannot be paired (block sizes, head counts, region counts, ...). */
    GEOMETRY_INCOMPATIBLE,
    /** The tensor-parallel combination cannot be expressed. */
    TP_UNSUPPORTED,
    /** Layer routing between peers failed (missing, duplicated or inconsistent layers). */
    ROUTING_FAILED,
    /** A layout cannot describe the given model or allocations. */
    LAYOUT_UNSUPPORTED,
    /** A block id lies outside the capacity of its region or group. */
    BLOCK_OUT_OF_RANGE,
    /**
     * A peer asked to read or write memory that no live grant of the target covers: outside the
     * blocks a request granted it, under a key that was never granted or already revoked, or with
     * the other operation than the one granted.
     */
    NOT_GRANTED,
    /** A peer message is malformed, too large, or of an unknown version. */
    PROTOCOL_ERROR,
    /** A peer failed authentication (bad MAC, replay, stale timestamp). */
    AUTHENTICATION_FAILED,
    /** The peers' model identities differ. */
    COMPATIBILITY_MISMATCH,
    /** The handshake with a peer failed. */
    HANDSHAKE_FAILED,
    /**
     * A request names an earlier incarnation (epoch) of a peer engine than the one now serving: the
     * peer restarted, so what the request refers to (held blocks, registered memory) is gone. Never
     * retried on the new incarnation; the router must prefill the request again.
     */
    STALE_EPOCH,
    /** The operation is valid but not supported by this component. */
    UNSUPPORTED,
    /**
     * A received block's bytes differ from the digest its producer computed at
     * {@code prefillFinished}: they were changed in flight or in memory after the prefill. The
     * request's blocks from the first mismatching one on are invalid.
     */
    DIGEST_MISMATCH,
    /**
     * The consumer checks block digests but the request's parameters carry none it can compare: the
     * producer does not compute them ({@code integrity} off there), or the two engines' shapes differ
     * so that a producer block's bytes are not one consumer block's.
     */
    DIGEST_UNAVAILABLE;

    /**
     * Returns the stable identifier, for example {@code KVB/DescriptorOutOfRange}.
     *
     * @return the identifier used in messages and machine-readable output.
     */
    public String id()
    {
        StringBuilder id = new StringBuilder("KVB/");
        for (String word : name().split("_")) {
            id.append(word.charAt(0)).append(word.substring(1).toLowerCase(java.util.Locale.ROOT));
        }
        return id.toString();
    }
}
