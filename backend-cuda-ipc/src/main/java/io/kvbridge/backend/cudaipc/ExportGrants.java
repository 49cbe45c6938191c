package io.kvbridge.backend.cudaipc;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Which exported regions a grant key opens. A peer in another process reaches a VMM or shared host
 * allocation through its file descriptor, and a descriptor opens the whole allocation: so a
 * descriptor is passed only to an authenticated peer presenting a key under which a live grant
 * lies in that region. The byte ranges of a grant cannot be enforced past the descriptor (the copies
 * are the importer's own); the allocation is the unit of access.
 *
 * <p>Threads: any; one lock.
 */
final class ExportGrants
{
    private static final int MAX_PEERS_REPORTED = 8;

    private record Grant(long handle, ByteBuffer key, int[] regionIds)
    {
    }

    private final String description;
    private final Map<ByteBuffer, List<Grant>> byKey = new HashMap<>();
    private final Map<Long, Grant> byHandle = new HashMap<>();
    private final Map<String, String> lastRefusalByPeer = new LinkedHashMap<>();
    private long nextHandle = 1;
    private long refusals;

    ExportGrants(String description)
    {
        this.description = description;
    }

    /**
     * @param key copied.
     * @param regionIds the exported regions the granted descriptors lie in.
     * @return the grant's handle, never 0.
     */
    synchronized long grant(byte[] key, int[] regionIds)
    {
        long handle = nextHandle++;
        Grant grant = new Grant(handle, ByteBuffer.wrap(key.clone()), regionIds.clone());
        byKey.computeIfAbsent(grant.key(), ignored -> new ArrayList<>()).add(grant);
        byHandle.put(handle, grant);
        return handle;
    }

    /**
     * Ends a grant; unknown handles are ignored.
     *
     * @return the regions the grant named, or an empty array when it was unknown.
     */
    synchronized int[] revoke(long handle)
    {
        Grant grant = byHandle.remove(handle);
        if (grant == null) {
            return new int[0];
        }
        List<Grant> ofKey = byKey.get(grant.key());
        ofKey.remove(grant);
        if (ofKey.isEmpty()) {
            byKey.remove(grant.key());
        }
        return grant.regionIds();
    }

    /** @return whether a live grant under the key lies in the region. */
    synchronized boolean covers(byte[] key, int keyLength, int regionId)
    {
        if (keyLength <= 0) {
            return false;
        }
        List<Grant> ofKey = byKey.get(ByteBuffer.wrap(key, 0, keyLength));
        if (ofKey == null) {
            return false;
        }
        for (Grant grant : ofKey) {
            for (int id : grant.regionIds()) {
                if (id == regionId) {
                    return true;
                }
            }
        }
        return false;
    }

    /** @return whether any live grant, under any key, lies in the region. */
    synchronized boolean anyLiveIn(int regionId)
    {
        for (Grant grant : byHandle.values()) {
            for (int id : grant.regionIds()) {
                if (id == regionId) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Counts a refused descriptor request and keeps the latest reason per peer. */
    synchronized void refused(String peer, String reason)
    {
        refusals++;
        lastRefusalByPeer.remove(peer);
        if (lastRefusalByPeer.size() == MAX_PEERS_REPORTED) {
            lastRefusalByPeer.remove(lastRefusalByPeer.keySet().iterator().next());
        }
        lastRefusalByPeer.put(peer, reason);
    }

    synchronized long refusals()
    {
        return refusals;
    }

    synchronized int live()
    {
        return byHandle.size();
    }

    /** @return the refused requests naming the latest peers, or empty when none was refused. */
    synchronized Optional<String> problem()
    {
        if (refusals == 0) {
            return Optional.empty();
        }
        StringBuilder text = new StringBuilder(description).append(" refused ").append(refusals)
                .append(" descriptor requests outside the requesting peers' grants; latest");
        lastRefusalByPeer.forEach((peer, reason) -> text.append(" [peer '").append(peer).append("': ").append(reason).append(']'));
        return Optional.of(text.toString());
    }
}
