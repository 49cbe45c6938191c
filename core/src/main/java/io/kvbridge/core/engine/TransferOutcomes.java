package io.kvbridge.core.engine;

import io.kvbridge.spi.ErrorCode;

/**
 * Where the worker hands the outcomes of a rank's transfers: each to the role that posted it
 * ({@link RankRole}), and a peer that may be gone to the rank's peers, so that the next request to
 * that side channel connects afresh instead of failing on a dead peer. Built once per rank: the
 * worker polls and retries releases with it every round. Worker thread only.
 */
final class TransferOutcomes implements InFlightTransfers.Outcome
{
    private final RankRole role;
    private final RankPeers peers;

    TransferOutcomes(RankRole role, RankPeers peers)
    {
        this.role = role;
        this.peers = peers;
    }

    @Override
    public void done(Transfer transfer)
    {
        role.transferDone(transfer);
    }

    @Override
    public void failed(Transfer transfer, ErrorCode code, String message)
    {
        role.transferFailed(transfer, code, message);
    }

    // a transport that cannot stop one transfer alone (UCX) closes its peer's endpoint for it, and a peer that failed
    // one transfer may be gone
    @Override
    public void peerMayBeGone(Transfer transfer)
    {
        peers.peerFailed(transfer.remote);
    }

    @Override
    public void releasedLate(Transfer transfer)
    {
        role.releasedLate(transfer);
    }

    @Override
    public void stopped(Transfer transfer, boolean done)
    {
        role.stopped(transfer, done);
    }
}
