package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.BackendResources;

/**
 * What a connector holds right now: an idle engine should see zeros everywhere except the
 * transport's registrations of its own caches.
 *
 * @param requests requests not yet reported (producer: blocks held; consumer: waiting to receive).
 * @param inFlightTransfers posted transfers whose handles were not released.
 * @param leasesHeld producer leases not yet completed or expired.
 * @param stashedRegistrations push registrations waiting for their prefill to finish.
 * @param retainedHandles handles whose release failed and is retried.
 * @param grants grants of the connector's memory to peers not yet revoked (a request's blocks a peer
 *     may still reach); 0 with a transport that does not check grants.
 * @param transport what the connector's transport instance holds.
 * @param quarantinedRequests failed requests whose blocks are quarantined ({@link QuarantinedBlocks}):
 *     a late writer may still reach them, so the engine must not reuse them yet.
 */
public record ConnectorAudit(int requests, int inFlightTransfers, int leasesHeld, int stashedRegistrations, int retainedHandles, int grants,
        BackendResources transport, int quarantinedRequests)
{
    /** Validates the values. */
    public ConnectorAudit
    {
        requireNonNull(transport, "transport is null");
        checkArgument(requests >= 0 && inFlightTransfers >= 0 && leasesHeld >= 0 && stashedRegistrations >= 0 && retainedHandles >= 0 && grants >= 0
                && quarantinedRequests >= 0, "negative count: requests=%d inFlightTransfers=%d leasesHeld=%d stashedRegistrations=%d retainedHandles=%d "
                        + "grants=%d quarantinedRequests=%d", requests, inFlightTransfers, leasesHeld, stashedRegistrations, retainedHandles, grants,
                quarantinedRequests);
    }

    /**
     * Creates an audit of a connector that quarantines nothing.
     *
     * @param requests see the record.
     * @param inFlightTransfers see the record.
     * @param leasesHeld see the record.
     * @param stashedRegistrations see the record.
     * @param retainedHandles see the record.
     * @param grants see the record.
     * @param transport see the record.
     */
    public ConnectorAudit(int requests, int inFlightTransfers, int leasesHeld, int stashedRegistrations, int retainedHandles, int grants,
            BackendResources transport)
    {
        this(requests, inFlightTransfers, leasesHeld, stashedRegistrations, retainedHandles, grants, transport, 0);
    }

    /**
     * Creates an audit of a connector that holds no grants.
     *
     * @param requests see the record.
     * @param inFlightTransfers see the record.
     * @param leasesHeld see the record.
     * @param stashedRegistrations see the record.
     * @param retainedHandles see the record.
     * @param transport see the record.
     */
    public ConnectorAudit(int requests, int inFlightTransfers, int leasesHeld, int stashedRegistrations, int retainedHandles, BackendResources transport)
    {
        this(requests, inFlightTransfers, leasesHeld, stashedRegistrations, retainedHandles, 0, transport, 0);
    }

    /** {@return true when no request, transfer, lease, registration, retained handle, grant or quarantine is held} */
    public boolean idle()
    {
        return requests == 0 && inFlightTransfers == 0 && leasesHeld == 0 && stashedRegistrations == 0 && retainedHandles == 0 && grants == 0
                && quarantinedRequests == 0 && transport.transfers() == 0;
    }
}
