package io.kvbridge.core.layout;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

final class PerLayerCacheLayoutTest
{
    private static final long PAGE = PerLayerCases.PAGE;

    private static CacheLayout layout(String order)
    {
        return new PerLayerCacheLayoutFactory().create(Map.of(PerLayerCacheLayoutFactory.BLOCK_ORDER, order));
    }

    private static Allocation device(long address, long bytes)
    {
        return new Allocation(address, bytes, MemoryKind.DEVICE, 3);
    }

    @Test
    void eachLayerBecomesOneRegionOfItsOwnAllocation()
    {
        ModelCacheSpec spec = PerLayerCases.spec(2, 1, List.of(2));
        CacheGeometry geometry = layout("heads-outermost").describe(spec,
                CacheMemory.of(List.of(device(0x100000, 4 * PAGE), device(0x200000, 6 * PAGE))), new Rank(0, 1, 1, 2));
        assertEquals(List.of(
                new Region("model.layers.0.self_attn", 0x100000, PAGE, PAGE, 4, 0, MemoryKind.DEVICE, 3, SplitClass.SPLIT,
                        List.of("model.layers.0.self_attn"), List.of()),
                new Region("model.layers.1.self_attn", 0x200000, PAGE, PAGE, 6, 1, MemoryKind.DEVICE, 3, SplitClass.SPLIT,
                        List.of("model.layers.1.self_attn"), List.of())),
                geometry.regions());
        assertEquals(List.of(device(0x100000, 4 * PAGE), device(0x200000, 6 * PAGE)), geometry.allocations());
        assertEquals("per-layer", geometry.layoutName());
        assertEquals(16, geometry.blockTokens());
    }

    @Test
    void referenceExampleBlockBytesFollowTheTensorParallelRank()
    {
        // 8 KV heads, head size 128, fp16, 16-token blocks: 65,536 bytes at TP1 and 32,768 at TP2
        ModelIdentity identity = new ModelIdentity("m", "float16", "float16", 8, 128, 2, false);
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)),
                List.of(new LayerSpec("l0", 0), new LayerSpec("l1", 0)), List.of(2));
        CacheGeometry producer = layout("heads-outermost").describe(spec, CacheMemory.of(List.of(device(0x100000, 4 * 65536), device(0x200000, 4 * 65536))),
                Rank.single());
        CacheGeometry consumer = layout("heads-outermost").describe(spec, CacheMemory.of(List.of(device(0x300000, 3 * 32768), device(0x400000, 3 * 32768))),
                new Rank(0, 1, 1, 2));
        assertEquals(List.of(65536L, 65536L), producer.regions().stream().map(Region::blockBytes).toList());
        assertEquals(List.of(4, 4), producer.regions().stream().map(Region::capacity).toList());
        assertEquals(List.of(32768L, 32768L), consumer.regions().stream().map(Region::blockBytes).toList());
        assertEquals(List.of(3, 3), consumer.regions().stream().map(Region::capacity).toList());
    }

    @Test
    void kernelBlocksSplitTheSchedulerBlock()
    {
        ModelCacheSpec spec = PerLayerCases.spec(2, 2, List.of(2));
        CacheGeometry geometry = layout("heads-outermost").describe(spec,
                CacheMemory.of(List.of(device(0x100000, 8 * PAGE), device(0x200000, 8 * PAGE))), new Rank(0, 1, 0, 2));
        assertEquals(16, geometry.blockTokens());
        assertEquals(2, geometry.kernelBlocksPerLogical());
        assertEquals(PAGE, geometry.regions().getFirst().blockBytes());
        assertEquals(8, geometry.regions().getFirst().capacity());
    }

    @Test
    void tokensOutermostIsInterleavedAndSaysItCannotBeSliced()
    {
        ModelCacheSpec spec = PerLayerCases.spec(2, 1, List.of(2));
        CacheMemory memory = CacheMemory.of(List.of(device(0x100000, 4 * PAGE), device(0x200000, 4 * PAGE)));
        CacheLayout interleaved = layout("tokens-outermost");
        CacheGeometry local = interleaved.describe(spec, memory, new Rank(0, 1, 0, 2));
        assertTrue(local.regions().stream().allMatch(region -> region.split() == SplitClass.INTERLEAVED));
        CacheGeometry sameTp = interleaved.describe(spec, memory, new Rank(0, 1, 1, 2));
        assertEquals(java.util.Optional.empty(), interleaved.incompatibility(local, sameTp));

        ModelCacheSpec wide = PerLayerCases.spec(2, 1, List.of(2));
        CacheGeometry peer = layout("heads-outermost").describe(wide,
                CacheMemory.of(List.of(device(0x500000, 4 * 2 * PAGE), device(0x600000, 4 * 2 * PAGE))), Rank.single());
        String reason = interleaved.incompatibility(local, peer).orElseThrow();
        assertTrue(reason.contains("tokens-outermost") && reason.contains("tpSize=2") && reason.contains("tpSize=1")
                && reason.contains("block-order=heads-outermost"), reason);
        String reversed = layout("heads-outermost").incompatibility(peer, local).orElseThrow();
        assertTrue(reversed.contains("peer side"), reversed);
    }

    @Test
    void headsOutermostPeersOfDifferentTpPair()
    {
        ModelCacheSpec spec = PerLayerCases.spec(2, 1, List.of(2));
        CacheLayout layout = layout("heads-outermost");
        CacheGeometry local = layout.describe(spec, CacheMemory.of(List.of(device(0x100000, 4 * PAGE), device(0x200000, 4 * PAGE))), new Rank(0, 1, 0, 2));
        CacheGeometry peer = layout.describe(spec, CacheMemory.of(List.of(device(0x500000, 8 * PAGE), device(0x600000, 8 * PAGE))), Rank.single());
        assertEquals(java.util.Optional.empty(), layout.incompatibility(local, peer));
    }

    @Test
    void slidingWindowBlocksAreNotClippedWithoutAHybridAllocator()
    {
        CacheGroup window = new CacheGroup(1, GroupKind.SLIDING_WINDOW, 2048, 4, 16);
        assertEquals(300, layout("heads-outermost").exchangedBlocks(window, 16, 300));
        assertCode(ErrorCode.INVALID_ARGUMENT, () -> layout("heads-outermost").exchangedBlocks(window, 0, 3));
    }

    @Test
    void wrongNumberOfAllocationsIsRejectedWithTheFix()
    {
        ModelCacheSpec spec = PerLayerCases.spec(3, 1, List.of(3));
        KvBridgeException e = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout("heads-outermost").describe(spec,
                CacheMemory.of(List.of(device(0x100000, 4 * PAGE), device(0x200000, 4 * PAGE))), new Rank(0, 1, 0, 2)));
        assertTrue(e.getMessage().contains("got 2 allocations for 3 layers"), e.getMessage());
    }

    @Test
    void allocationThatIsNotWholeBlocksIsRejected()
    {
        ModelCacheSpec spec = PerLayerCases.spec(1, 1, List.of(1));
        KvBridgeException e = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout("heads-outermost").describe(spec,
                CacheMemory.of(List.of(device(0x100000, 4 * PAGE + 1))), new Rank(0, 1, 0, 2)));
        assertTrue(e.getMessage().contains("bytes=" + (4 * PAGE + 1)) && e.getMessage().contains("blockBytes=" + PAGE), e.getMessage());
    }

    @Test
    void mlaLayersAreSentToTheMlaLayout()
    {
        ModelIdentity identity = new ModelIdentity("m", "bfloat16", "bfloat16", 1, 576, 1, false);
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1, List.of(new CacheGroup(0, GroupKind.MLA, 0, 1, 576)),
                List.of(new LayerSpec("l0", 0)), List.of(1));
        KvBridgeException e = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout("heads-outermost").describe(spec,
                CacheMemory.of(List.of(device(0x100000, 1 << 20))), Rank.single()));
        assertTrue(e.getMessage().contains("'mla'"), e.getMessage());
    }

    @Test
    void rankOfAnotherPipelineSplitIsRejected()
    {
        ModelCacheSpec spec = PerLayerCases.spec(2, 1, List.of(2));
        KvBridgeException e = assertCode(ErrorCode.INVALID_ARGUMENT, () -> layout("heads-outermost").describe(spec,
                CacheMemory.of(List.of(device(0x100000, 4 * PAGE))), new Rank(0, 2, 0, 2)));
        assertTrue(e.getMessage().contains("ppSize=2") && e.getMessage().contains("1 stages"), e.getMessage());
    }

    @Test
    void viewsMustBeInModelOrderMatchTheSpecAndNotShareAllocations()
    {
        ModelCacheSpec spec = PerLayerCases.spec(2, 1, List.of(2));
        Allocation shared = device(0x100000, 8 * PAGE);
        Allocation other = device(0x200000, 4 * PAGE);
        CacheLayout layout = layout("heads-outermost");
        Rank rank = new Rank(0, 1, 0, 2);
        KvBridgeException sharing = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout.describe(spec, new CacheMemory(List.of(shared), List.of(
                new LayerView("model.layers.0.self_attn", 0x100000, PAGE, 2 * PAGE, 4),
                new LayerView("model.layers.1.self_attn", 0x100000 + PAGE, PAGE, 2 * PAGE, 4))), rank));
        assertTrue(sharing.getMessage().contains("'hma'"), sharing.getMessage());
        KvBridgeException order = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout.describe(spec, new CacheMemory(List.of(shared, other), List.of(
                new LayerView("model.layers.1.self_attn", 0x100000, PAGE, PAGE, 4),
                new LayerView("model.layers.0.self_attn", 0x200000, PAGE, PAGE, 4))), rank));
        assertTrue(order.getMessage().contains("model order"), order.getMessage());
        KvBridgeException bytes = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout.describe(spec, new CacheMemory(List.of(shared, other), List.of(
                new LayerView("model.layers.0.self_attn", 0x100000, PAGE / 2, PAGE, 4),
                new LayerView("model.layers.1.self_attn", 0x200000, PAGE, PAGE, 4))), rank));
        assertTrue(bytes.getMessage().contains("blockBytes=" + PAGE / 2), bytes.getMessage());
        KvBridgeException outside = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout.describe(spec, new CacheMemory(List.of(shared, other), List.of(
                new LayerView("model.layers.0.self_attn", 0x100000, PAGE, PAGE, 4),
                new LayerView("model.layers.1.self_attn", 0x200000, PAGE, PAGE, 5))), rank));
        assertTrue(outside.getMessage().contains("lies in no allocation"), outside.getMessage());
    }

    @Test
    void optionsAreValidated()
    {
        KvBridgeException e = assertCode(ErrorCode.CONFIG_INVALID, () -> new PerLayerCacheLayoutFactory().create(Map.of("block-order", "sideways")));
        assertTrue(e.getMessage().contains("block-order=sideways"), e.getMessage());
        assertEquals(PerLayerBlockDescriptor.Order.HEADS_OUTERMOST, ((PerLayerCacheLayout) new PerLayerCacheLayoutFactory().create(Map.of())).order());
    }

    @Test
    void theCoreRegistersPerLayerForDiscovery()
    {
        assertTrue(ServiceLoader.load(CacheLayoutFactory.class).stream().anyMatch(provider -> provider.type() == PerLayerCacheLayoutFactory.class));
        PluginRegistry registry = PluginRegistry.discover(getClass().getClassLoader());
        assertEquals(PerLayerCacheLayoutFactory.class, registry.layout("per-layer").getClass());
    }
}
