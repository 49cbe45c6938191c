package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.anyLong;
import static org.mockito.ArgumentMatchers.eq;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.never;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.verifyNoMoreInteractions;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.spi.KvBridgeException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.mockito.ArgumentCaptor;
import org.slf4j.LoggerFactory;

/** How the services use the summary schedule they are given: the scheduler is the boundary, so it is a mock. */
@Timeout(10)
final class EngineServicesTest
{
    private static EngineServices services(SummarySchedule schedule)
    {
        return new EngineServices(new RankTransports(new LocalBackendFactory(), Map.of(), "summary", new byte[0]), SideChannelClock.system(),
                SideChannelSettings.builder().build(), new SimpleMeterRegistry(), schedule);
    }

    @Test
    void theSummaryRunsOnTheGivenSchedulerAtItsIntervalAndStopsWithTheServices()
    {
        ScheduledExecutorService scheduler = mock(ScheduledExecutorService.class);
        Logger logger = (Logger) LoggerFactory.getLogger(EngineServices.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        logger.addAppender(lines);
        try {
            EngineServices services = services(new SummarySchedule(Duration.ofSeconds(7), scheduler));
            ArgumentCaptor<Runnable> summary = ArgumentCaptor.forClass(Runnable.class);
            verify(scheduler).scheduleAtFixedRate(summary.capture(), eq(7_000_000_000L), eq(7_000_000_000L), eq(TimeUnit.NANOSECONDS));

            services.metrics().transferDone(2_000_000, 10_000, 1_000_000, 8, 1);
            summary.getValue().run();
            assertEquals(1, lines.list.size());
            assertEquals("kvbridge transfers: count=1", lines.list.getFirst().getFormattedMessage().substring(0, 27));
            assertNull(services.metrics().drainSummary(), "the scheduled run drained its interval");

            verify(scheduler, never()).shutdownNow();
            services.close();
            verify(scheduler).shutdownNow();
            verifyNoMoreInteractions(scheduler);
            assertEquals(1, lines.list.size(), "closing logs only an interval that has something in it");
        }
        finally {
            logger.detachAppender(lines);
        }
    }

    @Test
    void aZeroIntervalSchedulesNothing()
    {
        ScheduledExecutorService scheduler = mock(ScheduledExecutorService.class);
        EngineServices services = services(new SummarySchedule(Duration.ZERO, scheduler));
        verify(scheduler, never()).scheduleAtFixedRate(any(), anyLong(), anyLong(), any());
        services.close();
        verify(scheduler).shutdownNow();
        verifyNoMoreInteractions(scheduler);
    }

    @Test
    void aNegativeIntervalIsRefused()
    {
        ScheduledExecutorService scheduler = mock(ScheduledExecutorService.class);
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> new SummarySchedule(Duration.ofSeconds(-1), scheduler));
        assertTrue(e.getMessage().contains("summary interval=PT-1S is negative"), e.getMessage());
    }
}
