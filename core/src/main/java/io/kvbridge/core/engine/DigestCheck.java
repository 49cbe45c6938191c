package io.kvbridge.core.engine;

import io.kvbridge.api.BlockDigests;
import io.kvbridge.api.Integrity;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import java.util.Locale;

/**
 * A consumer rank's end of the block digests ({@link Integrity#CRC32C}): whether a request's
 * parameters carry digests this rank can compare, and, once its last byte arrived, whether every
 * exchanged block matches. With {@link Integrity#OFF} it checks nothing, and digests a producer sent
 * anyway are ignored.
 *
 * <p>Digests are one producer rank's, so they are compared between single-rank engines (TP 1, PP 1)
 * of one cache shape only; any other pairing is refused with {@code DIGEST_UNAVAILABLE} before
 * anything moves, never skipped. Worker-confined.
 */
final class DigestCheck
{
    /**
     * What a request failed on.
     *
     * @param code {@code DIGEST_UNAVAILABLE} or {@code DIGEST_MISMATCH}.
     * @param message what differs, naming the values and the fix.
     * @param firstInvalid per group, the position in its exchanged blocks of the first mismatch, -1
     *     for a group that matched; null when every block is invalid (nothing could be compared).
     */
    record Failure(ErrorCode code, String message, int[] firstInvalid)
    {
        long groups()
        {
            if (firstInvalid == null) {
                return LayoutRules.ALL_GROUPS;
            }
            long groups = 0;
            for (int g = 0; g < firstInvalid.length; g++) {
                if (firstInvalid[g] >= 0) {
                    groups |= g < Long.SIZE ? 1L << g : LayoutRules.ALL_GROUPS;
                }
            }
            return groups;
        }
    }

    private final String name;
    private final CacheGeometry geometry;
    // null when integrity is off
    private final BlockDigester digester;

    DigestCheck(String name, CacheGeometry geometry, Integrity integrity)
    {
        this.name = name;
        this.geometry = geometry;
        this.digester = integrity == Integrity.OFF ? null : new BlockDigester(geometry);
    }

    /** {@return why the request's digests cannot be compared, before anything moves; null when they can or integrity is off} */
    Failure unavailable(String requestId, TransferParams params, int[][] exchanged)
    {
        if (digester == null) {
            return null;
        }
        BlockDigests digests = params.digests();
        String reason = null;
        if (digests.isNone()) {
            reason = String.format(Locale.ROOT, "producer %s sent no block digests for request %s (its integrity is off, or the router dropped"
                    + " kvbridge.digests); set integrity=crc32c on the producer, or integrity=off on this consumer", params.engineId(), requestId);
        }
        else if (params.tpSize() != 1 || params.ppSize() != 1 || geometry.rank().tpSize() != 1 || geometry.rank().ppSize() != 1) {
            reason = String.format(Locale.ROOT, "block digests are compared between single-rank engines only (producer %s tp=%d pp=%d, consumer"
                    + " rank %s): the parameters carry one producer rank's digests; set integrity=off for this pairing", params.engineId(),
                    params.tpSize(), params.ppSize(), geometry.rank());
        }
        else if (digests.shape() != digester.shape()) {
            reason = String.format(Locale.ROOT, "producer %s digests blocks of shape %08x but this rank's shape is %08x (layout, block size or"
                    + " regions differ), so a producer block is not one block here; use equal cache shapes or set integrity=off",
                    params.engineId(), digests.shape(), digester.shape());
        }
        else {
            for (int g = 0; g < exchanged.length && reason == null; g++) {
                if (g >= digests.groupCount() || digests.size(g) < exchanged[g].length) {
                    reason = String.format(Locale.ROOT, "producer %s sent %d digests for group %d but this rank receives %d blocks of it",
                            params.engineId(), g < digests.groupCount() ? digests.size(g) : 0, g, exchanged[g].length);
                }
            }
        }
        return reason == null ? null : new Failure(ErrorCode.DIGEST_UNAVAILABLE, name + ": " + reason, null);
    }

    /**
     * Compares every exchanged block with the producer's digest, after the last byte arrived;
     * allocates nothing when all match.
     *
     * @return null when every block matches or integrity is off; else the mismatch.
     */
    Failure verify(String requestId, TransferParams params, int[][] exchanged)
    {
        if (digester == null) {
            return null;
        }
        BlockDigests digests = params.digests();
        int[] firstInvalid = null;
        for (int g = 0; g < exchanged.length; g++) {
            int position = digester.firstMismatch(g, exchanged[g], digests, digests.size(g) - exchanged[g].length);
            if (position >= 0) {
                if (firstInvalid == null) {
                    firstInvalid = new int[exchanged.length];
                    java.util.Arrays.fill(firstInvalid, -1);
                }
                firstInvalid[g] = position;
            }
        }
        if (firstInvalid == null) {
            return null;
        }
        StringBuilder which = new StringBuilder();
        for (int g = 0; g < firstInvalid.length; g++) {
            if (firstInvalid[g] >= 0) {
                which.append(which.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "group %d from block id %d (exchanged position %d of %d)",
                        g, exchanged[g][firstInvalid[g]], firstInvalid[g], exchanged[g].length));
            }
        }
        return new Failure(ErrorCode.DIGEST_MISMATCH, String.format(Locale.ROOT, "%s: the blocks of request %s from producer %s request %s differ"
                + " from the producer's CRC32C digests in %s: changed in flight or after prefillFinished; they were not delivered (recompute,"
                + " or check the transport and the producer's memory)", name, requestId, params.engineId(), params.requestId(), which), firstInvalid);
    }
}
