package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import java.util.Locale;

/**
 * The checks every {@link io.kvbridge.spi.transfer.TransferBackend#post} makes, in one place so
 * every transport refuses the same mistakes with the same codes and messages, and the one loop that
 * turns checked index pairs into coalesced copies. Nothing here allocates unless a check fails.
 */
public final class PostChecks
{
    private PostChecks()
    {
    }

    /**
     * Makes the opening checks of a post in the order every transport makes them: the request
     * complete ({@link #complete}), the instance open, both lists this instance's own and of its
     * list type, on the right sides with the count fitting both index arrays ({@link #check}), the
     * notification within the transport's limit ({@link #notification}), the grant key a key
     * ({@link #grantKey}), and both lists still usable ({@link #usable}). The caller then casts the
     * request's lists to {@code type}, which this checked. Allocates nothing unless a check fails.
     *
     * @param guard the posting instance's guard.
     * @param type the instance's list type.
     * @param request the caller's request; untrusted.
     * @param maxNotificationBytes the transport's limit for the notification.
     * @throws KvBridgeException {@code CLOSED}, and as the checks named above say.
     */
    public static void opening(InstanceGuard guard, Class<? extends OwnedPreparedList> type, TransferRequest request, int maxNotificationBytes)
    {
        complete(request);
        guard.checkOpen();
        OwnedPreparedList local = guard.own(request.local(), type);
        OwnedPreparedList remote = guard.own(request.remote(), type);
        check(local, request.localIndices(), remote, request.remoteIndices(), request.count());
        notification(request.notification(), maxNotificationBytes);
        grantKey(request.grantKey());
        usable(local, remote);
    }

    /**
     * Checks that a request names every part a post needs, before anything else is looked at.
     *
     * @param request the caller's request.
     * @throws NullPointerException for a null request.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} naming the first part missing and the call that sets it.
     */
    public static void complete(TransferRequest request)
    {
        requireNonNull(request, "request is null");
        if (request.op() == null) {
            throw incomplete("no operation", "start(TransferOp)");
        }
        if (request.local() == null || request.localIndices() == null) {
            throw incomplete("no local list or indices", "local(list, indices)");
        }
        if (request.remote() == null || request.remoteIndices() == null) {
            throw incomplete("no remote list or indices", "remote(list, indices)");
        }
        if (request.count() == TransferRequest.NO_COUNT) {
            throw incomplete("no count", "count(pairs)");
        }
    }

    private static KvBridgeException incomplete(String missing, String setter)
    {
        return new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "the transfer request has " + missing + "; call " + setter + " after start() and before post()");
    }

    /**
     * Checks a grant key presented with a post: none, or as long as a grant's key may be.
     *
     * @param grantKey the key, or null for none.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for an empty or too long key.
     */
    public static void grantKey(byte[] grantKey)
    {
        // not checkArgument: its varargs array is a per-post allocation wherever the JIT does not remove it
        if (grantKey != null && (grantKey.length == 0 || grantKey.length > TransferBackend.MAX_GRANT_KEY_BYTES)) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "grant key of " + grantKey.length + " bytes (expected: 1 to "
                    + TransferBackend.MAX_GRANT_KEY_BYTES + ", or null for none)");
        }
    }

    /**
     * Copies the grant key a checked request presents into a transfer's reused buffer, for a
     * transport that sends the key after {@code post} returned.
     *
     * @param request a request that passed {@link #opening}.
     * @param into the transfer's buffer of {@link TransferBackend#MAX_GRANT_KEY_BYTES} bytes.
     * @return the key's length; 0 when the request presents none.
     */
    public static int copyGrantKey(TransferRequest request, byte[] into)
    {
        byte[] key = request.grantKey();
        if (key == null) {
            return 0;
        }
        System.arraycopy(key, 0, into, 0, key.length);
        return key.length;
    }

    /**
     * Checks that the lists sit on the right sides and that {@code count} fits both index arrays.
     *
     * @param local the list passed as local; must come from {@code prepareLocal}.
     * @param localIndices indices into {@code local}.
     * @param remote the list passed as remote; must come from {@code prepareRemote}.
     * @param remoteIndices indices into {@code remote}.
     * @param count number of pairs.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for swapped lists, {@code LENGTH_MISMATCH}
     *     for a count outside {@code [0, min(localIndices.length, remoteIndices.length)]}.
     */
    public static void check(PreparedList local, int[] localIndices, PreparedList remote, int[] remoteIndices, int count)
    {
        if (local.peer() != null) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "the local list was prepared with prepareRemote(); pass a prepareLocal() list");
        }
        if (remote.peer() == null) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "the remote list was prepared with prepareLocal(); pass a prepareRemote() list");
        }
        if (count < 0 || count > localIndices.length || count > remoteIndices.length) {
            throw new KvBridgeException(ErrorCode.LENGTH_MISMATCH, "count=" + count + " but localIndices.length=" + localIndices.length
                    + " and remoteIndices.length=" + remoteIndices.length + " (expected: 0 <= count <= both)");
        }
    }

    /**
     * Checks that both lists can still be used: not released, peer usable, memory registered.
     *
     * @param local the local list.
     * @param remote the remote list.
     * @throws KvBridgeException {@code PEER_UNKNOWN} when the remote list's peer cannot be used,
     *     {@code NOT_REGISTERED} for a released list or deregistered memory.
     */
    public static void usable(OwnedPreparedList local, OwnedPreparedList remote)
    {
        String reason = local.unusableReason();
        if (reason == null) {
            reason = remote.unusableReason();
        }
        if (reason == null) {
            return;
        }
        TransportPeer peer = remote.transportPeer();
        String peerProblem = peer == null ? null : peer.unusableReason();
        if (peerProblem != null && !remote.released()) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot post to peer '" + peer.name() + "': " + peerProblem
                    + "; connect again and prepare a new list");
        }
        throw new KvBridgeException(ErrorCode.NOT_REGISTERED, "cannot post: " + reason);
    }

    /**
     * Checks a notification's size against what the transport can carry.
     *
     * @param notification the bytes, or null for none.
     * @param maxBytes the transport's limit.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} when it is larger.
     */
    public static void notification(byte[] notification, int maxBytes)
    {
        if (notification != null && notification.length > maxBytes) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "notification of " + notification.length + " bytes exceeds " + maxBytes
                    + " bytes; send larger payloads as data");
        }
    }

    /**
     * Checks every index pair against its lists, for a transport that hands the indices to a
     * library as they are instead of resolving copies itself.
     *
     * @param request a request that passed {@link #opening}; its indices untrusted.
     * @throws KvBridgeException {@code INDEX_OUT_OF_RANGE} or {@code LENGTH_MISMATCH} naming the first bad pair.
     */
    public static void pairs(TransferRequest request)
    {
        OwnedPreparedList local = (OwnedPreparedList) request.local();
        OwnedPreparedList remote = (OwnedPreparedList) request.remote();
        int[] localIndices = request.localIndices();
        int[] remoteIndices = request.remoteIndices();
        int count = request.count();
        int localSize = local.size();
        int remoteSize = remote.size();
        for (int i = 0; i < count; i++) {
            int l = localIndices[i];
            int r = remoteIndices[i];
            if (l < 0 || l >= localSize || r < 0 || r >= remoteSize || local.length(l) != remote.length(r)) {
                throw badPair(i, local, l, remote, r);
            }
        }
    }

    /**
     * Checks every index pair against its lists and resolves the pairs into copies: each pair's
     * ranges with the region each side lies in, merged with the copy before when
     * {@code coalesce} and contiguous on both sides within the same regions.
     *
     * @param copies the transfer's reused buffer; emptied first.
     * @param request a request that passed {@link #opening}; its indices untrusted.
     * @param coalesce whether runs merge.
     * @return the bytes the pairs move.
     * @throws KvBridgeException {@code INDEX_OUT_OF_RANGE} or {@code LENGTH_MISMATCH} naming the first bad pair.
     */
    public static long resolve(DescriptorPairs copies, TransferRequest request, boolean coalesce)
    {
        OwnedPreparedList local = (OwnedPreparedList) request.local();
        OwnedPreparedList remote = (OwnedPreparedList) request.remote();
        int[] localIndices = request.localIndices();
        int[] remoteIndices = request.remoteIndices();
        int count = request.count();
        copies.clear(count);
        int localSize = local.size();
        int remoteSize = remote.size();
        long bytes = 0;
        for (int i = 0; i < count; i++) {
            int l = localIndices[i];
            int r = remoteIndices[i];
            if (l < 0 || l >= localSize || r < 0 || r >= remoteSize || local.length(l) != remote.length(r)) {
                throw badPair(i, local, l, remote, r);
            }
            long length = local.length(l);
            copies.add(local.address(l), local.regionId(l), remote.address(r), remote.regionId(r), length, coalesce);
            bytes += length;
        }
        return bytes;
    }

    // built only once a pair failed, so a passing check boxes nothing
    private static KvBridgeException badPair(int i, OwnedPreparedList local, int l, OwnedPreparedList remote, int r)
    {
        if (l < 0 || l >= local.size() || r < 0 || r >= remote.size()) {
            return new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, String.format(Locale.ROOT,
                    "pair %d: local index %d of %d descriptors, remote index %d of %d descriptors", i, l, local.size(), r, remote.size()));
        }
        return new KvBridgeException(ErrorCode.LENGTH_MISMATCH, String.format(Locale.ROOT,
                "pair %d: local descriptor %d has %d bytes but remote descriptor %d has %d bytes", i, l, local.length(l), r, remote.length(r)));
    }
}
