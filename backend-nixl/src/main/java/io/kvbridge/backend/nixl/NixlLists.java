package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.transport.Coverage;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.PreparedLists;
import io.kvbridge.transport.Registration;
import io.kvbridge.transport.Registrations;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;

/**
 * The prepared lists of one {@code nixl} instance: each descriptor checked against the memory it
 * lies in (local registrations, or the allocations the peer announced) before NIXL prepares it, and
 * the native handle released on the owner thread: when the caller releases the list, when memory it
 * lies in is deregistered, when its peer is forgotten, and at close.
 *
 * <p>Threads: the tracked set is thread-safe; the lists still holding a native handle belong to
 * the owner thread.
 */
final class NixlLists
{
    private final InstanceGuard guard;
    private final NixlOwner owner;
    private final Registrations<NixlRegistration> registrations;
    private final PreparedLists<NixlPreparedList> tracked;
    // owner thread only
    private final List<NixlPreparedList> withHandle = new ArrayList<>();

    NixlLists(InstanceGuard guard, NixlOwner owner, Registrations<NixlRegistration> registrations, PreparedLists<NixlPreparedList> tracked)
    {
        this.guard = requireNonNull(guard, "guard is null");
        this.owner = requireNonNull(owner, "owner is null");
        this.registrations = requireNonNull(registrations, "registrations is null");
        this.tracked = requireNonNull(tracked, "tracked is null");
    }

    PreparedList prepareLocal(DescriptorList descriptors)
    {
        requireNonNull(descriptors, "descriptors is null");
        guard.checkOpen();
        checkNotEmpty(descriptors);
        return owner.call(() -> {
            guard.checkOpen();
            Coverage coverage = registrations.cover(descriptors);
            long[] addresses = descriptors.addresses();
            long[] lengths = descriptors.lengths();
            long handle = owner.agent().prepareLocal(descriptors.kind(), descriptors.device(), addresses, lengths, addresses.length);
            return track(new NixlPreparedList(guard, null, descriptors.kind(), descriptors.device(), addresses, lengths, coverage.registrationIds(),
                    coverage.registrations(), handle));
        });
    }

    /** Prepares a peer's descriptors, given, for one of the instance's peers while it was open. */
    NixlPreparedList prepareRemote(NixlPeer nixlPeer, DescriptorList descriptors)
    {
        checkNotEmpty(descriptors);
        return owner.call(() -> {
            guard.checkOpen();
            nixlPeer.checkUsable("connect() again");
            long[] addresses = descriptors.addresses();
            long[] lengths = descriptors.lengths();
            int[] regionIds = new int[addresses.length];
            RegionTable regions = nixlPeer.regions();
            int region = -1;
            for (int i = 0; i < addresses.length; i++) {
                region = regions.find(descriptors.kind(), descriptors.device(), addresses[i], lengths[i], region);
                if (region < 0) {
                    throw new KvBridgeException(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, String.format(Locale.ROOT,
                            "descriptor %d (address=0x%x, length=%d, %s device %d) lies outside every allocation peer '%s' registered; "
                                    + "the peer must register it and send fresh metadata",
                            i, addresses[i], lengths[i], descriptors.kind(), descriptors.device(), nixlPeer.name()));
                }
                regionIds[i] = region;
            }
            long handle = owner.agent().prepareRemote(nixlPeer.name(), descriptors.kind(), descriptors.device(), addresses, lengths, addresses.length);
            return track(new NixlPreparedList(guard, nixlPeer, descriptors.kind(), descriptors.device(), addresses, lengths, regionIds,
                    new Registration[0], handle));
        });
    }

    private static void checkNotEmpty(DescriptorList descriptors)
    {
        if (descriptors.size() == 0) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "descriptors is empty; NIXL prepares lists of at least one descriptor");
        }
    }

    private NixlPreparedList track(NixlPreparedList list)
    {
        // held first: should the instance close meanwhile, the shutdown still releases the handle
        withHandle.add(list);
        return tracked.add(list);
    }

    void release(NixlPreparedList nixlList)
    {
        if (guard.isClosed()) {
            // close() released every list
            return;
        }
        owner.call(() -> {
            if (tracked.release(nixlList)) {
                releaseHandle(nixlList);
            }
            return null;
        });
    }

    /** NIXL must not use a list over memory that is gone: releases the handles of the lists in a registration; owner thread only. */
    void releaseHandlesIn(Registration registration)
    {
        for (Iterator<NixlPreparedList> lists = withHandle.iterator(); lists.hasNext();) {
            NixlPreparedList list = lists.next();
            for (int r = 0; r < list.registrationCount(); r++) {
                if (list.registration(r) == registration) {
                    lists.remove();
                    owner.agent().releasePrepared(list.takeHandle());
                    break;
                }
            }
        }
    }

    /** Releases the lists of a peer about to be forgotten, or every list for {@code null}; owner thread only. */
    void releaseAll(NixlPeer peer)
    {
        for (NixlPreparedList list : tracked.releaseAll(peer)) {
            releaseHandle(list);
        }
    }

    private void releaseHandle(NixlPreparedList list)
    {
        withHandle.remove(list);
        long handle = list.takeHandle();
        if (handle != 0) {
            owner.agent().releasePrepared(handle);
        }
    }

    /**
     * Releases every list at close, going on past failures; owner thread only.
     *
     * @return the first failure, others suppressed in it, or null.
     */
    RuntimeException closeAll()
    {
        tracked.releaseAll(null);
        RuntimeException first = null;
        for (NixlPreparedList list : withHandle) {
            first = NixlShutdown.attempt(first, () -> owner.agent().releasePrepared(list.takeHandle()));
        }
        withHandle.clear();
        return first;
    }

    /** @return lists not released. */
    int size()
    {
        return tracked.size();
    }
}
