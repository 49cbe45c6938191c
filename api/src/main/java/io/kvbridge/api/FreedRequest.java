package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

/**
 * A producer request whose blocks may be freed; reported exactly once per rank.
 *
 * @param requestId the producer's request id.
 * @param reason why.
 */
public record FreedRequest(String requestId, FreeReason reason)
{
    /** Validates the values. */
    public FreedRequest
    {
        requireNonNull(requestId, "requestId is null");
        requireNonNull(reason, "reason is null");
    }
}
