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
 * @param invalidBlocks the local block ids whose contents are undefined, per cache group.
 * @param policy what the engine was configured to do about it.
 * @param firstInvalidBlock position, in the request's blocks, of the earliest invalid block: with
 *     {@link FailurePolicy#RECOMPUTE} the engine recomputes from there.
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
