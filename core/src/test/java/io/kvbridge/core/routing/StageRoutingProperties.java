package io.kvbridge.core.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.core.planner.PlanRequests;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.testkit.PooledBlockIds;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * Pushes random requests between random pipeline-parallel engines whose stages pool layers at
 * random (at most one layer of each group per pool, as a hybrid allocator requires) and list their
 * regions in random order, and checks every copy against what the pages mean: page {@code b} of a
 * pool holds the {@code j}-th block of the pool's layer of group {@code g} when {@code b} is the
 * {@code j}-th id of group {@code g}. Every copy must move the {@code j}-th block of a layer on the
 * producer to the {@code j}-th block of the same layer on the decoder, and every block of every
 * layer must be moved exactly once.
 */
final class StageRoutingProperties
{
    private static final long PAGE = 64;

    @Property(tries = 300)
    void everyBlockOfEveryLayerLandsOnceInTheDecoderPoolHoldingThatLayer(@ForAll long seed)
    {
        Random random = new Random(seed);
        int layerCount = 2 + random.nextInt(39);
        int groups = 1 + random.nextInt(3);
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < layerCount; i++) {
            layers.add(new LayerSpec(Stage.name(i), random.nextInt(groups)));
        }
        int producerCapacity = 12 + random.nextInt(13);
        int decoderCapacity = 12 + random.nextInt(13);
        List<CacheGeometry> producers = engine(layers, groups, split(layerCount, 4, random), producerCapacity, 0x1_0000_0000L, random);
        List<CacheGeometry> decoders = engine(layers, groups, split(layerCount, 3, random), decoderCapacity, 0x8_0000_0000L, random);
        StageExchange exchange = StageExchange.route(layers, producers, decoders, TransferMode.PUSH);

        // a group no layer belongs to has no region on either side: an engine gives it no ids (a plan refuses them)
        boolean[] held = new boolean[groups];
        layers.forEach(layer -> held[layer.groupId()] = true);
        int[] counts = new int[groups];
        for (int g = 0; g < groups; g++) {
            int count = random.nextInt(1 + 12 / groups);
            counts[g] = held[g] ? count : 0;
        }
        int[][] producerIds = PooledBlockIds.allocate(counts, producerCapacity, random);
        int[][] decoderIds = PooledBlockIds.allocate(counts, decoderCapacity, random);
        Set<String> moved = new HashSet<>();
        DescriptorPairs pairs = new DescriptorPairs(0);
        for (int p = 0; p < producers.size(); p++) {
            for (int d : exchange.decodersOf(p)) {
                TransferPlan plan = exchange.plan(p, d);
                DescriptorList local = plan.localDescriptors(0);
                DescriptorList remote = plan.remoteDescriptors(decoders.get(d));
                int[][] indices = PlanRequests.indices(plan, BlockSelection.of(producerIds), BlockSelection.of(decoderIds));
                pairs.resolve(local, indices[0], remote, indices[1], indices[0].length, false);
                for (int i = 0; i < pairs.size(); i++) {
                    assertEquals(PAGE, pairs.length(i));
                    String source = meaning(producers.get(p), pairs.localAddress(i), producerIds, layers);
                    String target = meaning(decoders.get(d), pairs.remoteAddress(i), decoderIds, layers);
                    assertEquals(source, target, "a copy moves a block to the same layer's same block");
                    assertTrue(moved.add(source), () -> source + " is moved twice");
                }
                long bytes = pairs.totalBytes();
                pairs.resolve(local, indices[0], remote, indices[1], indices[0].length, true);
                assertEquals(bytes, pairs.totalBytes(), "coalescing moves the same bytes");
            }
        }
        Set<String> expected = new HashSet<>();
        for (LayerSpec layer : layers) {
            for (int j = 0; j < counts[layer.groupId()]; j++) {
                expected.add(layer.name() + "#" + j);
            }
        }
        assertEquals(expected, moved);
    }

    /** Splits the layers into up to {@code maxStages} contiguous, non-empty stages. */
    private static List<Integer> split(int layerCount, int maxStages, Random random)
    {
        int stages = 1 + random.nextInt(Math.min(maxStages, layerCount));
        List<Integer> cuts = new ArrayList<>();
        for (int i = 1; i < layerCount; i++) {
            cuts.add(i);
        }
        Collections.shuffle(cuts, random);
        List<Integer> bounds = new ArrayList<>(cuts.subList(0, stages - 1));
        bounds.add(0);
        bounds.add(layerCount);
        Collections.sort(bounds);
        List<Integer> counts = new ArrayList<>();
        for (int s = 0; s + 1 < bounds.size(); s++) {
            counts.add(bounds.get(s + 1) - bounds.get(s));
        }
        return counts;
    }

    private static List<CacheGeometry> engine(List<LayerSpec> layers, int groups, List<Integer> stageCounts, int capacity, long base, Random random)
    {
        GroupKind[] kinds = new GroupKind[groups];
        for (int g = 0; g < groups; g++) {
            kinds[g] = g == 0 ? GroupKind.FULL_ATTENTION : GroupKind.SLIDING_WINDOW;
        }
        List<CacheGeometry> stages = new ArrayList<>();
        int start = 0;
        for (int s = 0; s < stageCounts.size(); s++) {
            List<LayerSpec> owned = layers.subList(start, start + stageCounts.get(s));
            start += stageCounts.get(s);
            List<List<LayerSpec>> pools = randomPools(owned, groups, random);
            Stage stage = Stage.rank(new Rank(s, stageCounts.size(), 0, 1), layers.size()).groups(kinds);
            long stageBase = base + s * 0x1000_0000L;
            for (int p = 0; p < pools.size(); p++) {
                List<LayerSpec> members = pools.get(p);
                Set<Integer> memberGroups = new LinkedHashSet<>();
                members.forEach(member -> memberGroups.add(member.groupId()));
                stage.region(stageBase + p * 0x10_0000L, PAGE, capacity, memberGroups.size() == 1 ? memberGroups.iterator().next() : -1,
                        members.stream().map(LayerSpec::name).toArray(String[]::new));
            }
            stages.add(stage.build());
        }
        return stages;
    }

    /** Pools holding at most one layer of each group, members in model order, pools in random order. */
    private static List<List<LayerSpec>> randomPools(List<LayerSpec> owned, int groups, Random random)
    {
        List<List<LayerSpec>> pools = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            int group = g;
            List<LayerSpec> ofGroup = new ArrayList<>(owned.stream().filter(layer -> layer.groupId() == group).toList());
            Collections.shuffle(ofGroup, random);
            for (int i = 0; i < ofGroup.size(); i++) {
                while (pools.size() <= i) {
                    pools.add(new ArrayList<>());
                }
                pools.get(i).add(ofGroup.get(i));
            }
        }
        for (List<LayerSpec> pool : pools) {
            pool.sort((a, b) -> Integer.compare(owned.indexOf(a), owned.indexOf(b)));
        }
        Collections.shuffle(pools, random);
        return pools;
    }

    /** Returns which layer's which request block a page holds, as {@code layer#j}. */
    private static String meaning(CacheGeometry stage, long address, int[][] ids, List<LayerSpec> layers)
    {
        Map<String, Integer> groupOf = new HashMap<>();
        layers.forEach(layer -> groupOf.put(layer.name(), layer.groupId()));
        for (Region region : stage.regions()) {
            if (address < region.base() || address >= region.end()) {
                continue;
            }
            assertEquals(0, (address - region.base()) % region.stride(), "copies start at a page");
            int page = (int) ((address - region.base()) / region.stride());
            for (int g = 0; g < ids.length; g++) {
                for (int j = 0; j < ids[g].length; j++) {
                    if (ids[g][j] == page) {
                        for (String member : region.members()) {
                            if (groupOf.get(member) == g) {
                                return member + "#" + j;
                            }
                        }
                        throw new AssertionError("page " + page + " of region " + region.name() + " belongs to group " + g + ", which none of its layers "
                                + region.members() + " is in");
                    }
                }
            }
            throw new AssertionError("page " + page + " of region " + region.name() + " is not part of the request");
        }
        throw new AssertionError("address 0x" + Long.toHexString(address) + " lies in no region of rank " + stage.rank());
    }
}
