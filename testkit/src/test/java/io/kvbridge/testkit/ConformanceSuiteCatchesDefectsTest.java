package io.kvbridge.testkit;

import static io.kvbridge.testkit.SuiteRuns.assertFails;
import static io.kvbridge.testkit.SuiteRuns.run;
import static org.junit.platform.testkit.engine.EventConditions.event;

import io.kvbridge.testkit.TestingTransferBackendFactory.Defect;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.Events;

/**
 * Runs the conformance suite against transports broken on purpose and checks that it fails exactly
 * where each defect shows: a suite that passes a broken transport would prove nothing.
 */
final class ConformanceSuiteCatchesDefectsTest
{
    // a defect that shows as something never happening fails only once the deadline passes
    private static final Duration QUICK_DEADLINE = Duration.ofSeconds(2);

    /** The suite against the testing transport with one defect. */
    abstract static class Broken extends AbstractTransferBackendConformanceTest
    {
        private final Defect defect;
        private final Duration deadline;

        Broken(Defect defect)
        {
            this(defect, null);
        }

        Broken(Defect defect, Duration deadline)
        {
            this.defect = defect;
            this.deadline = deadline;
        }

        @Override
        protected TransferBackendFactory newFactory()
        {
            return new TestingTransferBackendFactory(Set.of(defect));
        }

        @Override
        protected Duration deadline()
        {
            return deadline == null ? super.deadline() : deadline;
        }
    }

    static class NotifiesBeforeData extends Broken
    {
        NotifiesBeforeData()
        {
            super(Defect.NOTIFY_BEFORE_DATA);
        }
    }

    static class SkipsRangeCheck extends Broken
    {
        SkipsRangeCheck()
        {
            super(Defect.SKIP_RANGE_CHECK);
        }
    }

    static class CopiesShort extends Broken
    {
        CopiesShort()
        {
            super(Defect.SHORT_COPY);
        }
    }

    static class DropsNotifications extends Broken
    {
        DropsNotifications()
        {
            super(Defect.DROP_NOTIFICATIONS, QUICK_DEADLINE);
        }
    }

    static class LeaksOnClose extends Broken
    {
        LeaksOnClose()
        {
            super(Defect.LEAK_ON_CLOSE);
        }
    }

    static class MergesAcrossRegistrations extends Broken
    {
        MergesAcrossRegistrations()
        {
            super(Defect.MERGE_ACROSS_REGISTRATIONS);
        }
    }

    static class MergesOneSided extends Broken
    {
        MergesOneSided()
        {
            super(Defect.MERGE_ONE_SIDED);
        }
    }

    static class MiscountsOperations extends Broken
    {
        MiscountsOperations()
        {
            super(Defect.MISCOUNT_OPERATIONS);
        }
    }

    static class NeverWakes extends Broken
    {
        NeverWakes()
        {
            super(Defect.NO_WAKE_UPS, QUICK_DEADLINE);
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
