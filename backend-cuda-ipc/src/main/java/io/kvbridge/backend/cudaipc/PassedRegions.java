package io.kvbridge.backend.cudaipc;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Opens a peer's regions that reach this process as file descriptors (VMM and shared host memory)
 * when a post first needs them: the peer passes a descriptor only under a grant key whose live
 * grant lies in the region, so the fetch happens with the key the post presents, over an
 * authenticated connection of its own, bounded by a deadline. Later posts to an opened allocation
 * find it open and ask nothing; the check that finds that out allocates nothing.
 */
final class PassedRegions
{
    private static final long FETCH_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final byte[] NO_KEY = new byte[0];

    private final ControlChannel control;
    private final CudaIpcEngine engine;

    PassedRegions(ControlChannel control, CudaIpcEngine engine)
    {
        this.control = control;
        this.engine = engine;
    }

    /**
     * Makes sure every region the post's remote descriptors lie in is open here.
     *
     * @throws KvBridgeException {@code NOT_GRANTED} when the peer passed no descriptor for a region
     *     under the key; {@code PEER_UNKNOWN} when it could not be asked.
     */
    void ensureOpened(CudaIpcList remote, int[] indices, int count, byte[] grantKey)
    {
        CudaIpcPeer peer = (CudaIpcPeer) remote.transportPeer();
        if (peer == null || peer.sameProcess || unopened(remote, indices, count) == null) {
            return;
        }
        synchronized (peer.fetchLock) {
            if (unopened(remote, indices, count) == null) {
                return;
            }
            int[] ids = wanted(remote, indices, count);
            int[] fds = new int[ids.length];
            CudaIpcMetadata metadata = peer.metadata;
            int epoch = peer.revokeEpoch;
            control.fetch(metadata.socketName(), metadata.pid(), metadata.agentName(), grantKey == null ? NO_KEY : grantKey, ids, fds,
                    System.nanoTime() + FETCH_DEADLINE_NANOS);
            Map<Integer, Integer> byRegion = new HashMap<>();
            for (int i = 0; i < ids.length; i++) {
                byRegion.put(ids[i], fds[i]);
            }
            engine.call(() -> {
                // a revoke that came while the descriptors travelled wins: they are closed unopened
                peer.openPassed(byRegion, peer.revokeEpoch == epoch, engine.device(), engine.errno);
                return null;
            });
        }
        CudaIpcPeer.RemoteRegion missing = unopened(remote, indices, count);
        if (missing != null) {
            CudaIpcMetadata.Region region = missing.advertised;
            throw new KvBridgeException(ErrorCode.NOT_GRANTED, String.format(Locale.ROOT, "peer '%s' passed no descriptor of its region %d (0x%x, %d "
                    + "bytes) under %s: it passes one only under a key whose live grant lies in that region; the peer must grant the blocks "
                    + "(grant) under the key this post presents", peer.name(), region.id(), region.address(), region.bytes(),
                    grantKey == null ? "no grant key" : "the grant key presented"));
        }
    }

    /** @return a region of the post's remote descriptors not opened yet, or null; allocation-free. */
    private static CudaIpcPeer.RemoteRegion unopened(CudaIpcList remote, int[] indices, int count)
    {
        for (int i = 0; i < count; i++) {
            CudaIpcPeer.RemoteRegion region = remote.region(remote.regionId(indices[i]));
            if (region.opened == null) {
                return region;
            }
        }
        return null;
    }

    private static int[] wanted(CudaIpcList remote, int[] indices, int count)
    {
        int[] ids = new int[8];
        int size = 0;
        for (int i = 0; i < count; i++) {
            CudaIpcPeer.RemoteRegion region = remote.region(remote.regionId(indices[i]));
            if (region.opened != null || !region.advertised.export().passesDescriptor()) {
                continue;
            }
            int id = region.advertised.id();
            boolean seen = false;
            for (int j = 0; j < size && !seen; j++) {
                seen = ids[j] == id;
            }
            if (!seen) {
                if (size == ids.length) {
                    ids = Arrays.copyOf(ids, size * 2);
                }
                ids[size++] = id;
            }
        }
        return Arrays.copyOf(ids, size);
    }
}
