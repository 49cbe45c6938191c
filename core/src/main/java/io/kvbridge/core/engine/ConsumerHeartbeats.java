package io.kvbridge.core.engine;

import io.kvbridge.core.engine.ReceivingRequest.Stage;
import io.kvbridge.core.sidechannel.RankKey;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The heartbeats one scan of a consumer rank's requests sends: one message per producer rank link,
 * naming every request due on it, so that a producer extends the leases of requests still being
 * received. Collected while the scan walks the requests, sent once it is done. A scan with nothing
 * due allocates nothing. Worker thread only.
 */
final class ConsumerHeartbeats
{
    private final PeerLinks links;
    private final RankPeers peers;
    // null until a scan finds a heartbeat due
    private Map<PeerLink, List<String>> requests;
    private Map<PeerLink, Long> epochs;

    ConsumerHeartbeats(PeerLinks links, RankPeers peers)
    {
        this.links = links;
        this.peers = peers;
    }

    /** Starts a scan: what an earlier scan collected and did not send (it failed half way) is dropped, as its requests are scanned again. */
    void begin()
    {
        requests = null;
        epochs = null;
    }

    /** Names a request on the link to every producer rank its plan reads from or is written by. */
    void add(ReceivingRequest request)
    {
        if (requests == null) {
            requests = new HashMap<>();
            epochs = new HashMap<>();
        }
        for (Stage stage : request.stages) {
            for (int target : stage.targets()) {
                PeerLink link = links.link(stage.remote(), stage.engine(), new RankKey(stage.ppRank(), target));
                requests.computeIfAbsent(link, ignored -> new ArrayList<>()).add(request.producerRequestId);
                epochs.put(link, stage.engine().epoch());
            }
        }
    }

    /** Sends what this scan collected, and starts the next scan empty. */
    void send()
    {
        if (requests == null) {
            return;
        }
        for (Map.Entry<PeerLink, List<String>> entry : requests.entrySet()) {
            peers.notifyQuietly(entry.getKey(), Messages.heartbeat(epochs.get(entry.getKey()), entry.getValue()), "heartbeat");
        }
        requests = null;
        epochs = null;
    }
}
