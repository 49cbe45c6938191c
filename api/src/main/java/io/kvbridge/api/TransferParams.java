package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * What the router hands from a producer to a consumer for one request: who holds the blocks and how
 * to reach every stage of that engine. A producer rank returns them from
 * {@link ProducerConnector#prefillFinished}; the consumer passes them to
 * {@link ConsumerConnector#blocksAllocated}.
 *
 * <p>In push mode a router may hand parameters to the consumer before the prefill finished: then
 * {@code requestId} may be empty and {@code blockIds} empty; the producer matches the consumer's
 * registration by request id (or base id, see {@link RequestIds#baseId}).
 *
 * @param engineId the producer engine's id; no control or format characters and no {@code /}, since it
 *     names directory keys and appears in logs.
 * @param requestId the producer's id of the request; notifications are keyed by it; empty when not known yet (push);
 *     no control or format characters, since it appears in logs.
 * @param sideChannels side channel of each producer pipeline stage, index = {@code ppRank}; stages
 *     served by one process share one address.
 * @param tpSize producer tensor-parallel size.
 * @param ppSize producer pipeline-parallel size; equals {@code sideChannels.size()}.
 * @param blockIds the producer's logical block ids per cache group.
 * @param modes the transfer modes the producer serves.
 * @param leaseMillis how long the producer holds the blocks without news from the consumer, in milliseconds;
 *     consumers send heartbeats every sixth of it.
 * @param finishedNanos when the prefill finished, on the producer's monotonic clock (the clock its side
 *     channel stamps its replies with, so that a consumer that shook hands with it can translate the
 *     instant to its own clock); {@link #UNKNOWN_TIME} when not known (parameters handed over before
 *     the prefill finished). Only metrics read it.
 * @param epochs the epoch of each stage's side channel, index = {@code ppRank}: the incarnation of the
 *     process serving it, drawn when that process started the side channel, so that a consumer tells
 *     a restarted producer from the one that issued these parameters (it fails the request with
 *     {@code STALE_EPOCH} instead of reading a restarted peer's memory). {@link #UNKNOWN_EPOCH} for a
 *     stage whose epoch the issuing process does not know (a stage served by another process; see
 *     {@link #withEpochsOf}); stages with one side channel name one epoch.
 * @param pullKeys the key each stage granted the request's blocks under for pulling consumers, index =
 *     {@code ppRank}: secret, drawn by the process serving the stage, so that only a holder of these
 *     parameters reads the request; {@link PullKey#NONE} for a stage whose key the issuing process
 *     does not know (a stage served by another process, merged in by {@link #withEpochsOf}) or that
 *     grants no pulls. A consumer pulls only from stages whose key it is given; stages with one side
 *     channel name one key. {@link #toString()} does not show them.
 * @param digests the CRC32C of every block as the issuing producer rank held it at
 *     {@code prefillFinished} ({@link Integrity#CRC32C}), one per id of {@code blockIds};
 *     {@link BlockDigests#NONE} when the producer computes none.
 *
 * <p>The JSON form a router carries is {@code io.kvbridge.json.TransferParamsJson}, in the artifact
 * {@code kvbridge-json}, which keeps this module free of any library.
 */
public record TransferParams(
        String engineId,
        String requestId,
        List<SideChannelAddress> sideChannels,
        int tpSize,
        int ppSize,
        BlockIds blockIds,
        Set<TransferMode> modes,
        long leaseMillis,
        long finishedNanos,
        List<Long> epochs,
        List<PullKey> pullKeys,
        BlockDigests digests)
{
    /** {@link #finishedNanos} of parameters that do not say when the prefill finished. */
    public static final long UNKNOWN_TIME = Long.MIN_VALUE;
    /** An entry of {@link #epochs} for a stage whose epoch is not known; no engine draws it. */
    public static final long UNKNOWN_EPOCH = 0;

    /** Validates and copies. */
    public TransferParams
    {
        requireNonNull(engineId, "engineId is null");
        requireNonNull(requestId, "requestId is null");
        requireNonNull(blockIds, "blockIds is null");
        checkArgument(!engineId.isEmpty(), "engineId is empty");
        String engineIdProblem = idProblem(engineId, true);
        checkArgument(engineIdProblem == null, "engineId %s", engineIdProblem);
        String requestIdProblem = idProblem(requestId, false);
        checkArgument(requestIdProblem == null, "requestId %s", requestIdProblem);
        sideChannels = List.copyOf(requireNonNull(sideChannels, "sideChannels is null"));
        requireNonNull(modes, "modes is null");
        checkArgument(!modes.isEmpty(), "modes is empty (expected: push, pull or both)");
        modes = Set.copyOf(EnumSet.copyOf(modes));
        checkArgument(tpSize > 0, "tpSize=%d is not positive", tpSize);
        checkArgument(ppSize > 0, "ppSize=%d is not positive", ppSize);
        checkArgument(sideChannels.size() == ppSize, "%d side channels given for ppSize=%d (expected: one per pipeline stage)",
                sideChannels.size(), ppSize);
        checkArgument(leaseMillis > 0, "leaseMillis=%d is not positive", leaseMillis);
        epochs = List.copyOf(requireNonNull(epochs, "epochs is null"));
        checkArgument(epochs.size() == ppSize, "%d epochs given for ppSize=%d (expected: one per pipeline stage, %d when not known)",
                epochs.size(), ppSize, UNKNOWN_EPOCH);
        for (int stage = 1; stage < ppSize; stage++) {
            int first = sideChannels.indexOf(sideChannels.get(stage));
            checkArgument(epochs.get(first).longValue() == epochs.get(stage).longValue(),
                    "stages %d and %d share side channel %s but name epochs %s and %s (expected: one process, one epoch)", first, stage,
                    sideChannels.get(stage), formatEpoch(epochs.get(first)), formatEpoch(epochs.get(stage)));
        }
        pullKeys = List.copyOf(requireNonNull(pullKeys, "pullKeys is null"));
        checkArgument(pullKeys.size() == ppSize, "%d pull keys given for ppSize=%d (expected: one per pipeline stage, PullKey.NONE when not known)",
                pullKeys.size(), ppSize);
        for (int stage = 1; stage < ppSize; stage++) {
            int first = sideChannels.indexOf(sideChannels.get(stage));
            checkArgument(pullKeys.get(first).equals(pullKeys.get(stage)), "stages %d and %d share side channel %s but name different pull keys"
                    + " (expected: one process, one key)", first, stage, sideChannels.get(stage));
        }
        requireNonNull(digests, "digests is null");
        checkArgument(digests.isNone() || digests.fits(blockIds), "%s do not match blockIds=%s (expected: one digest per block id of every group)",
                digests, blockIds);
    }

    /**
     * Creates parameters without block digests, as a producer with {@link Integrity#OFF} does.
     *
     * @param engineId the producer engine's id.
     * @param requestId the producer's id of the request, or empty.
     * @param sideChannels side channel of each producer pipeline stage.
     * @param tpSize producer tensor-parallel size.
     * @param ppSize producer pipeline-parallel size.
     * @param blockIds the producer's block ids per cache group.
     * @param modes the transfer modes the producer serves.
     * @param leaseMillis the producer's lease in milliseconds.
     * @param finishedNanos when the prefill finished on the producer's clock, or {@link #UNKNOWN_TIME}.
     * @param epochs the epoch of each stage's side channel.
     * @param pullKeys the pull key of each stage.
     */
    public TransferParams(String engineId, String requestId, List<SideChannelAddress> sideChannels, int tpSize, int ppSize, BlockIds blockIds,
            Set<TransferMode> modes, long leaseMillis, long finishedNanos, List<Long> epochs, List<PullKey> pullKeys)
    {
        this(engineId, requestId, sideChannels, tpSize, ppSize, blockIds, modes, leaseMillis, finishedNanos, epochs, pullKeys, BlockDigests.NONE);
    }

    /**
     * Creates parameters that name no pull key, as a producer that serves no pulls or predates pull
     * keys would: a consumer cannot pull with them.
     *
     * @param engineId the producer engine's id.
     * @param requestId the producer's id of the request, or empty.
     * @param sideChannels side channel of each producer pipeline stage.
     * @param tpSize producer tensor-parallel size.
     * @param ppSize producer pipeline-parallel size.
     * @param blockIds the producer's block ids per cache group.
     * @param modes the transfer modes the producer serves.
     * @param leaseMillis the producer's lease in milliseconds.
     * @param finishedNanos when the prefill finished on the producer's clock, or {@link #UNKNOWN_TIME}.
     * @param epochs the epoch of each stage's side channel.
     */
    public TransferParams(String engineId, String requestId, List<SideChannelAddress> sideChannels, int tpSize, int ppSize, BlockIds blockIds,
            Set<TransferMode> modes, long leaseMillis, long finishedNanos, List<Long> epochs)
    {
        this(engineId, requestId, sideChannels, tpSize, ppSize, blockIds, modes, leaseMillis, finishedNanos, epochs,
                Collections.nCopies(Math.max(ppSize, 0), PullKey.NONE));
    }

    /**
     * Creates parameters that name no epoch, as a producer that predates epochs would: a consumer
     * then cannot tell whether the producer restarted since.
     *
     * @param engineId the producer engine's id.
     * @param requestId the producer's id of the request, or empty.
     * @param sideChannels side channel of each producer pipeline stage.
     * @param tpSize producer tensor-parallel size.
     * @param ppSize producer pipeline-parallel size.
     * @param blockIds the producer's block ids per cache group.
     * @param modes the transfer modes the producer serves.
     * @param leaseMillis the producer's lease in milliseconds.
     * @param finishedNanos when the prefill finished on the producer's clock, or {@link #UNKNOWN_TIME}.
     */
    public TransferParams(String engineId, String requestId, List<SideChannelAddress> sideChannels, int tpSize, int ppSize, BlockIds blockIds,
            Set<TransferMode> modes, long leaseMillis, long finishedNanos)
    {
        this(engineId, requestId, sideChannels, tpSize, ppSize, blockIds, modes, leaseMillis, finishedNanos,
                Collections.nCopies(Math.max(ppSize, 0), UNKNOWN_EPOCH));
    }

    /**
     * Creates parameters that do not say when the prefill finished and name no epoch.
     *
     * @param engineId the producer engine's id.
     * @param requestId the producer's id of the request, or empty.
     * @param sideChannels side channel of each producer pipeline stage.
     * @param tpSize producer tensor-parallel size.
     * @param ppSize producer pipeline-parallel size.
     * @param blockIds the producer's block ids per cache group.
     * @param modes the transfer modes the producer serves.
     * @param leaseMillis the producer's lease in milliseconds.
     */
    public TransferParams(String engineId, String requestId, List<SideChannelAddress> sideChannels, int tpSize, int ppSize, BlockIds blockIds,
            Set<TransferMode> modes, long leaseMillis)
    {
        this(engineId, requestId, sideChannels, tpSize, ppSize, blockIds, modes, leaseMillis, UNKNOWN_TIME);
    }

    /**
     * Returns a copy with another producer request id, as a push consumer learns it.
     *
     * @param producerRequestId the id.
     * @return the copy.
     */
    public TransferParams withRequestId(String producerRequestId)
    {
        return new TransferParams(engineId, producerRequestId, sideChannels, tpSize, ppSize, blockIds, modes, leaseMillis, finishedNanos, epochs,
                pullKeys, digests);
    }

    /**
     * Returns a copy that carries block digests, as a producer with {@link Integrity#CRC32C} issues it.
     *
     * @param blockDigests one digest per block id.
     * @return the copy.
     */
    public TransferParams withDigests(BlockDigests blockDigests)
    {
        return new TransferParams(engineId, requestId, sideChannels, tpSize, ppSize, blockIds, modes, leaseMillis, finishedNanos, epochs,
                pullKeys, blockDigests);
    }

    /**
     * Returns a copy that also names the epochs and pull keys another stage's parameters for the
     * same request know: pipeline stages in separate processes each know their own epoch and key
     * only, so a router that collects every stage's {@code prefillFinished} result merges them to
     * have every stage checked, and to let a consumer pull from every stage.
     *
     * @param other another stage's parameters of the same engine, side channels and request.
     * @return the copy, with every epoch and pull key either names, and this one's digests (a stage's digests cover its own
     *     layers only, so they are not merged).
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} when the two describe other
     *     engines, side channels or requests, or name two epochs or two pull keys for one stage (it
     *     restarted between them).
     */
    public TransferParams withEpochsOf(TransferParams other)
    {
        requireNonNull(other, "other is null");
        checkArgument(engineId.equals(other.engineId) && requestId.equals(other.requestId) && sideChannels.equals(other.sideChannels),
                "parameters of engine %s request %s at %s cannot take the epochs of engine %s request %s at %s (expected: one request's"
                        + " parameters from every stage)", engineId, requestId, sideChannels, other.engineId, other.requestId, other.sideChannels);
        Long[] merged = new Long[ppSize];
        for (int stage = 0; stage < ppSize; stage++) {
            long mine = epochs.get(stage);
            long theirs = other.epochs.get(stage);
            checkArgument(mine == UNKNOWN_EPOCH || theirs == UNKNOWN_EPOCH || mine == theirs,
                    "stage %d of engine %s is named with epochs %s and %s: it restarted between the two prefillFinished calls", stage, engineId,
                    formatEpoch(mine), formatEpoch(theirs));
            merged[stage] = mine != UNKNOWN_EPOCH ? mine : theirs;
        }
        PullKey[] keys = new PullKey[ppSize];
        for (int stage = 0; stage < ppSize; stage++) {
            PullKey mine = pullKeys.get(stage);
            PullKey theirs = other.pullKeys.get(stage);
            checkArgument(mine.isNone() || theirs.isNone() || mine.equals(theirs),
                    "stage %d of engine %s is named with two pull keys: it restarted between the two prefillFinished calls, or these are"
                            + " parameters of two requests under one id", stage, engineId);
            keys[stage] = mine.isNone() ? theirs : mine;
        }
        return new TransferParams(engineId, requestId, sideChannels, tpSize, ppSize, blockIds, modes, leaseMillis, finishedNanos, List.of(merged),
                List.of(keys), digests);
    }

    /**
     * Returns the pull key of a stage.
     *
     * @param ppRank the stage.
     * @return its key, or {@link PullKey#NONE}.
     */
    public PullKey pullKey(int ppRank)
    {
        return pullKeys.get(ppRank);
    }

    /** {@return the parameters as text for logs and messages; pull keys show only whether they are known} */
    @Override
    public String toString()
    {
        return "TransferParams[engineId=" + engineId + ", requestId=" + requestId + ", sideChannels=" + sideChannels + ", tpSize=" + tpSize
                + ", ppSize=" + ppSize + ", blockIds=" + blockIds + ", modes=" + modes + ", leaseMillis=" + leaseMillis + ", finishedNanos="
                + finishedNanos + ", epochs=" + epochs.stream().map(TransferParams::formatEpoch).toList() + ", pullKeys=" + pullKeys + ", digests=" + digests + "]";
    }

    /**
     * Returns the epoch of a stage's side channel.
     *
     * @param ppRank the stage.
     * @return its epoch, or {@link #UNKNOWN_EPOCH}.
     */
    public long epoch(int ppRank)
    {
        return epochs.get(ppRank);
    }

    /**
     * Checks the characters of an id that reaches logs (and, for an engine id, directory keys):
     * control characters would forge log lines, format characters (such as bidirectional overrides)
     * would hide what a line says, and {@code /} would reach another engine's directory keys.
     * The constructor refuses such an id; a reader of parameters (the JSON codec) asks first, to
     * report the id among every other problem of the document.
     *
     * @param id the id.
     * @param engine whether it is an engine id, which must not hold {@code /} either.
     * @return what is wrong, naming the first offending character's code point and index (never the
     *     id itself, which may hold the characters refused), or null when nothing is.
     */
    public static String idProblem(String id, boolean engine)
    {
        for (int index = 0; index < id.length(); ) {
            int codePoint = id.codePointAt(index);
            int type = Character.getType(codePoint);
            if (Character.isISOControl(codePoint) || type == Character.FORMAT || type == Character.LINE_SEPARATOR
                    || type == Character.PARAGRAPH_SEPARATOR || (engine && codePoint == '/')) {
                return String.format(Locale.ROOT, "holds U+%04X at index %d (expected: no control or format characters%s, since it appears in logs%s)",
                        codePoint, index, engine ? " and no '/'" : "", engine ? " and names directory keys" : "");
            }
            index += Character.charCount(codePoint);
        }
        return null;
    }

    /**
     * Formats an epoch as logs and messages show it: 16 lower-case hex digits, the form the JSON
     * carries too.
     *
     * @param epoch the epoch.
     * @return the text.
     */
    public static String formatEpoch(long epoch)
    {
        return String.format(Locale.ROOT, "%016x", epoch);
    }
}
