package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.List;
import java.util.Locale;

/**
 * One tensor of a layer's recurrent state, e.g. the convolution state over the x channels or the
 * SSM state over the heads. On a rank the component holds {@code splitDim / tpSize} units of
 * {@code unitElements} elements each, units outermost, so a rank's share of another rank's
 * component is one contiguous byte range.
 *
 * <p>A Mamba-2 layer ({@link #mamba2}) has four components in this order: {@code conv.x},
 * {@code conv.B}, {@code conv.C} (its convolution state, channels outermost: the x, B and C
 * channel groups are split by tensor parallelism each on its own, so they are three components,
 * not one contiguous split) and {@code ssm} (heads x head size x state size).
 *
 * @param name component name, unique within its group, e.g. {@code conv.x} or {@code ssm}.
 * @param dtype element dtype, e.g. {@code bfloat16} or {@code float32}; may differ from the KV dtype.
 * @param splitDim size of the dimension tensor parallelism splits, over all ranks (channels or heads).
 * @param unitElements elements per unit of the split dimension (the convolution window for a
 *     channel, head size x state size for an SSM head).
 */
public record StateComponent(String name, String dtype, int splitDim, long unitElements)
{
    /** Validates the values. */
    public StateComponent
    {
        requireNonNull(name, "name is null");
        requireNonNull(dtype, "dtype is null");
        checkArgument(!name.isEmpty(), "state component name is empty");
        checkArgument(splitDim > 0, "state component %s: splitDim=%d is not positive", name, splitDim);
        checkArgument(unitElements > 0, "state component %s: unitElements=%d is not positive", name, unitElements);
        checkArgument(unitElements <= Integer.MAX_VALUE, "state component %s: unitElements=%d is too large", name, unitElements);
        elementBytes(dtype);
    }

    /**
     * Returns the components of a Mamba-2 layer's state.
     *
     * @param heads SSM heads over all ranks.
     * @param headSize elements per head.
     * @param stateSize SSM state size per head element.
     * @param groups B/C groups over all ranks.
     * @param convWidth convolution window kept per channel (kernel size - 1).
     * @param convDtype dtype of the convolution state.
     * @param ssmDtype dtype of the SSM state.
     * @return {@code conv.x}, {@code conv.B}, {@code conv.C} and {@code ssm}.
     */
    public static List<StateComponent> mamba2(int heads, int headSize, int stateSize, int groups, int convWidth, String convDtype, String ssmDtype)
    {
        return List.of(
                new StateComponent("conv.x", convDtype, Math.multiplyExact(heads, headSize), convWidth),
                new StateComponent("conv.B", convDtype, Math.multiplyExact(groups, stateSize), convWidth),
                new StateComponent("conv.C", convDtype, Math.multiplyExact(groups, stateSize), convWidth),
                new StateComponent("ssm", ssmDtype, heads, (long) headSize * stateSize));
    }

    /**
     * Returns the bytes of one element.
     *
     * @return 1, 2 or 4.
     */
    public int elementBytes()
    {
        return elementBytes(dtype);
    }

    /**
     * Tells whether tensor parallelism of a size can split this component.
     *
     * @param tpSize ranks.
     * @return true when {@code tpSize} divides {@link #splitDim()}.
     */
    public boolean splitsOver(int tpSize)
    {
        return tpSize > 0 && splitDim % tpSize == 0;
    }

    /**
     * Returns the component's bytes on one rank.
     *
     * @param tpSize ranks sharing the component.
     * @return {@code splitDim / tpSize x unitElements x elementBytes}.
     * @throws KvBridgeException {@code TP_UNSUPPORTED} when {@code tpSize} does not divide {@link #splitDim()}.
     */
    public long bytesPerRank(int tpSize)
    {
        checkArgument(tpSize > 0, "tpSize=%d is not positive", tpSize);
        KvBridgeException.check(splitsOver(tpSize), ErrorCode.TP_UNSUPPORTED,
                "state component %s: tpSize=%d does not divide splitDim=%d, so the ranks cannot hold equal shares (expected: a tensor-parallel size dividing %d)",
                name, tpSize, splitDim, splitDim);
        return (long) (splitDim / tpSize) * unitElements * elementBytes();
    }

    /** Bytes of an element of a dtype name, as {@link ModelIdentity#cacheElementBytes()} reads cache dtypes. */
    static int elementBytes(String dtype)
    {
        String type = dtype.toLowerCase(Locale.ROOT);
        if (type.startsWith("fp8") || type.equals("int8") || type.equals("uint8")) {
            return 1;
        }
        if (type.equals("float32") || type.equals("fp32")) {
            return 4;
        }
        if (type.equals("bfloat16") || type.equals("bf16") || type.equals("float16") || type.equals("fp16") || type.equals("half")) {
            return 2;
        }
        throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "state dtype=" + dtype + " is not known (expected: bfloat16, float16, float32, fp8_e4m3, int8)");
    }
}
