package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

/**
 * Blocks of a failed consumer request that a writer may still reach: kvbridge could not prove that
 * a peer's write, or its own READ, stopped when the request failed (the transport does not stop
 * writes when a grant is revoked or a transfer released, see
 * {@link io.kvbridge.spi.transfer.WriteStop}). The engine neither frees nor reuses them, not even to
 * recompute into, until a later {@link ReceiveBatch#released()} lists the same request and blocks;
 * that happens only on proof: the writer's acknowledgement, the transfer's handle ending, or the
 * writer's process's exit where the transport can prove it
 * ({@link io.kvbridge.spi.transfer.TransferBackend#writerExited}).
 *
 * @param requestId the consumer's request id, as in the failure reported with it.
 * @param blocks the local block ids a late write may reach, per cache group; a subset of the
 *     failure's invalid blocks.
 * @param reason when quarantined, what is still unproven, naming the writers; when released, the proof.
 */
public record QuarantinedBlocks(String requestId, BlockIds blocks, String reason)
{
    /** Validates the values. */
    public QuarantinedBlocks
    {
        requireNonNull(requestId, "requestId is null");
        requireNonNull(blocks, "blocks is null");
        requireNonNull(reason, "reason is null");
    }
}
