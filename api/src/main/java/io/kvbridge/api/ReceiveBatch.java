package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

import java.util.List;

/**
 * What a consumer rank learned since its last poll.
 *
 * @param received consumer request ids whose blocks are all in place.
 * @param failed requests that will not receive their blocks.
 */
public record ReceiveBatch(List<String> received, List<ReceiveFailure> failed)
{
    /** Nothing happened. */
    public static final ReceiveBatch EMPTY = new ReceiveBatch(List.of(), List.of());

    /** Copies the lists. */
    public ReceiveBatch
    {
        received = List.copyOf(requireNonNull(received, "received is null"));
        failed = List.copyOf(requireNonNull(failed, "failed is null"));
    }

    /** {@return true when nothing was received and nothing failed} */
    public boolean isEmpty()
    {
        return received.isEmpty() && failed.isEmpty();
    }
}
