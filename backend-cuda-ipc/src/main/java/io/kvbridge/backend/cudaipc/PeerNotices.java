package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.ControlChannel.CLOSING;
import static io.kvbridge.backend.cudaipc.ControlChannel.INT;
import static io.kvbridge.backend.cudaipc.ControlChannel.SHORT;
import static io.kvbridge.backend.cudaipc.ControlChannel.UNMAP;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.kvbridge.backend.cudaipc.ControlChannel.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The notices an exporter sends on its peers' links and the answers it waits for: a close notice
 * to every peer when the instance closes, an unmap notice to the peers passed a region's descriptor
 * when its last grant is revoked. A requesting thread gets a {@link CloseAcks} to wait on; the
 * control thread sends the notices and counts each connection's answer, or its hang-up, as it comes.
 *
 * <p>Threads: requests from any thread; sending and answers on the control channel's thread.
 */
final class PeerNotices
{
    /** Regions whose last grant was revoked, to be unmapped by the agents that were passed their descriptors. */
    private record UnmapRequest(int[] regionIds, Set<String> agents, CloseAcks acks)
    {
    }

    private final long sendDeadlineNanos;
    private final CloseAcks closeAcks = new CloseAcks();
    private final ConcurrentLinkedQueue<UnmapRequest> unmapRequests = new ConcurrentLinkedQueue<>();

    PeerNotices(long sendDeadlineNanos)
    {
        this.sendDeadlineNanos = sendDeadlineNanos;
    }

    /** @return what to wait on for the close notice's answers. */
    CloseAcks requestClose()
    {
        closeAcks.request();
        return closeAcks;
    }

    /** @return what to wait on for the unmap notice's answers. */
    CloseAcks requestUnmap(int[] regionIds, Set<String> agents)
    {
        CloseAcks acks = new CloseAcks();
        acks.request();
        unmapRequests.add(new UnmapRequest(regionIds.clone(), Set.copyOf(agents), acks));
        return acks;
    }

    /** Sends what was requested since the last round; the control thread. */
    void send(Wire wire, List<Connection> connections)
    {
        UnmapRequest request;
        while ((request = unmapRequests.poll()) != null) {
            int[] ids = request.regionIds();
            List<String> told = new ArrayList<>();
            for (Connection connection : connections) {
                if (!connection.inbound || !connection.primary || !request.agents().contains(connection.agent)) {
                    continue;
                }
                wire.data.set(JAVA_BYTE, 0, UNMAP);
                wire.data.set(SHORT, 1, (short) ids.length);
                for (int i = 0; i < ids.length; i++) {
                    wire.data.set(INT, 3 + 4L * i, ids[i]);
                }
                if (wire.send(connection.fd, 3 + 4 * ids.length, null, 0, System.nanoTime() + sendDeadlineNanos) == null) {
                    connection.awaitingRegions.add(request.acks());
                    told.add(connection.agent);
                }
            }
            request.acks().sent(told);
        }
        if (!closeAcks.due()) {
            return;
        }
        List<String> told = new ArrayList<>();
        for (Connection connection : connections) {
            if (connection.inbound && connection.primary) {
                wire.data.set(JAVA_BYTE, 0, CLOSING);
                if (wire.send(connection.fd, 1, null, 0, System.nanoTime() + sendDeadlineNanos) == null) {
                    connection.awaitingUnmap = true;
                    told.add(connection.agent);
                }
            }
        }
        closeAcks.sent(told);
    }

    /** A peer answered the oldest unmap notice on this connection. */
    void answeredOldestUnmap(Connection connection)
    {
        CloseAcks oldest = connection.awaitingRegions.poll();
        if (oldest != null) {
            oldest.answered(connection.agent);
        }
    }

    /** A peer answered the close notice, or hung up: none of this instance's memory is mapped there any more. */
    void answeredAll(Connection connection)
    {
        CloseAcks pending;
        while ((pending = connection.awaitingRegions.poll()) != null) {
            pending.answered(connection.agent);
        }
        if (connection.awaitingUnmap) {
            connection.awaitingUnmap = false;
            closeAcks.answered(connection.agent);
        }
    }
}
