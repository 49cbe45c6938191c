package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.planner.TpPlan;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.geometry.CacheGeometry;

/**
 * A transfer plan as one side of a link sees it: "mine" is this rank's memory and blocks,
 * "theirs" the remote rank's. Plans are made from the consumer's side (the plan's local side is the
 * consumer rank); a producer that pushes sees the same plan turned around here, so that a pull
 * consumer and a push producer prepare, index and post along it the same way, and both agree on
 * who moves which bytes. The consumer's memory is described per slot (one list per producer rank
 * it reads from), the producer's once.
 *
 * @param plan the plan, from the consumer's side.
 * @param index its position among the plans between the two ranks (one per memory pairing); it keys the link's lists.
 * @param consumer whether this side is the consumer.
 */
record LinkPlan(TransferPlan plan, int index, boolean consumer)
{
    /** Validates the values. */
    LinkPlan
    {
        requireNonNull(plan, "plan is null");
    }

    TpPlan tpPlan()
    {
        return plan.tpPlan();
    }

    /** Aligns the blocks of both sides to the plan's block sizes. */
    void align(BlockSelection mine, BlockSelection theirs)
    {
        if (consumer) {
            plan.alignBlocks(mine, theirs);
        }
        else {
            plan.alignBlocks(theirs, mine);
        }
    }

    /** {@return how many descriptor pairs the selected blocks make in a producer rank's slot} */
    int count(int slot, BlockSelection mine, BlockSelection theirs)
    {
        return plan.indexCount(slot, consumer ? mine : theirs);
    }

    /** Fills the descriptor index pairs of the selected blocks in a producer rank's slot; {@return the pairs} */
    int indices(int slot, BlockSelection mine, int[] mineOut, BlockSelection theirs, int[] theirsOut)
    {
        return consumer ? plan.indices(slot, mine, mineOut, theirs, theirsOut) : plan.indices(slot, theirs, theirsOut, mine, mineOut);
    }

    /** {@return how many descriptor pairs the entries a mask selects make in a slot} */
    int countOf(int slot, BlockSelection mine, BlockSelection theirs, boolean[] entries)
    {
        return plan.indexCountOf(slot, consumer ? mine : theirs, entries);
    }

    /** Fills the descriptor index pairs of the entries a mask selects; {@return the pairs} */
    int indicesOf(int slot, BlockSelection mine, int[] mineOut, BlockSelection theirs, int[] theirsOut, boolean[] entries, boolean[] scratch)
    {
        return consumer ? plan.indicesOf(slot, mine, mineOut, theirs, theirsOut, entries, scratch)
                : plan.indicesOf(slot, theirs, theirsOut, mine, mineOut, entries, scratch);
    }

    /** {@return the link's list of this rank's memory for the plan, prepared the first time} */
    PeerLink.Prepared mine(PeerLink link, int slot, CacheGeometry own)
    {
        return consumer ? link.mine(index, slot, () -> plan.localDescriptors(slot)) : link.mine(index, 0, () -> plan.remoteDescriptors(own));
    }

    /** {@return the link's list of the remote rank's memory for the plan, prepared the first time} */
    PeerLink.Prepared theirs(PeerLink link, int slot, CacheGeometry remote)
    {
        return consumer ? link.theirs(index, 0, () -> plan.remoteDescriptors(remote)) : link.theirs(index, slot, () -> plan.localDescriptors(slot));
    }
}
