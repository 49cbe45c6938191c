package io.kvbridge.backend.nixl;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.OwnedPreparedList;
import io.kvbridge.transport.Registration;

/**
 * A descriptor list NIXL prepared. The descriptors stay on the Java side (in the toolkit's list) so
 * indices and lengths are checked before NIXL sees them.
 *
 * <p>Threads: the native handle is written only on the owner thread, which alone passes it to NIXL;
 * volatile so a poster's check sees that it was released.
 */
final class NixlPreparedList extends OwnedPreparedList
{
    // the NIXL prepared-list handle; 0 once released (by the caller, a deregistration, a disconnect or a close)
    private volatile long handle;
    private final StrideRuns runs;

    NixlPreparedList(InstanceGuard owner, NixlPeer peer, MemoryKind kind, int device, long[] addresses, long[] lengths, int[] regionIds,
            Registration[] registrations, long handle)
    {
        super(owner, peer, kind, device, addresses, lengths, regionIds, registrations);
        this.handle = handle;
        this.runs = StrideRuns.of(addresses, lengths, regionIds);
    }

    /** @return the runs NIXL compressed the list into, for the merged descriptor count of a post. */
    StrideRuns runs()
    {
        return runs;
    }

    long handle()
    {
        return handle;
    }

    /**
     * Forgets the native handle; owner thread only.
     *
     * @return the handle to release with NIXL, or 0 when it was released before.
     */
    long takeHandle()
    {
        long taken = handle;
        handle = 0;
        return taken;
    }

    @Override
    protected String transportUnusableReason()
    {
        return handle == 0 ? "the prepared list's NIXL handle was released; prepare it again" : null;
    }
}
