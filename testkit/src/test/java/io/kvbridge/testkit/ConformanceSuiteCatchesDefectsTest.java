package io.kvbridge.testkit;

import static io.kvbridge.testkit.SuiteRuns.assertFails;
import static io.kvbridge.testkit.SuiteRuns.run;
import static org.junit.platform.testkit.engine.EventConditions.event;

import io.kvbridge.testkit.TestingTransferBackendFactory.Defect;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.Events;

/**
 * Runs the conformance suite against transports broken on purpose and checks that it fails exactly
 * where each defect shows: a suite that passes a broken transport would prove nothing.
 */
final class ConformanceSuiteCatchesDefectsTest
{
    static class NotifiesBeforeData extends AbstractTransferBackendConformanceTest
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.NOTIFY_BEFORE_DATA));
        }
    }

    static class SkipsRangeCheck extends AbstractTransferBackendConformanceTest
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.SKIP_RANGE_CHECK));
        }
    }

    static class CopiesShort extends AbstractTransferBackendConformanceTest
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.SHORT_COPY));
        }
    }

    /** A defect that shows as something never happening: a short deadline keeps its failures quick. */
    abstract static class FailsByTimeout extends AbstractTransferBackendConformanceTest
    {
        @Override
        protected java.time.Duration deadline()
        {
            return java.time.Duration.ofSeconds(2);
        }
    }

    static class DropsNotifications extends FailsByTimeout
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.DROP_NOTIFICATIONS));
        }
    }

    static class LeaksOnClose extends AbstractTransferBackendConformanceTest
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.LEAK_ON_CLOSE));
        }
    }

    static class MergesAcrossRegistrations extends AbstractTransferBackendConformanceTest
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.MERGE_ACROSS_REGISTRATIONS));
        }
    }

    static class MergesOneSided extends AbstractTransferBackendConformanceTest
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.MERGE_ONE_SIDED));
        }
    }

    static class MiscountsOperations extends AbstractTransferBackendConformanceTest
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.MISCOUNT_OPERATIONS));
        }
    }

    static class NeverWakes extends FailsByTimeout
    {
        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(Defect.NO_WAKE_UPS));
        }
    }

    @Test
    void notificationBeforeDataIsCaught()
    {
        assertFails(run(NotifiesBeforeData.class), "writeNotificationArrivesOnlyAfterTheData", "readNotificationReachesThePeerAfterTheData");
    }

    @Test
    void missingRangeCheckIsCaught()
    {
        assertFails(run(SkipsRangeCheck.class), "localDescriptorOutsideRegisteredMemoryIsRejected",
                "remoteDescriptorOutsidePeerMemoryIsRejected", "unregisteredMemoryIsRejectedAndNothingIsCopied");
    }

    @Test
    void shortCopyIsCaught()
    {
        assertFails(run(CopiesShort.class), "writeByIndexMovesExactlyThePairedBlocks", "readByIndexMovesExactlyThePairedBlocks",
                "manyConcurrentTransfersAllLandIntact");
    }

    @Test
    void droppedNotificationsAreCaught()
    {
        assertFails(run(DropsNotifications.class), "writeNotificationArrivesOnlyAfterTheData", "manyConcurrentTransfersAllLandIntact");
    }

    @Test
    void leakOnCloseIsCaught()
    {
        assertFails(run(LeaksOnClose.class), "releaseAndCloseLeaveNothingHeld");
    }

    @Test
    void mergingAcrossRegistrationsIsCaught()
    {
        // the bytes still land where they should: the exact operation count shows the defect
        assertFails(run(MergesAcrossRegistrations.class), "coalescingStopsAtRegistrationBoundaries");
    }

    @Test
    void mergingWithAGapOnOneSideIsCaught()
    {
        assertFails(run(MergesOneSided.class), "coalescingKeepsGapsOnEitherSide", "coalescingNeverMergesBackwards");
    }

    @Test
    void miscountedOperationsAreCaught()
    {
        assertFails(run(MiscountsOperations.class), "operationCountIsOnePerPairOrUnknownAndGoesWithTheHandle",
                "coalescingMergesRunsContiguousOnBothSides", "coalescingStopsAtRegistrationBoundaries");
    }

    @Test
    void aBrokenWakeUpPromiseIsCaught()
    {
        assertFails(run(NeverWakes.class), "aWaiterIsWokenWhenATransferEndsAndWhenANotificationArrives");
    }

    @Test
    void theUnbrokenFakePassesEverything()
    {
        Events events = run(TestingTransferBackendConformanceTest.class);
        events.assertStatistics(stats -> stats.failed(0).aborted(0));
        events.assertThatEvents().haveAtLeast(15, event(org.junit.platform.testkit.engine.EventConditions.finishedSuccessfully()));
    }
}
