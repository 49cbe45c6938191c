package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

import java.util.List;

/**
 * What a consumer rank learned since its last poll.
 *
 * @param received consumer request ids whose blocks are all in place.
 * @param failed requests that will not receive their blocks.
 * @param quarantined blocks of failed requests (this batch's or an earlier one's) that a late
 *     writer may still reach: not to be freed or reused until released.
 * @param released quarantined blocks proven safe again: the request and blocks exactly as quarantined
 *     earlier, the reason naming the proof (each writer's message, or its process's exit).
 */
public record ReceiveBatch(List<String> received, List<ReceiveFailure> failed, List<QuarantinedBlocks> quarantined, List<QuarantinedBlocks> released)
{
    /** Nothing happened. */
    public static final ReceiveBatch EMPTY = new ReceiveBatch(List.of(), List.of());

    /** Copies the lists. */
    public ReceiveBatch
    {
        received = List.copyOf(requireNonNull(received, "received is null"));
        failed = List.copyOf(requireNonNull(failed, "failed is null"));
        quarantined = List.copyOf(requireNonNull(quarantined, "quarantined is null"));
        released = List.copyOf(requireNonNull(released, "released is null"));
    }

    /**
     * Creates a batch that quarantines and releases nothing.
     *
     * @param received see the record.
     * @param failed see the record.
     */
    public ReceiveBatch(List<String> received, List<ReceiveFailure> failed)
    {
        this(received, failed, List.of(), List.of());
    }

    /** {@return true when nothing was received, failed, quarantined or released} */
    public boolean isEmpty()
    {
        return received.isEmpty() && failed.isEmpty() && quarantined.isEmpty() && released.isEmpty();
    }
}
