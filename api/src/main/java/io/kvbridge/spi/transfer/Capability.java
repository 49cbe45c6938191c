package io.kvbridge.spi.transfer;

/** What a transport can do, reported by its probe. */
public enum Capability
{
    /** Registers and moves host memory. */
    HOST_MEMORY,
    /** Registers and moves device memory. */
    DEVICE_MEMORY,
    /** Accepts device allocations backed by host memory, to exercise device paths without a GPU. */
    SIMULATED_DEVICE_MEMORY,
    /** Allocates memory itself in a form it moves faster ({@link TransferBackend#allocate}). */
    TRANSPORT_ALLOCATION,
    /** Peers may live in other processes on the same host. */
    CROSS_PROCESS,
    /** Peers may live on other hosts. */
    CROSS_HOST,
    /** Detects a dead peer and fails its transfers instead of hanging. */
    PEER_FAILURE_DETECTION,
    /**
     * {@link TransferBackend#post} merges consecutive pairs that are contiguous on both sides and lie
     * in one registration on each side into one operation; bytes moved are unchanged. The transport
     * reports the operations each transfer issued through {@link TransferBackend#operations}, when
     * the post returns. A transport whose library merges by a narrower rule (NIXL merges only
     * pairs consecutive in both prepared lists) reports the library's count.
     */
    COALESCING,
    /**
     * The target checks every peer access against its grants ({@link TransferBackend#grant}) before
     * a byte lands or leaves: a peer reaches only the descriptors a live grant under the key it
     * presents covers, for the operation granted, and anything else fails with {@code NOT_GRANTED}
     * and leaves the target's memory untouched and unread. Without it, a connected peer can reach
     * whatever memory the target registered.
     */
    GRANTED_ACCESS
}
