package io.kvbridge.engine.jlama.serve;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.spi.KvBridgeException;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The deadlines an engine JVM sets from the longest prefill it expects. A streamed request is
 * announced before its forward pass: the producer holds its blocks under a lease from then on, the
 * decoder's registration waits for layers and the server waits for the blocks, all while the pass
 * runs. With the defaults (a 30 s lease, 60 s for the rest) a prefill past about 30 s loses its
 * request; a router that runs longer prompts starts the engine JVMs with
 * {@code -Dkvbridge.jlama.longest-prefill-seconds=N}, and each deadline then outlasts N.
 */
final class PrefillDeadlines
{
    /** The system property an engine JVM is started with: the longest prefill it must wait out, in seconds. */
    static final String PROPERTY = "kvbridge.jlama.longest-prefill-seconds";

    /** What each deadline adds to the longest prefill: the hand-off after it, and a stage's wait for the slowest other stage. */
    private static final Duration MARGIN = Duration.ofSeconds(120);

    private static final Duration DEFAULT_RECEIVE = Duration.ofSeconds(60);

    private PrefillDeadlines()
    {
    }

    /**
     * Returns the longest prefill the JVM was started for.
     *
     * @return the duration, or zero when the property is not set.
     */
    static Duration longestPrefill()
    {
        String value = System.getProperty(PROPERTY);
        if (value == null) {
            return Duration.ZERO;
        }
        int seconds;
        try {
            seconds = Integer.parseInt(value);
        }
        catch (NumberFormatException e) {
            seconds = -1;
        }
        KvBridgeException.checkArgument(seconds > 0, "-D%s=%s is not a positive number of seconds; give the longest prefill this JVM serves",
                PROPERTY, value);
        return Duration.ofSeconds(seconds);
    }

    /**
     * Returns how long the decoder waits for a session's blocks, and for the first token of a streamed session whose blocks landed.
     *
     * @return nanoseconds: 60 s, or the longest prefill plus the margin when longer.
     */
    static long receiveNanos()
    {
        Duration longest = longestPrefill();
        Duration receive = longest.isZero() ? DEFAULT_RECEIVE : longest.plus(MARGIN);
        return TimeUnit.SECONDS.toNanos(Math.max(DEFAULT_RECEIVE.toSeconds(), receive.toSeconds()));
    }

    /**
     * Stretches the producer's lease and the consumer's registration deadline past the longest
     * prefill; leaves the settings as they are when the property is not set.
     *
     * @param settings the engine's settings, after any lease of its own.
     */
    static void extend(ConnectorSettings.Builder settings)
    {
        Duration longest = longestPrefill();
        if (!longest.isZero()) {
            settings.leaseDuration(longest.plus(MARGIN)).registrationTimeout(longest.plus(MARGIN));
        }
    }
}
