package io.kvbridge.backend.cudaipc;

import io.kvbridge.backend.cudaipc.CudaIpcMetadata.Export;
import io.kvbridge.backend.cudaipc.CudaIpcMetadata.Region;
import io.kvbridge.backend.cudaipc.ffm.CudaDriver;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.TransportPeer;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcMemory;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connected {@code cuda-ipc} peer: its checked metadata, the outbound control link, and the
 * peer's allocations opened in this process, each opened once however many regions lie in it and
 * closed exactly once, when the peer is disconnected, dies or this instance closes, and only after
 * the last copy touching it has ended.
 *
 * <p>Threads: the metadata and remote regions are replaced by {@code connect} under the owner;
 * mappings, the running count and the completion order belong to the owner thread.
 */
final class CudaIpcPeer extends TransportPeer
{
    private static final Logger LOG = LoggerFactory.getLogger(CudaIpcPeer.class);

    /** One region of the peer as this process reaches it. */
    static final class RemoteRegion
    {
        final Region advertised;
        /** Null until opened: a region passed as a descriptor is opened when a post first needs it, under a grant. */
        volatile Opened opened;

        RemoteRegion(Region advertised, Opened opened)
        {
            this.advertised = advertised;
            this.opened = opened;
        }

        /** @return what to add to a peer address to reach the byte in this process. */
        long delta()
        {
            return opened.localBase - advertised.allocationBase();
        }
    }

    /** One of the peer's allocations opened here. */
    static final class Opened
    {
        final Export export;
        final long remoteBase;
        final long bytes;
        final long localBase;
        final long importedHandle;
        final boolean pinned;

        Opened(Export export, long remoteBase, long bytes, long localBase, long importedHandle, boolean pinned)
        {
            this.export = export;
            this.remoteBase = remoteBase;
            this.bytes = bytes;
            this.localBase = localBase;
            this.importedHandle = importedHandle;
            this.pinned = pinned;
        }
    }

    final boolean sameProcess;
    /** For a peer in this JVM: whether its instance is still open. */
    volatile java.util.function.Supplier<String> localInstance;
    volatile CudaIpcMetadata metadata;
    volatile ControlChannel.Link link;
    /** Sorted by address, as the metadata's regions. */
    volatile RemoteRegion[] regions = new RemoteRegion[0];
    private final Map<Long, Opened> opened = new HashMap<>();
    private boolean closed;
    /** Transfers to this peer in post order: completions are reported in this order (owner thread). */
    final ArrayDeque<CudaIpcTransfer> inOrder = new ArrayDeque<>();
    /** Copies still running against the peer's memory, abandoned ones included (owner thread). */
    int running;

    CudaIpcPeer(InstanceGuard owner, CudaIpcMetadata metadata)
    {
        super(owner, metadata.agentName());
        this.metadata = metadata;
        this.sameProcess = metadata.processToken() == CudaIpcTransferBackend.PROCESS_TOKEN;
    }

    @Override
    public String unusableReason()
    {
        String reason = super.unusableReason();
        java.util.function.Supplier<String> local = localInstance;
        return reason != null || local == null ? reason : local.get();
    }

    /** @return the region holding a whole range, or null; allocation-free. */
    RemoteRegion find(long address, long length)
    {
        RemoteRegion[] current = regions;
        int low = 0;
        int high = current.length - 1;
        while (low <= high) {
            int middle = (low + high) >>> 1;
            if (current[middle].advertised.address() <= address) {
                low = middle + 1;
            }
            else {
                high = middle - 1;
            }
        }
        return high >= 0 && current[high].advertised.contains(address, length) ? current[high] : null;
    }

    /** Allocations detached by the peer's revokes, to close once no copy runs against the peer (owner thread). */
    private final List<Opened> detached = new ArrayList<>();
    /** Revoke notices whose allocations are detached and not yet closed, each answered once they are (owner thread). */
    int revokesToAnswer;
    /** Counts the peer's revoke notices, so that descriptors fetched across one are not opened after it (written by the owner thread). */
    volatile int revokeEpoch;
    /** The peer's instance is closing: once the mappings are closed, tell it so over the link (owner thread). */
    volatile boolean acknowledgeUnmap;
    /** Serialises fetching descriptors from the peer, so that one allocation is fetched and opened once. */
    final Object fetchLock = new Object();

    /**
     * Opens what the metadata advertises that needs no descriptor (legacy IPC handles, a peer in
     * this process); regions passed as descriptors wait for {@link #openPassed}. Owner thread.
     *
     * @param device this instance's device.
     */
    void open(CudaIpcMetadata next, int device, Errno errno)
    {
        List<Region> advertised = next.regions();
        RemoteRegion[] built = new RemoteRegion[advertised.size()];
        for (int i = 0; i < built.length; i++) {
            Region region = advertised.get(i);
            Opened allocation = opened.get(region.allocationBase());
            if (allocation == null && (sameProcess || !region.export().passesDescriptor())) {
                allocation = openAllocation(region, -1, device, errno);
                if (allocation != null) {
                    opened.put(region.allocationBase(), allocation);
                }
            }
            built[i] = new RemoteRegion(region, allocation);
        }
        metadata = next;
        regions = built;
    }

    /**
     * Opens regions whose descriptors the peer passed; owner thread.
     *
     * @param fds region id to descriptor (or -1); taken over (closed here).
     * @param open false to only close the descriptors (a revoke came while they travelled).
     */
    void openPassed(Map<Integer, Integer> fds, boolean open, int device, Errno errno)
    {
        try {
            if (closed || !open) {
                return;
            }
            for (RemoteRegion region : regions) {
                int fd = fds.getOrDefault(region.advertised.id(), -1);
                if (region.opened != null || fd < 0) {
                    continue;
                }
                Opened allocation = opened.get(region.advertised.allocationBase());
                if (allocation == null) {
                    allocation = openAllocation(region.advertised, fd, device, errno);
                    opened.put(region.advertised.allocationBase(), allocation);
                }
                for (RemoteRegion sibling : regions) {
                    if (sibling.opened == null && sibling.advertised.allocationBase() == region.advertised.allocationBase()) {
                        sibling.opened = allocation;
                    }
                }
            }
        }
        finally {
            for (int fd : fds.values()) {
                if (fd >= 0) {
                    Libc.close(fd, errno);
                }
            }
        }
    }

    /** @return the allocation opened, or null when this process cannot reach it (the reason is given at prepareRemote). */
    private Opened openAllocation(Region region, int fd, int device, Errno errno)
    {
        long base = region.allocationBase();
        long bytes = region.allocationBytes();
        if (sameProcess) {
            return new Opened(region.export(), base, bytes, base, 0, false);
        }
        switch (region.export()) {
            case LEGACY_IPC -> {
                long[] pointer = new long[1];
                int rc = CudaDriver.cuIpcOpenMemHandle(pointer, region.handle());
                if (rc != 0) {
                    throw CudaDriver.failure(ErrorCode.PEER_UNKNOWN, rc, "cuIpcOpenMemHandle_v2", String.format(Locale.ROOT,
                            "opening peer '%s''s allocation 0x%x (%d bytes, region %d); the peer must be on this node and its memory still allocated",
                            name(), base, bytes, region.id()));
                }
                return new Opened(Export.LEGACY_IPC, base, bytes, pointer[0], 0, false);
            }
            case VMM_FD -> {
                if (fd < 0) {
                    throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + name() + "' did not pass the descriptor of its VMM region " + region.id());
                }
                long[] out = new long[1];
                int rc = CudaDriver.cuMemImportFromShareableHandle(out, fd);
                if (rc != 0) {
                    throw CudaDriver.failure(ErrorCode.PEER_UNKNOWN, rc, "cuMemImportFromShareableHandle", "importing peer '" + name() + "''s region "
                            + region.id() + " of " + bytes + " bytes");
                }
                long handle = out[0];
                rc = CudaDriver.cuMemAddressReserve(out, bytes);
                if (rc != 0) {
                    CudaDriver.cuMemRelease(handle);
                    throw CudaDriver.failure(ErrorCode.NATIVE_ERROR, rc, "cuMemAddressReserve", "reserving " + bytes + " bytes for peer '" + name() + "'");
                }
                long address = out[0];
                rc = CudaDriver.cuMemMap(address, bytes, handle);
                if (rc == 0 && (rc = CudaDriver.cuMemSetAccess(address, bytes, device)) != 0) {
                    CudaDriver.cuMemUnmap(address, bytes);
                }
                if (rc != 0) {
                    CudaDriver.cuMemAddressFree(address, bytes);
                    CudaDriver.cuMemRelease(handle);
                    throw CudaDriver.failure(ErrorCode.NATIVE_ERROR, rc, "cuMemMap/cuMemSetAccess", "mapping peer '" + name() + "''s region " + region.id());
                }
                return new Opened(Export.VMM_FD, base, bytes, address, handle, false);
            }
            case HOST_SHARED -> {
                if (fd < 0) {
                    throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + name() + "' did not pass the descriptor of its host region " + region.id());
                }
                long address = LibcMemory.mmapShared(fd, bytes, errno);
                if (address == LibcMemory.MAP_FAILED) {
                    throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "mapping peer '" + name() + "''s host region " + region.id() + " (" + bytes
                            + " bytes) failed: errno " + errno.last() + " (" + Libc.strerror(errno.last()) + ")");
                }
                boolean pinned = CudaDriver.cuMemHostRegister(address, bytes, io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_MEMHOSTREGISTER_PORTABLE) == 0;
                return new Opened(Export.HOST_SHARED, base, bytes, address, 0, pinned);
            }
            default -> {
                return null;
            }
        }
    }

    /**
     * Detaches the allocations holding some regions, after the peer revoked its last grant in
     * them: no new copy reaches them (a post fetches their descriptors again, under a grant); they
     * are closed by {@link #closeDetached} once the copies already issued ended. Owner thread.
     */
    void detach(int[] regionIds)
    {
        for (RemoteRegion region : regions) {
            boolean named = false;
            for (int id : regionIds) {
                named |= region.advertised.id() == id;
            }
            if (!named || region.opened == null || sameProcess) {
                continue;
            }
            Opened allocation = opened.remove(region.advertised.allocationBase());
            if (allocation != null) {
                detached.add(allocation);
            }
            for (RemoteRegion sibling : regions) {
                if (sibling.advertised.allocationBase() == region.advertised.allocationBase()) {
                    sibling.opened = null;
                }
            }
        }
        revokesToAnswer++;
        revokeEpoch++;
    }

    /** Closes the detached allocations; owner thread, only when no copy runs against the peer. */
    void closeDetached(Errno errno)
    {
        for (Opened allocation : detached) {
            close(allocation, errno);
        }
        detached.clear();
    }

    /**
     * Tells why a region of this peer cannot be reached from here.
     *
     * @return the reason with its fix, or null when it can.
     */
    String unreachableReason(RemoteRegion region)
    {
        Region advertised = region.advertised;
        if (region.opened != null || (advertised.export().passesDescriptor() && !closed)) {
            return null;
        }
        return String.format(Locale.ROOT, "peer '%s''s region %d (0x%x, %d bytes) is %s memory of another process (pid %d) that cannot be shared%s",
                name(), advertised.id(), advertised.address(), advertised.bytes(), advertised.export().device() ? "device" : "host", metadata.pid(),
                advertised.export() == Export.HOST_PRIVATE
                        ? "; allocate host memory through the transport (allocate(HOST)) so it lives in a shareable memfd, or use device memory"
                        : "; create VMM memory with requestedHandleTypes=CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR");
    }

    /** @return true once the mappings are closed. */
    boolean mappingsClosed()
    {
        return closed;
    }

    /**
     * Closes every opened allocation, once; owner thread, only when no copy runs against them.
     *
     * @return how many were closed.
     */
    int closeMappings(Errno errno)
    {
        if (closed) {
            return 0;
        }
        closed = true;
        regions = new RemoteRegion[0];
        int count = 0;
        for (Opened allocation : opened.values()) {
            count++;
            close(allocation, errno);
        }
        closeDetached(errno);
        opened.clear();
        return count;
    }

    private void close(Opened allocation, Errno errno)
    {
        int rc = switch (allocation.export) {
            case LEGACY_IPC -> sameProcess ? 0 : CudaDriver.cuIpcCloseMemHandle(allocation.localBase);
            case VMM_FD -> {
                if (sameProcess) {
                    yield 0;
                }
                int unmap = CudaDriver.cuMemUnmap(allocation.localBase, allocation.bytes);
                int free = CudaDriver.cuMemAddressFree(allocation.localBase, allocation.bytes);
                int release = CudaDriver.cuMemRelease(allocation.importedHandle);
                yield unmap != 0 ? unmap : free != 0 ? free : release;
            }
            case HOST_SHARED -> {
                if (sameProcess) {
                    yield 0;
                }
                int rc2 = allocation.pinned ? CudaDriver.cuMemHostUnregister(allocation.localBase) : 0;
                LibcMemory.munmap(allocation.localBase, allocation.bytes, errno);
                yield rc2;
            }
            default -> 0;
        };
        if (rc != 0) {
            LOG.warn("closing peer '{}''s allocation 0x{} returned {} ({})", name(), Long.toHexString(allocation.remoteBase), rc, CudaDriver.errorName(rc));
        }
    }
}
