package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The prepared lists one instance has not released, counted for
 * {@link io.kvbridge.spi.transfer.BackendResources#preparedLists()}. Thread-safe.
 *
 * @param <L> the transport's list type.
 */
public final class PreparedLists<L extends OwnedPreparedList>
{
    private final InstanceGuard guard;
    private final Map<L, Boolean> lists = new IdentityHashMap<>();

    /**
     * Creates an empty set.
     *
     * @param guard the instance's guard: adding fails once it is closed.
     */
    public PreparedLists(InstanceGuard guard)
    {
        this.guard = requireNonNull(guard, "guard is null");
    }

    /**
     * Tracks a new list.
     *
     * @param list just prepared.
     * @return the list.
     * @throws io.kvbridge.spi.KvBridgeException {@code CLOSED} when the instance closed meanwhile.
     */
    public synchronized L add(L list)
    {
        guard.checkOpen();
        lists.put(list, Boolean.TRUE);
        return list;
    }

    /**
     * Releases a list: it is unusable from now on.
     *
     * @param list a list of this instance.
     * @return true when it was tracked, false when it was released before.
     */
    public synchronized boolean release(L list)
    {
        list.markReleased();
        return lists.remove(list) != null;
    }

    /**
     * Releases every list that matches, such as the lists of a disconnected peer.
     *
     * @param peer the peer whose lists go, or null for every list.
     * @return the released lists, for the transport to free native handles.
     */
    public synchronized List<L> releaseAll(TransportPeer peer)
    {
        List<L> released = new ArrayList<>();
        lists.keySet().removeIf(list -> {
            if (peer == null || list.transportPeer() == peer) {
                list.markReleased();
                released.add(list);
                return true;
            }
            return false;
        });
        return released;
    }

    /** {@return lists not released} */
    public synchronized int size()
    {
        return lists.size();
    }
}
