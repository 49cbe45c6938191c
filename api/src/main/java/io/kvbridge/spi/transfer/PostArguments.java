package io.kvbridge.spi.transfer;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

/**
 * The argument checks every {@link TransferBackend#post} makes before it looks at a single index,
 * in one place so every transport refuses the same mistakes with the same codes and messages.
 */
public final class PostArguments
{
    private PostArguments()
    {
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
}
