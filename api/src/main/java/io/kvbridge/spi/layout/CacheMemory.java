package io.kvbridge.spi.layout;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import java.util.List;
import java.util.Locale;

/**
 * The memory an engine allocated for its KV cache: the physical allocations, and optionally the
 * per-layer views into them. A layout that receives no views places layers by its own documented
 * convention (for example, one allocation per layer in model order).
 *
 * @param allocations physical allocations; not empty.
 * @param views per-layer views, in model order; empty when the layout places layers itself.
 */
public record CacheMemory(List<Allocation> allocations, List<LayerView> views)
{
    /** Validates and copies the lists. */
    public CacheMemory
    {
        allocations = List.copyOf(requireNonNull(allocations, "allocations is null"));
        views = List.copyOf(requireNonNull(views, "views is null"));
        checkArgument(!allocations.isEmpty(), "no allocations");
    }

    /**
     * Finds the allocation that holds every block of a view.
     *
     * @param view a layer view.
     * @return the first allocation containing {@code [view.address(), view.end())}.
     * @throws KvBridgeException {@code LAYOUT_UNSUPPORTED} when no allocation holds it.
     */
    public Allocation allocationHolding(LayerView view)
    {
        requireNonNull(view, "view is null");
        for (Allocation allocation : allocations) {
            if (allocation.contains(view.address(), view.end() - view.address())) {
                return allocation;
            }
        }
        throw new KvBridgeException(ErrorCode.LAYOUT_UNSUPPORTED, String.format(Locale.ROOT,
                "layer %s: view [0x%x, 0x%x) lies in no allocation; pass the allocation that holds it", view.layer(), view.address(), view.end()));
    }

    /**
     * Creates memory without per-layer views.
     *
     * @param allocations physical allocations.
     * @return the memory.
     */
    public static CacheMemory of(List<Allocation> allocations)
    {
        return new CacheMemory(allocations, List.of());
    }
}
