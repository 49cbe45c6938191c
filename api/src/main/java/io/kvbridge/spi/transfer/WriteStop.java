package io.kvbridge.spi.transfer;

/**
 * What a transport proves about bytes landing in this instance's memory once a call that ends an
 * access returns: {@link TransferBackend#revoke} for a peer's accesses under a grant (push: the peer
 * writes into our blocks), {@link TransferBackend#release} for this instance's own transfer still in
 * progress (pull: our READ writes into our blocks). An engine reuses the blocks at once only on
 * {@link #ON_RETURN}; otherwise it keeps them from reuse (quarantines them) until proof arrives.
 */
public enum WriteStop
{
    /**
     * When the call returns normally, no byte of the ended accesses can land any more: every access
     * admitted before it has finished, or its connection was cut off. A call that cannot prove it in
     * time throws ({@code DEADLINE_EXCEEDED}) rather than return.
     */
    ON_RETURN,
    /**
     * Bytes may still land after the call returns (a one-sided write on the wire, a peer that maps
     * the memory, a library that cancels asynchronously), until there is proof the writer stopped: the
     * transfer's handle ending ({@link TransferStatus#DONE} or {@link TransferStatus#FAILED}), the
     * peer's acknowledgement, a teardown that ends its writes, or the peer process's death. A
     * cancelled handle, a transport error, a missed heartbeat or a new peer at the same address is not
     * proof.
     */
    AFTER_PROOF
}
