package io.kvbridge.testkit;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * What a {@link FaultInjectingTransferBackend} breaks, and how often. Every decision is drawn from
 * one random stream seeded by {@code seed}, so a failing run repeats exactly.
 *
 * @param seed of the random stream.
 * @param dropNotification probability that a received notification is never handed to the sink.
 * @param duplicateNotification probability that a received notification is handed over twice.
 * @param delayNotification probability that a received notification is held back for one to
 *     {@code maxDelayDrains} later drains, which also reorders it behind later ones.
 * @param maxDelayDrains most drains a delayed notification waits.
 * @param failPost probability that {@code post} throws before anything moves.
 * @param errorTransfer probability that a transfer ends {@code FAILED} without its notification.
 * @param stallTransfer probability that a transfer stays {@code IN_PROGRESS} until released.
 */
public record FaultPlan(
        long seed,
        double dropNotification,
        double duplicateNotification,
        double delayNotification,
        int maxDelayDrains,
        double failPost,
        double errorTransfer,
        double stallTransfer)
{
    /** Validates the probabilities. */
    public FaultPlan
    {
        for (double p : new double[] {dropNotification, duplicateNotification, delayNotification, failPost, errorTransfer, stallTransfer}) {
            checkArgument(p >= 0 && p <= 1, "probability=%s is outside [0, 1]", p);
        }
        checkArgument(dropNotification + duplicateNotification + delayNotification <= 1,
                "drop=%s + duplicate=%s + delay=%s exceeds 1", dropNotification, duplicateNotification, delayNotification);
        checkArgument(errorTransfer + stallTransfer <= 1, "error=%s + stall=%s exceeds 1", errorTransfer, stallTransfer);
        checkArgument(maxDelayDrains >= 1, "maxDelayDrains=%d is not positive", maxDelayDrains);
    }

    /**
     * Returns a plan that breaks nothing.
     *
     * @param seed of the random stream.
     * @return the plan.
     */
    public static FaultPlan none(long seed)
    {
        return new FaultPlan(seed, 0, 0, 0, 1, 0, 0, 0);
    }

    /**
     * Returns a copy that drops notifications with probability {@code p}.
     *
     * @param p probability.
     * @return the copy.
     */
    public FaultPlan withDrops(double p)
    {
        return new FaultPlan(seed, p, duplicateNotification, delayNotification, maxDelayDrains, failPost, errorTransfer, stallTransfer);
    }

    /**
     * Returns a copy that duplicates notifications with probability {@code p}.
     *
     * @param p probability.
     * @return the copy.
     */
    public FaultPlan withDuplicates(double p)
    {
        return new FaultPlan(seed, dropNotification, p, delayNotification, maxDelayDrains, failPost, errorTransfer, stallTransfer);
    }

    /**
     * Returns a copy that delays notifications with probability {@code p}.
     *
     * @param p probability.
     * @param drains most drains to wait.
     * @return the copy.
     */
    public FaultPlan withDelays(double p, int drains)
    {
        return new FaultPlan(seed, dropNotification, duplicateNotification, p, drains, failPost, errorTransfer, stallTransfer);
    }

    /**
     * Returns a copy that fails posts with probability {@code p}.
     *
     * @param p probability.
     * @return the copy.
     */
    public FaultPlan withFailedPosts(double p)
    {
        return new FaultPlan(seed, dropNotification, duplicateNotification, delayNotification, maxDelayDrains, p, errorTransfer, stallTransfer);
    }

    /**
     * Returns a copy that turns transfers into errors with probability {@code p}.
     *
     * @param p probability.
     * @return the copy.
     */
    public FaultPlan withTransferErrors(double p)
    {
        return new FaultPlan(seed, dropNotification, duplicateNotification, delayNotification, maxDelayDrains, failPost, p, stallTransfer);
    }

    /**
     * Returns a copy that stalls transfers with probability {@code p}.
     *
     * @param p probability.
     * @return the copy.
     */
    public FaultPlan withStalls(double p)
    {
        return new FaultPlan(seed, dropNotification, duplicateNotification, delayNotification, maxDelayDrains, failPost, errorTransfer, p);
    }
}
