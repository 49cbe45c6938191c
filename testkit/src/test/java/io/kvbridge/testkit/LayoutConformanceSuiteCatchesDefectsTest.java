package io.kvbridge.testkit;

import static io.kvbridge.testkit.SuiteRuns.assertFails;
import static io.kvbridge.testkit.SuiteRuns.run;
import static org.junit.platform.testkit.engine.EventConditions.abortedWithReason;
import static org.junit.platform.testkit.engine.EventConditions.event;
import static org.junit.platform.testkit.engine.EventConditions.finishedSuccessfully;
import static org.junit.platform.testkit.engine.EventConditions.test;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import io.kvbridge.testkit.TestingCacheLayoutFactory.Defect;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.Events;

/**
 * Runs the layout conformance suite against layouts broken on purpose and checks that it fails
 * exactly where each defect shows: a suite that passes a broken layout would prove nothing.
 */
final class LayoutConformanceSuiteCatchesDefectsTest
{
    abstract static class Broken extends TestingLayoutCases
    {
        abstract Defect defect();

        @Override
        protected CacheLayoutFactory newFactory()
        {
            return new TestingCacheLayoutFactory(Set.of(defect()));
        }
    }

    static class DropsALayer extends Broken
    {
        @Override
        Defect defect()
        {
            return Defect.DROP_LAST_LAYER;
        }
    }

    static class WrongGroup extends Broken
    {
        @Override
        Defect defect()
        {
            return Defect.ALWAYS_GROUP_ZERO;
        }
    }

    static class IgnoresStride extends Broken
    {
        @Override
        Defect defect()
        {
            return Defect.IGNORE_STRIDE;
        }
    }

    static class Shuffles extends Broken
    {
        @Override
        Defect defect()
        {
            return Defect.SHUFFLE_REGIONS;
        }
    }

    static class WidensAllocations extends Broken
    {
        @Override
        Defect defect()
        {
            return Defect.WIDEN_ALLOCATIONS;
        }
    }

    static class CapacityShort extends Broken
    {
        @Override
        Defect defect()
        {
            return Defect.CAPACITY_ONE_SHORT;
        }
    }

    static class LenientOptions extends Broken
    {
        @Override
        Defect defect()
        {
            return Defect.LENIENT_OPTIONS;
        }
    }

    /** A conforming layout seen through a wire format that forgets the region order. */
    static class LossyWire extends TestingLayoutCases
    {
        @Override
        protected CacheLayoutFactory newFactory()
        {
            return new TestingCacheLayoutFactory();
        }

        @Override
        protected Optional<GeometryWireFormat> wireFormat()
        {
            return Optional.of(geometry -> {
                List<Region> reversed = new ArrayList<>(geometry.regions()).reversed();
                return new CacheGeometry(geometry.layoutName(), geometry.rank(), geometry.model(), geometry.blockTokens(),
                        geometry.kernelBlocksPerLogical(), geometry.groups(), geometry.allocations(), reversed);
            });
        }
    }

    /** A conforming layout seen through a wire format that keeps everything. */
    static class FaithfulWire extends TestingLayoutCases
    {
        @Override
        protected CacheLayoutFactory newFactory()
        {
            return new TestingCacheLayoutFactory();
        }

        @Override
        protected Optional<GeometryWireFormat> wireFormat()
        {
            return Optional.of(geometry -> new CacheGeometry(geometry.layoutName(), geometry.rank(), geometry.model(), geometry.blockTokens(),
                    geometry.kernelBlocksPerLogical(), List.copyOf(geometry.groups()), List.copyOf(geometry.allocations()), List.copyOf(geometry.regions())));
        }
    }

    @Test
    void droppedLayerIsCaught()
    {
        assertFails(run(DropsALayer.class), "everyOwnedLayerIsInExactlyOneRegion");
    }

    @Test
    void wrongGroupIsCaught()
    {
        assertFails(run(WrongGroup.class), "regionGroupIdsFollowTheirMembers");
    }

    @Test
    void ignoredStrideIsCaught()
    {
        assertFails(run(IgnoresStride.class), "descriptorsOfBlockBCoverExactlyBlockBOfEveryLayer", "regionsDoNotOverlapUnlessTheLayoutSaysSo");
    }

    @Test
    void nondeterministicOrderIsCaught()
    {
        assertFails(run(Shuffles.class), "describingTwiceGivesAnEqualGeometryInTheSameOrder");
    }

    @Test
    void inventedMemoryIsCaught()
    {
        assertFails(run(WidensAllocations.class), "allocationsAreTakenFromTheGivenMemory");
    }

    @Test
    void shortCapacityIsCaught()
    {
        assertFails(run(CapacityShort.class), "capacityTimesStrideFitsTheAllocationAndMatchesTheLayers");
    }

    @Test
    void unknownOptionsAreCaught()
    {
        assertFails(run(LenientOptions.class), "factoryIsNamedVersionedAndStrictAboutOptions");
    }

    @Test
    void lossyWireFormatIsCaught()
    {
        assertFails(run(LossyWire.class), "geometrySurvivesTheWireFormat");
    }

    @Test
    void faithfulWireFormatPasses()
    {
        run(FaithfulWire.class).assertThatEvents().haveExactly(1, event(test("geometrySurvivesTheWireFormat"), finishedSuccessfully()));
    }

    @Test
    void theUnbrokenFakePassesEverythingAndSkipsOnlyTheMissingWireFormat()
    {
        Events events = run(TestingCacheLayoutConformanceTest.class);
        events.assertStatistics(stats -> stats.failed(0).aborted(1).succeeded(10));
        events.assertThatEvents().haveExactly(1, event(test("geometrySurvivesTheWireFormat"), abortedWithReason()));
    }
}
