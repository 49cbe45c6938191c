package io.kvbridge.core.layout;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.geometry.SplitClass;
import java.util.Locale;

/**
 * Byte layout of one block of one attention layer in the {@code per-layer} layout: where each head
 * and token lies, how big a block is, and whether a tensor-parallel peer can take a head slice of it.
 * Keys and values are packed together per token ({@code C = 2 x headSize x elementBytes} bytes).
 *
 * <p>Heads outermost ({@code LBHNC}): each head's tokens are contiguous, so the heads a rank owns
 * are one contiguous byte range and a peer with another tensor-parallel size reads a slice.
 *
 * <pre>
 *   0                         headBytes                                  blockBytes
 *   +-------------------------+-------------------------+-- ... --+-----------------+
 *   | head 0                  | head 1                  |         | head H-1        |
 *   | tok 0 | tok 1 |...|tok N-1| tok 0 | tok 1 |...    |         |                 |
 *   |  K V  |  K V  |   |       |                         |         |                 |
 *   +-------------------------+-------------------------+-- ... --+-----------------+
 *   headBytes = N x C                     blockBytes = H x N x C
 * </pre>
 *
 * <p>Tokens outermost ({@code LBNHC}): each token holds every head, so a head's bytes are spread
 * over the whole block and a block moves only whole, between peers of equal tensor-parallel size.
 *
 * <pre>
 *   0                           tokenBytes                                blockBytes
 *   +---------------------------+---------------------------+-- ... --+--------------+
 *   | token 0                   | token 1                   |         | token N-1    |
 *   | h0 K V | h1 K V |...|hH-1 | h0 K V | h1 K V |...      |         |              |
 *   +---------------------------+---------------------------+-- ... --+--------------+
 *   tokenBytes = H x C                    blockBytes = N x H x C
 * </pre>
 */
public final class PerLayerBlockDescriptor
{
    /** K and V are stored side by side for every token and head. */
    public static final int KV_PARTS = 2;

    /** Dimension order inside one block. */
    public enum Order
    {
        /** {@code LBHNC}: heads outermost, head-sliceable ({@link SplitClass#SPLIT}). */
        HEADS_OUTERMOST(SplitClass.SPLIT),
        /** {@code LBNHC}: tokens outermost, heads interleaved ({@link SplitClass#INTERLEAVED}). */
        TOKENS_OUTERMOST(SplitClass.INTERLEAVED);

        private final SplitClass split;

        Order(SplitClass split)
        {
            this.split = split;
        }

        /** {@return the value of the {@code block-order} option that selects this order} */
        public String optionValue()
        {
            return PluginConfig.optionValue(this);
        }

        /** {@return how regions of this order divide among tensor-parallel ranks} */
        public SplitClass split()
        {
            return split;
        }
    }

    private PerLayerBlockDescriptor()
    {
    }

    /**
     * Returns the KV heads one tensor-parallel rank holds.
     *
     * @param totalKvHeads KV heads of the layer across all ranks.
     * @param tpSize tensor-parallel size.
     * @return {@code totalKvHeads / tpSize}, or 1 when there are fewer heads than ranks (each rank
     *     then holds a copy of one head).
     */
    public static int headsPerRank(int totalKvHeads, int tpSize)
    {
        checkArgument(totalKvHeads > 0, "totalKvHeads=%d is not positive", totalKvHeads);
        checkArgument(tpSize > 0, "tpSize=%d is not positive", tpSize);
        if (totalKvHeads <= tpSize) {
            checkArgument(tpSize % totalKvHeads == 0, "tpSize=%d is not a multiple of totalKvHeads=%d (a head cannot be replicated unevenly)",
                    tpSize, totalKvHeads);
            return 1;
        }
        checkArgument(totalKvHeads % tpSize == 0, "totalKvHeads=%d is not a multiple of tpSize=%d (heads cannot be sharded evenly)", totalKvHeads, tpSize);
        return totalKvHeads / tpSize;
    }

    /**
     * Returns the bytes one token of one head takes: its key and its value.
     *
     * @param headSize elements per head.
     * @param elementBytes bytes per element.
     * @return {@code 2 x headSize x elementBytes}.
     */
    public static long tokenContentBytes(int headSize, int elementBytes)
    {
        checkArgument(headSize > 0, "headSize=%d is not positive", headSize);
        checkArgument(elementBytes > 0, "elementBytes=%d is not positive", elementBytes);
        return (long) KV_PARTS * headSize * elementBytes;
    }

    /**
     * Returns the bytes of one block of one layer on one rank.
     *
     * @param heads KV heads on the rank.
     * @param blockTokens tokens per block.
     * @param headSize elements per head.
     * @param elementBytes bytes per element.
     * @return {@code heads x blockTokens x 2 x headSize x elementBytes}.
     */
    public static long blockBytes(int heads, int blockTokens, int headSize, int elementBytes)
    {
        checkArgument(heads > 0, "heads=%d is not positive", heads);
        checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        try {
            return Math.multiplyExact(Math.multiplyExact((long) heads, blockTokens), tokenContentBytes(headSize, elementBytes));
        }
        catch (ArithmeticException e) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, String.format(Locale.ROOT,
                    "heads=%d x blockTokens=%d x 2 x headSize=%d x elementBytes=%d overflows", heads, blockTokens, headSize, elementBytes), e);
        }
    }

    /**
     * Returns the offset of one block from the start of the layer's memory.
     *
     * @param block index.
     * @param blockStride bytes between consecutive blocks.
     * @return {@code block x blockStride}.
     */
    public static long blockOffset(int block, long blockStride)
    {
        return block * blockStride;
    }

    /**
     * Returns the offset of one token of one head inside a block.
     *
     * @param order dimension order of the block.
     * @param head head index on this rank, in {@code [0, heads)}.
     * @param token token index, in {@code [0, blockTokens)}.
     * @param heads heads on this rank.
     * @param blockTokens tokens per block.
     * @param tokenContentBytes see {@link #tokenContentBytes(int, int)}.
     * @return the byte offset of the token's key; its value follows the key.
     */
    public static long headTokenOffset(Order order, int head, int token, int heads, int blockTokens, long tokenContentBytes)
    {
        requireNonNull(order, "order is null");
        checkArgument(head >= 0 && head < heads, "head=%d is outside [0, heads=%d)", head, heads);
        checkArgument(token >= 0 && token < blockTokens, "token=%d is outside [0, blockTokens=%d)", token, blockTokens);
        return switch (order) {
            case HEADS_OUTERMOST -> ((long) head * blockTokens + token) * tokenContentBytes;
            case TOKENS_OUTERMOST -> ((long) token * heads + head) * tokenContentBytes;
        };
    }

    /**
     * Returns where one of {@code slices} equal head slices starts inside a block: the bytes a peer
     * with {@code slices} times more ranks reads from this block.
     *
     * @param order dimension order of the block.
     * @param slice slice index, in {@code [0, slices)}.
     * @param slices number of equal slices; divides the heads of the block.
     * @param heads heads in the block.
     * @param blockBytes bytes of the block.
     * @return the slice's byte offset; the slice is {@code blockBytes / slices} bytes long.
     * @throws KvBridgeException {@code TP_UNSUPPORTED} for tokens-outermost blocks, whose heads are
     *     not contiguous.
     */
    public static long headSliceOffset(Order order, int slice, int slices, int heads, long blockBytes)
    {
        checkHeadSliceable(order, slices);
        checkArgument(slice >= 0 && slice < slices, "slice=%d is outside [0, slices=%d)", slice, slices);
        checkArgument(heads % slices == 0, "heads=%d cannot be split into slices=%d equal head slices", heads, slices);
        return slice * (blockBytes / slices);
    }

    /**
     * Checks that a block can be cut into head slices.
     *
     * @param order dimension order of the block.
     * @param slices number of slices wanted; 1 is always possible.
     * @throws KvBridgeException {@code TP_UNSUPPORTED} when {@code slices > 1} and heads are interleaved.
     */
    public static void checkHeadSliceable(Order order, int slices)
    {
        requireNonNull(order, "order is null");
        checkArgument(slices > 0, "slices=%d is not positive", slices);
        KvBridgeException.check(slices == 1 || order == Order.HEADS_OUTERMOST, ErrorCode.TP_UNSUPPORTED,
                "per-layer blocks are %s: every token interleaves all heads, so a block cannot be cut into slices=%d head slices; "
                        + "use block-order=heads-outermost or peers of equal tensor-parallel size", order.optionValue(), slices);
    }

    /**
     * Checks that an allocation holds a whole number of blocks and returns how many.
     *
     * @param layer name of the layer, for messages.
     * @param allocationBytes size of the layer's allocation.
     * @param blockBytes bytes per block.
     * @return {@code allocationBytes / blockBytes}.
     * @throws KvBridgeException {@code LAYOUT_UNSUPPORTED} when it does not divide or holds no block.
     */
    public static int checkCapacity(String layer, long allocationBytes, long blockBytes)
    {
        long capacity = allocationBytes / blockBytes;
        KvBridgeException.check(allocationBytes % blockBytes == 0 && capacity > 0 && capacity <= Integer.MAX_VALUE, ErrorCode.LAYOUT_UNSUPPORTED,
                "layer %s: allocation bytes=%d is not a positive whole number of blocks of blockBytes=%d; allocate capacity x blockBytes bytes for it",
                layer, allocationBytes, blockBytes);
        return (int) capacity;
    }
}
