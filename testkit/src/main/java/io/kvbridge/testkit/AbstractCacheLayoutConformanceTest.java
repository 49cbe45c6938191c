package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract every cache layout keeps, as tests. A layout runs it with one small subclass that
 * returns its factory and a few inputs it can describe:
 *
 * <pre>{@code
 * final class PerLayerConformanceTest extends AbstractCacheLayoutConformanceTest
 * {
 *     protected CacheLayoutFactory newFactory() { return new PerLayerCacheLayoutFactory(); }
 *
 *     protected List<LayoutCase> cases()
 *     {
 *         Allocation layer0 = allocate(4 * 4096);
 *         ...
 *         return List.of(new LayoutCase("two layers", spec, CacheMemory.of(List.of(layer0, layer1)), Rank.single(),
 *                 List.of(new LayerView("layers.0", layer0.address(), 4096, 4096, 4), ...)));
 *     }
 * }
 * }</pre>
 *
 * <p>Each case carries, besides the layout's input, the <em>placement</em>: where the engine really
 * put each layer's blocks. The suite checks the geometry against the placement, never against the
 * layout's own arithmetic, so a layout that misreads its memory fails.
 */
public abstract class AbstractCacheLayoutConformanceTest
{
    private Arena arena;
    private List<LayoutCase> cases;

    /** For a layout's one-class subclass. */
    protected AbstractCacheLayoutConformanceTest()
    {
    }

    /**
     * One input a layout must describe, with the truth to check the result against.
     *
     * @param name a short description, used in failure messages.
     * @param spec the model's cache spec.
     * @param memory the memory given to the layout.
     * @param rank the rank described.
     * @param placement where each layer owned by the rank's stage really lies: one view per layer,
     *     block {@code b} of the layer being {@code [address + b * blockStride, + blockBytes)}; for a
     *     layer kept as K/V planes, where its key plane lies.
     * @param valuePlacement for layers kept as K/V planes, where each value plane lies; empty when
     *     keys and values are joint.
     */
    public record LayoutCase(String name, ModelCacheSpec spec, CacheMemory memory, Rank rank, List<LayerView> placement, List<LayerView> valuePlacement)
    {
        /** Validates the values and copies the lists. */
        public LayoutCase
        {
            requireNonNull(name, "name is null");
            requireNonNull(spec, "spec is null");
            requireNonNull(memory, "memory is null");
            requireNonNull(rank, "rank is null");
            placement = List.copyOf(requireNonNull(placement, "placement is null"));
            valuePlacement = List.copyOf(requireNonNull(valuePlacement, "valuePlacement is null"));
        }

        /**
         * Creates a case whose layers keep keys and values joint.
         *
         * @param name see the record.
         * @param spec see the record.
         * @param memory see the record.
         * @param rank see the record.
         * @param placement see the record.
         */
        public LayoutCase(String name, ModelCacheSpec spec, CacheMemory memory, Rank rank, List<LayerView> placement)
        {
            this(name, spec, memory, rank, placement, List.of());
        }
    }

    /**
     * Returns the factory of the layout under test.
     *
     * @return a new factory.
     */
    protected abstract CacheLayoutFactory newFactory();

    /**
     * Returns the inputs the suite describes; called once per test, after host memory can be
     * allocated with {@link #allocate(long)}.
     *
     * @return at least one case.
     */
    protected abstract List<LayoutCase> cases();

    /**
     * Returns the options the layout is created with.
     *
     * @return layout options; empty by default.
     */
    protected Map<String, String> config()
    {
        return Map.of();
    }

    /**
     * Extension point for the geometry wire format, which {@link #geometrySurvivesTheWireFormat()}
     * checks each geometry's round trip through. By default it is kvbridge-core's own
     * ({@code io.kvbridge.core.tools.GeometryRoundTrip}) when {@code kvbridge-core} is on the test
     * class path, which is how a layout written outside this project runs the whole suite; a
     * plugin module that may not see core leaves it out, and that test is then reported as
     * skipped, not passed.
     *
     * @return the wire format; empty when none is on the class path.
     */
    protected Optional<GeometryWireFormat> wireFormat()
    {
        return CoreWireFormat.find();
    }

    /**
     * Allocates zeroed host memory that lives until the end of the test.
     *
     * @param bytes size; positive.
     * @return the allocation covering it.
     */
    protected final Allocation allocate(long bytes)
    {
        MemorySegment segment = arena.allocate(bytes, 4096);
        return Allocation.host(segment);
    }

    @BeforeEach
    void openArena()
    {
        arena = Arena.ofShared();
    }

    @AfterEach
    void closeArena()
    {
        arena.close();
    }

    private List<LayoutCase> allCases()
    {
        if (cases == null) {
            cases = List.copyOf(cases());
            assertFalse(cases.isEmpty(), "cases() returned no case: give the suite at least one input to describe");
        }
        return cases;
    }

    private CacheLayout newLayout()
    {
        return newFactory().create(config());
    }

    private CacheGeometry describe(LayoutCase input)
    {
        try {
            return newLayout().describe(input.spec(), input.memory(), input.rank());
        }
        catch (KvBridgeException e) {
            return fail("case '" + input.name() + "': describe failed: " + e.getMessage(), e);
        }
    }

    @Test
    void factoryIsNamedVersionedAndStrictAboutOptions()
    {
        CacheLayoutFactory factory = newFactory();
        assertTrue(factory.name().matches("[a-z][a-z0-9-]{0,63}"), () -> "layout name '" + factory.name() + "' breaks the naming rule");
        assertEquals(Spi.VERSION, factory.spiVersion(), "spiVersion() must return Spi.VERSION");
        assertEquals(factory.name(), newLayout().name(), "the layout must carry its factory's name");
        Map<String, String> withUnknown = new HashMap<>(config());
        withUnknown.put("no-such-option-exists", "1");
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> factory.create(withUnknown), "an unknown option must be rejected");
        assertEquals(ErrorCode.CONFIG_INVALID, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains("no-such-option-exists"), () -> "the error must name the unknown option: " + e.getMessage());
    }

    @Test
    void geometryDescribesTheRankAndModel()
    {
        for (LayoutCase input : allCases()) {
            CacheGeometry geometry = describe(input);
            assertEquals(newFactory().name(), geometry.layoutName(), () -> input.name() + ": layout name");
            assertEquals(input.rank(), geometry.rank(), () -> input.name() + ": rank");
            assertEquals(input.spec().identity(), geometry.model(), () -> input.name() + ": model identity");
            assertEquals(input.spec().groups(), geometry.groups(), () -> input.name() + ": cache groups");
            assertEquals(0, input.spec().blockTokens() % geometry.blockTokens(),
                    () -> input.name() + ": geometry blockTokens=" + geometry.blockTokens() + " must divide the scheduler block " + input.spec().blockTokens());
            assertEquals(input.spec().blockTokens(), (long) geometry.blockTokens() * geometry.kernelBlocksPerLogical(),
                    () -> input.name() + ": blockTokens x kernelBlocksPerLogical must give the scheduler block");
        }
    }

    @Test
    void describingTwiceGivesAnEqualGeometryInTheSameOrder()
    {
        for (LayoutCase input : allCases()) {
            CacheGeometry first = describe(input);
            CacheGeometry second = describe(input);
            CacheGeometry rebuilt = newLayout().describe(copyOf(input.spec()), new CacheMemory(new ArrayList<>(input.memory().allocations()),
                    new ArrayList<>(input.memory().views())), new Rank(input.rank().ppRank(), input.rank().ppSize(), input.rank().tpRank(), input.rank().tpSize()));
            assertEquals(first, second, () -> input.name() + ": the same input gave two different geometries");
            assertEquals(first, rebuilt, () -> input.name() + ": an equal input gave a different geometry");
            assertEquals(first.regions().stream().map(Region::name).toList(), rebuilt.regions().stream().map(Region::name).toList(),
                    () -> input.name() + ": region order changed");
        }
    }

    private static ModelCacheSpec copyOf(ModelCacheSpec spec)
    {
        return new ModelCacheSpec(spec.identity(), spec.blockTokens(), spec.kernelBlocksPerLogical(), new ArrayList<>(spec.groups()),
                new ArrayList<>(spec.layers()), new ArrayList<>(spec.stageLayerCounts()));
    }

    @Test
    void allocationsAreTakenFromTheGivenMemory()
    {
        for (LayoutCase input : allCases()) {
            CacheGeometry geometry = describe(input);
            assertFalse(geometry.allocations().isEmpty(), () -> input.name() + ": no allocation to register");
            for (Allocation allocation : geometry.allocations()) {
                assertTrue(input.memory().allocations().stream().anyMatch(given -> given.kind() == allocation.kind() && given.device() == allocation.device()
                                && given.contains(allocation.address(), allocation.bytes())),
                        () -> input.name() + ": allocation " + allocation + " is not inside the memory the engine gave");
                assertTrue(geometry.regions().stream().anyMatch(region -> allocation.contains(region.base(), region.end() - region.base())),
                        () -> input.name() + ": allocation " + allocation + " holds no region (registering it would be wasted)");
            }
        }
    }

    @Test
    void regionsDoNotOverlapUnlessTheLayoutSaysSo()
    {
        assumeFalse(newLayout().regionsMayOverlap(), "the layout declares that its regions may overlap");
        for (LayoutCase input : allCases()) {
            CacheGeometry geometry = describe(input);
            List<long[]> windows = new ArrayList<>();
            for (int r = 0; r < geometry.regions().size(); r++) {
                Region region = geometry.regions().get(r);
                for (int b = 0; b < region.capacity(); b++) {
                    windows.add(new long[] {region.blockAddress(b), region.blockAddress(b) + region.blockBytes(), r, b});
                }
            }
            windows.sort((x, y) -> Long.compare(x[0], y[0]));
            for (int i = 1; i < windows.size(); i++) {
                long[] previous = windows.get(i - 1);
                long[] current = windows.get(i);
                assertTrue(current[0] >= previous[1], () -> String.format("%s: block %d of region %s [0x%x, 0x%x) overlaps block %d of region %s [0x%x, 0x%x)",
                        input.name(), current[3], geometry.regions().get((int) current[2]).name(), current[0], current[1],
                        previous[3], geometry.regions().get((int) previous[2]).name(), previous[0], previous[1]));
            }
        }
    }

    @Test
    void everyOwnedLayerIsInExactlyOneRegion()
    {
        for (LayoutCase input : allCases()) {
            CacheGeometry geometry = describe(input);
            Set<String> owned = new HashSet<>();
            for (LayerSpec layer : input.spec().layersOfStage(input.rank().ppRank())) {
                owned.add(layer.name());
            }
            Map<String, Integer> seen = new HashMap<>();
            for (Region region : geometry.regions()) {
                for (String member : region.members()) {
                    assertTrue(owned.contains(member), () -> input.name() + ": region " + region.name() + " holds layer " + member
                            + ", which stage " + input.rank().ppRank() + " does not own");
                    seen.merge(member + "/" + region.part(), 1, Integer::sum);
                }
            }
            boolean planes = !input.valuePlacement().isEmpty();
            for (String layer : owned) {
                for (KvPart part : KvPart.values()) {
                    int expected = part.plane() == planes ? 1 : 0;
                    assertEquals(expected, seen.getOrDefault(layer + "/" + part, 0), () -> input.name() + ": layer " + layer + " must be in exactly "
                            + (planes ? "one KEY and one VALUE region" : "one JOINT region") + " (" + part + ")");
                }
            }
        }
    }

    @Test
    void regionGroupIdsFollowTheirMembers()
    {
        for (LayoutCase input : allCases()) {
            CacheGeometry geometry = describe(input);
            Map<String, Integer> groupOf = new HashMap<>();
            for (LayerSpec layer : input.spec().layers()) {
                groupOf.put(layer.name(), layer.groupId());
            }
            for (Region region : geometry.regions()) {
                Set<Integer> groups = new HashSet<>();
                for (String member : region.members()) {
                    groups.add(groupOf.get(member));
                }
                // a region advertising one group while another group's layer lives in it would never receive that group's blocks
                int expected = groups.size() == 1 ? groups.iterator().next() : -1;
                assertEquals(expected, region.groupId(), () -> input.name() + ": region " + region.name() + " holds layers of groups " + groups);
            }
        }
    }

    @Test
    void capacityTimesStrideFitsTheAllocationAndMatchesTheLayers()
    {
        for (LayoutCase input : allCases()) {
            CacheGeometry geometry = describe(input);
            for (Region region : geometry.regions()) {
                Map<String, LayerView> placement = placementOf(input, region.part());
                Allocation home = geometry.allocations().stream().filter(a -> a.contains(region.base(), 1)).findFirst()
                        .orElseThrow(() -> new AssertionError(input.name() + ": region " + region.name() + " starts outside every allocation"));
                long span = (region.capacity() - 1L) * region.stride() + region.blockBytes();
                assertTrue(span <= home.end() - region.base(), () -> String.format("%s: region %s: (capacity=%d - 1) x stride=%d + blockBytes=%d = %d "
                        + "runs past its allocation end by %d bytes", input.name(), region.name(), region.capacity(), region.stride(), region.blockBytes(),
                        span, span - (home.end() - region.base())));
                for (String member : region.members()) {
                    LayerView layer = placement.get(member);
                    assertEquals(layer.blocks(), region.capacity(), () -> input.name() + ": region " + region.name() + " capacity must equal the blocks of "
                            + member);
                }
            }
        }
    }

    @Test
    void descriptorsOfBlockBCoverExactlyBlockBOfEveryLayer()
    {
        for (LayoutCase input : allCases()) {
            CacheGeometry geometry = describe(input);
            for (Region region : geometry.regions()) {
                Map<String, LayerView> placement = placementOf(input, region.part());
                for (int b = 0; b < region.capacity(); b++) {
                    long start = region.blockAddress(b);
                    long end = start + region.blockBytes();
                    long[][] pages = new long[region.members().size()][];
                    for (int m = 0; m < region.members().size(); m++) {
                        String member = region.members().get(m);
                        LayerView layer = placement.get(member);
                        long pageStart = layer.blockAddress(b);
                        long pageEnd = pageStart + layer.blockBytes();
                        pages[m] = new long[] {pageStart, pageEnd};
                        int block = b;
                        assertTrue(pageStart >= start && pageEnd <= end, () -> String.format(
                                "%s: block %d of layer %s [0x%x, 0x%x) is not inside descriptor %d of region %s [0x%x, 0x%x)",
                                input.name(), block, member, pageStart, pageEnd, block, region.name(), start, end));
                        if (region.packed()) {
                            PackedMember packed = region.packedMembers().get(m);
                            assertEquals(pageStart - start, packed.offset(), () -> input.name() + ": packed offset of " + member + " in " + region.name());
                            assertEquals(layer.blockBytes(), packed.pageBytes(), () -> input.name() + ": packed page of " + member + " in " + region.name());
                        }
                    }
                    long uncovered = firstUncovered(pages, start, end);
                    int block = b;
                    assertEquals(-1, uncovered, () -> String.format("%s: descriptor %d of region %s [0x%x, 0x%x) carries byte 0x%x, which is in no member "
                            + "layer's block %d", input.name(), block, region.name(), start, end, uncovered, block));
                }
            }
        }
    }

    /** Returns the first byte of {@code [start, end)} outside every page, or -1 when the pages cover it. */
    private static long firstUncovered(long[][] pages, long start, long end)
    {
        long[][] sorted = pages.clone();
        Arrays.sort(sorted, (x, y) -> Long.compare(x[0], y[0]));
        long covered = start;
        for (long[] page : sorted) {
            if (page[0] > covered) {
                return covered;
            }
            covered = Math.max(covered, page[1]);
        }
        return covered >= end ? -1 : covered;
    }

    @Test
    void exchangeClippingNeverAsksForMoreBlocksThanHeld()
    {
        CacheLayout layout = newLayout();
        for (LayoutCase input : allCases()) {
            for (CacheGroup group : input.spec().groups()) {
                int previous = 0;
                for (int held = 0; held <= 300; held++) {
                    int exchanged = layout.exchangedBlocks(group, input.spec().blockTokens(), held);
                    int blocks = held;
                    assertTrue(exchanged >= 0 && exchanged <= held,
                            () -> input.name() + ": group " + group.id() + " exchanges " + exchanged + " of " + blocks + " blocks held");
                    assertTrue(exchanged >= previous, () -> input.name() + ": group " + group.id() + " exchanges fewer blocks as the request grows");
                    previous = exchanged;
                }
            }
        }
    }

    @Test
    void geometrySurvivesTheWireFormat()
    {
        Optional<GeometryWireFormat> format = wireFormat();
        assumeTrue(format.isPresent(), "kvbridge-core, which owns the wire format, is not on this test class path: add it at test scope "
                + "(a plugin module of this project may not, and kvbridge-core's LayoutGeometriesWireTest checks the bundled layouts instead)");
        for (LayoutCase input : allCases()) {
            CacheGeometry geometry = describe(input);
            CacheGeometry received = format.get().roundTrip(geometry);
            assertNotNull(received, () -> input.name() + ": the wire format returned null");
            assertEquals(geometry, received, () -> input.name() + ": the geometry changed on its way through the wire format");
        }
    }

    private static Map<String, LayerView> placementOf(LayoutCase input, KvPart part)
    {
        Map<String, LayerView> placement = new LinkedHashMap<>();
        for (LayerView view : part == KvPart.VALUE ? input.valuePlacement() : input.placement()) {
            assertTrue(placement.put(view.layer(), view) == null, () -> input.name() + ": the case places layer " + view.layer() + " twice");
        }
        for (LayerSpec layer : input.spec().layersOfStage(input.rank().ppRank())) {
            assertTrue(placement.containsKey(layer.name()), () -> input.name() + ": the case does not place owned layer " + layer.name());
        }
        return placement;
    }
}
