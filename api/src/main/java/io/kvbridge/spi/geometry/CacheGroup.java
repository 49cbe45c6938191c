package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Layers sharing one cache spec. Block ids in requests are given per group.
 *
 * <p>A {@link GroupKind#MAMBA} group describes its layers' state by {@link #state() components};
 * one block of such a layer is one whole state of {@link #stateBytes(int)} bytes on a rank,
 * components back to back in the order given.
 *
 * @param id group id, non-negative and unique within a model.
 * @param kind of attention the group's layers use, or {@link GroupKind#MAMBA} for recurrent state.
 * @param windowTokens window of a {@link GroupKind#SLIDING_WINDOW} group in tokens; 0 when the
 *     window is disabled or the kind has none.
 * @param kvHeads total KV heads of a layer of this group across all tensor-parallel ranks (1 for
 *     MLA; the SSM heads for a state group).
 * @param headSize elements per head (for MLA: the latent width, rope part included).
 * @param state the components of one state, for a {@link GroupKind#MAMBA} group; empty otherwise.
 */
public record CacheGroup(int id, GroupKind kind, int windowTokens, int kvHeads, int headSize, List<StateComponent> state)
{
    /**
     * Creates an attention group (no state components).
     *
     * @param id see the record.
     * @param kind see the record.
     * @param windowTokens see the record.
     * @param kvHeads see the record.
     * @param headSize see the record.
     */
    public CacheGroup(int id, GroupKind kind, int windowTokens, int kvHeads, int headSize)
    {
        this(id, kind, windowTokens, kvHeads, headSize, List.of());
    }

    /** Validates the values and copies the components. */
    public CacheGroup
    {
        requireNonNull(kind, "kind is null");
        state = List.copyOf(requireNonNull(state, "state is null"));
        checkArgument(id >= 0, "group id=%d is negative", id);
        checkArgument(windowTokens >= 0, "windowTokens=%d is negative", windowTokens);
        checkArgument(kind == GroupKind.SLIDING_WINDOW || windowTokens == 0,
                "windowTokens=%d given for a %s group (expected: 0)", windowTokens, kind);
        checkArgument(kvHeads > 0, "kvHeads=%d is not positive", kvHeads);
        checkArgument(headSize > 0, "headSize=%d is not positive", headSize);
        checkArgument(kind != GroupKind.MLA || kvHeads == 1, "an MLA group has one latent head, not kvHeads=%d", kvHeads);
        checkArgument((kind == GroupKind.MAMBA) == !state.isEmpty(), "group %d: a %s group has %d state components (expected: components for a MAMBA "
                + "group only)", id, kind, state.size());
        Set<String> names = new HashSet<>();
        for (StateComponent component : state) {
            checkArgument(names.add(component.name()), "group %d lists state component %s twice", id, component.name());
        }
    }

    /**
     * Tells whether the group's blocks are the same on every tensor-parallel rank.
     *
     * @return true for MLA.
     */
    public boolean replicated()
    {
        return kind == GroupKind.MLA;
    }

    /**
     * Tells whether the group's blocks are whole states (never token blocks).
     *
     * @return true for {@link GroupKind#MAMBA}.
     */
    public boolean stateful()
    {
        return kind == GroupKind.MAMBA;
    }

    /**
     * Returns the bytes of one state on a rank: its components back to back.
     *
     * @param tpSize ranks sharing each component.
     * @return the sum of {@link StateComponent#bytesPerRank}; 0 for a group without state.
     * @throws io.kvbridge.spi.KvBridgeException {@code TP_UNSUPPORTED} when {@code tpSize} does not
     *     divide a component's split dimension.
     */
    public long stateBytes(int tpSize)
    {
        return componentOffset(state.size(), tpSize);
    }

    /**
     * Checks that every component of a layer's state splits evenly over a tensor-parallel size.
     *
     * @param layer the layer, for the message.
     * @param tpSize ranks sharing each component.
     * @throws io.kvbridge.spi.KvBridgeException {@code TP_UNSUPPORTED} naming the layer, the first
     *     component whose split dimension {@code tpSize} does not divide, and both values.
     */
    public void checkStateSplits(String layer, int tpSize)
    {
        for (StateComponent component : state) {
            io.kvbridge.spi.KvBridgeException.check(component.splitsOver(tpSize), io.kvbridge.spi.ErrorCode.TP_UNSUPPORTED,
                    "layer %s, state component %s: splitDim=%d is not divisible by tpSize=%d, so the ranks cannot hold equal shares (expected: a "
                            + "tensor-parallel size dividing %d)", layer, component.name(), component.splitDim(), tpSize, component.splitDim());
        }
    }

    /**
     * Describes one state's bytes on a rank component by component, for messages.
     *
     * @param tpSize ranks sharing each component; it divides every split dimension.
     * @return e.g. {@code conv.x=48 + conv.B=24 + conv.C=24 + ssm=64}.
     */
    public String describeState(int tpSize)
    {
        StringBuilder text = new StringBuilder();
        for (StateComponent component : state) {
            text.append(text.isEmpty() ? "" : " + ").append(component.name()).append('=').append(component.bytesPerRank(tpSize));
        }
        return text.toString();
    }

    /**
     * Returns where a component starts inside one state on a rank.
     *
     * @param component index in {@code [0, state().size()]}; the size gives the state's bytes.
     * @param tpSize ranks sharing each component.
     * @return the bytes of the components before it.
     */
    public long componentOffset(int component, int tpSize)
    {
        checkArgument(component >= 0 && component <= state.size(), "component=%d is outside [0, %d]", component, state.size());
        long offset = 0;
        for (int c = 0; c < component; c++) {
            offset += state.get(c).bytesPerRank(tpSize);
        }
        return offset;
    }
}
