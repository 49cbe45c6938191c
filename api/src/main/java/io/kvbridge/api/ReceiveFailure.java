package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;

/**
 * A consumer request whose blocks were not received; reported exactly once per rank.
 *
 * @param requestId the consumer's request id.
 * @param code the kind of failure ({@code HANDSHAKE_FAILED}, {@code TRANSFER_FAILED}, {@code DEADLINE_EXCEEDED}, ...).
 * @param message what failed, naming the values involved.
 * @param invalidBlocks the local block ids whose contents are undefined, per cache group: the blocks
 *     of every group a failed, cancelled or never posted transfer (pull) or an unfinished writer
 *     (push) would have written. A group whose transfers all completed keeps its blocks. When the
 *     connector cannot tell which part failed (a handshake or plan failure, a lost registration),
 *     every group's blocks are listed. Blocks a sliding-window group does not exchange
 *     ({@link io.kvbridge.spi.layout.CacheLayout#exchangedBlocks}) are never written and never listed.
 * @param policy what the engine was configured to do about it.
 * @param firstInvalidBlock the smallest position, in any group's list of the request's blocks (as
 *     given to {@link ConsumerConnector#blocksAllocated}), of an invalid block; the longest group's
 *     length when no block is invalid. With {@link FailurePolicy#RECOMPUTE} the engine recomputes
 *     from there; {@link KeptTokens} turns the failure into tokens per group.
 */
public record ReceiveFailure(String requestId, ErrorCode code, String message, BlockIds invalidBlocks, FailurePolicy policy, int firstInvalidBlock)
{
    /** Validates the values. */
    public ReceiveFailure
    {
        requireNonNull(requestId, "requestId is null");
        requireNonNull(code, "code is null");
        requireNonNull(message, "message is null");
        requireNonNull(invalidBlocks, "invalidBlocks is null");
        requireNonNull(policy, "policy is null");
        checkArgument(firstInvalidBlock >= 0, "firstInvalidBlock=%d is negative", firstInvalidBlock);
    }
}
