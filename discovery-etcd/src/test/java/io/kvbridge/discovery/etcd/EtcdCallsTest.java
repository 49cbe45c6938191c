package io.kvbridge.discovery.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** When an unreachable etcd is warned about: at an outage's first failure, and at start-up only once the grace has passed. */
class EtcdCallsTest
{
    private final Logger logger = (Logger) LoggerFactory.getLogger(EtcdCalls.class);
    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();

    @BeforeEach
    void capture()
    {
        lines.start();
        logger.addAppender(lines);
    }

    @AfterEach
    void release()
    {
        logger.detachAppender(lines);
    }

    private List<String> warnings()
    {
        return lines.list.stream().filter(line -> line.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage).toList();
    }

    @Test
    void anEtcdThatNeverAnswersIsWarnedAboutOnceTheStartupGracePasses()
            throws InterruptedException
    {
        EtcdCalls calls = new EtcdCalls("etcd://127.0.0.1:1", Duration.ofSeconds(1), Duration.ofMillis(300));
        calls.failed("first call: no answer");
        calls.willRetry("publish pp0", "no answer");
        assertEquals(List.of(), warnings(), "within the grace");
        assertTrue(calls.unreachableSince().isPresent(), "health says unreachable during the grace all the same");
        assertEquals("first call: no answer", calls.failure());

        Thread.sleep(400);
        calls.failed("probe: no answer");
        calls.failed("probe again: no answer");
        assertEquals(List.of("etcd://127.0.0.1:1: etcd unreachable (no answer since it was opened, start-up grace PT0.3S): probe: no answer"), warnings());
        calls.willRetry("publish pp1", "no answer");
        assertEquals(2, warnings().size(), warnings().toString());
    }

    @Test
    void anOutageAfterTheFirstAnswerIsWarnedAboutAtOnceAndItsEndTold()
    {
        EtcdCalls calls = new EtcdCalls("etcd://127.0.0.1:1", Duration.ofSeconds(1), Duration.ofMinutes(10));
        calls.succeeded();
        calls.failed("watch failed");
        calls.failed("probe: no answer");
        assertEquals(List.of("etcd://127.0.0.1:1: etcd unreachable: watch failed"), warnings());
        calls.succeeded();
        assertTrue(calls.unreachableSince().isEmpty());
        assertTrue(lines.list.getLast().getFormattedMessage().startsWith("etcd://127.0.0.1:1: etcd answers again (unreachable since "),
                lines.list.getLast().getFormattedMessage());
        calls.failed("second outage");
        assertEquals(2, warnings().size(), "each outage is warned about: " + warnings());
    }

    @Test
    void aFailedStartupCallThatIsAnsweredLaterLeavesNoWarning()
    {
        EtcdCalls calls = new EtcdCalls("etcd://127.0.0.1:1", Duration.ofSeconds(1), Duration.ofMinutes(10));
        calls.failed("grant a lease failed: no answer within requestTimeout=PT1S");
        calls.willRetry("publish pp0", "no answer");
        calls.succeeded();
        assertTrue(calls.unreachableSince().isEmpty());
        assertEquals(List.of(), warnings());
    }
}
