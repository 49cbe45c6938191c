package io.kvbridge.testkit;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.testkit.engine.EventConditions.event;
import static org.junit.platform.testkit.engine.EventConditions.finishedWithFailure;
import static org.junit.platform.testkit.engine.EventConditions.test;

import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/** Runs a conformance suite inside a test, to check which of its tests fail. */
final class SuiteRuns
{
    private SuiteRuns()
    {
    }

    static Events run(Class<?> suite)
    {
        return EngineTestKit.engine("junit-jupiter").selectors(selectClass(suite)).execute().testEvents();
    }

    static void assertFails(Events events, String... tests)
    {
        for (String name : tests) {
            events.assertThatEvents().haveAtLeastOne(event(test(name), finishedWithFailure()));
        }
    }
}
