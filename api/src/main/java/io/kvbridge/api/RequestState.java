package io.kvbridge.api;

/**
 * Where one request stands on one connector, as {@link RequestView} shows it. The terminal states
 * stay visible until {@code poll()} has handed out the request's report.
 */
public enum RequestState
{
    /** Accepted; the connector is still handshaking or planning (consumer), or has not yet armed the lease (producer). */
    PENDING,
    /** Producer: blocks held under a lease, no write of them in flight. */
    HELD,
    /** Consumer push: registrations sent, waiting for the producers' writes. */
    REGISTERED,
    /** Transfers of the request's blocks are posted and not yet all done. */
    IN_FLIGHT,
    /** Producer: every consumer rank finished; consumer: every block is in place. */
    COMPLETED,
    /** Consumer: the blocks will not be received; see the request's {@link ReceiveFailure}. */
    FAILED,
    /** Producer: the lease passed before every consumer rank finished. */
    EXPIRED,
    /** Producer: the engine aborted the request. */
    ABORTED;

    /** {@return true when the request was reported (or is about to be, by the next poll)} */
    public boolean terminal()
    {
        return ordinal() >= COMPLETED.ordinal();
    }
}
