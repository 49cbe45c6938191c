package io.kvbridge.core.engine;

import static io.kvbridge.api.TransferParams.formatEpoch;

import java.net.InetSocketAddress;

/**
 * What a rank says when an epoch does not match: a notification that names an earlier incarnation
 * of its own engine (dropped and counted by {@link PeerSessions#staleEpoch}), transfer parameters
 * that name a producer's earlier incarnation, and a push registration of a consumer's earlier one.
 * Every text names the engine and both epochs, so that a log line or a failure tells which restart
 * it was.
 */
final class StaleEpochs
{
    private StaleEpochs()
    {
    }

    /**
     * Drops a notification that names another epoch of the receiving rank's engine: the peer still
     * talks to an earlier incarnation, whose request ids and blocks are not this one's.
     */
    static void refuse(PeerSessions sessions, String sender, String what, long named, String engineId, long own)
    {
        sessions.staleEpoch(sender, what + " names epoch " + formatEpoch(named) + " of engine " + engineId + ", which now runs as epoch "
                + formatEpoch(own) + " (the sender met an earlier incarnation)");
    }

    /** The failure of a request whose parameters name a producer epoch its side channel no longer answers with. */
    static String producerRestarted(String engineId, InetSocketAddress asked, InetSocketAddress servedAt, long named, long answered)
    {
        // where the engine answered: a directory may have located it elsewhere than the parameters' address
        String where = hostPort(servedAt) + (servedAt.equals(asked) ? "" : " (found through the directory; the parameters name " + hostPort(asked) + ")");
        return "producer " + engineId + " at " + where + " restarted: the transfer parameters"
                + " name epoch " + formatEpoch(named) + ", its side channel now answers with epoch " + formatEpoch(answered)
                + "; nothing was transferred: prefill the request again";
    }

    private static String hostPort(InetSocketAddress address)
    {
        return address.getHostString() + ":" + address.getPort();
    }

    /** Why a producer does not write a registration whose consumer's side channel answers with another epoch. */
    static String consumerRestarted(Messages.Registration registration, long answered)
    {
        return "consumer " + registration.engineId() + " registered request " + registration.requestId() + " as epoch "
                + formatEpoch(registration.consumerEpoch()) + ", but its side channel at " + registration.host() + ":" + registration.port()
                + " now answers with epoch " + formatEpoch(answered) + ": it restarted";
    }

    /** The reason a producer gives a consumer whose registration names the producer's earlier epoch. */
    static String registrationOfEarlierEpoch(String engineId, Messages.Registration registration, long own)
    {
        return "producer " + engineId + " restarted: the registration names epoch " + formatEpoch(registration.epoch()) + ", it now runs as epoch "
                + formatEpoch(own) + " and holds nothing of the earlier one; prefill the request again";
    }
}
