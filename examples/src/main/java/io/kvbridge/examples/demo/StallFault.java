package io.kvbridge.examples.demo;

import io.kvbridge.core.config.Durations;
import io.kvbridge.spi.KvBridgeException;

/** Reads the {@code stall-producer:DURATION} fault of {@code demo --fault}; what it does is {@link ProducerStall}'s. */
public final class StallFault
{
    /** How the fault's value starts. */
    public static final String PREFIX = "stall-producer:";

    private StallFault()
    {
    }

    /**
     * @param fault the option's value, starting with {@link #PREFIX}.
     * @param processes whether the engines run in processes of their own.
     * @param requests the run's requests.
     * @param leaseMillis the producer's lease.
     * @return how long the producer stage stays stopped.
     * @throws IllegalArgumentException naming the value and the fix when the fault cannot run so.
     */
    public static long millis(String fault, boolean processes, int requests, long leaseMillis)
    {
        long millis;
        try {
            millis = Durations.parse("--fault", fault.substring(PREFIX.length())).toMillis();
        }
        catch (KvBridgeException e) {
            throw new IllegalArgumentException("--fault=" + fault + " is not stall-producer:DURATION with a duration such as 4s or 1500ms: "
                    + e.getMessage(), e);
        }
        if (millis < 200) {
            throw new IllegalArgumentException("--fault=" + fault + " stops the producer for " + millis + " ms; give at least 200ms, so that the decoder, "
                    + "which gives up after half of it, can finish a handshake");
        }
        if (!processes) {
            throw new IllegalArgumentException("--fault=" + fault + " stops the producer's process, which in one JVM is the decoder's too; add --processes");
        }
        if (requests < 2) {
            throw new IllegalArgumentException("--fault=" + fault + " stalls the middle request after the others connected; give --requests of at least 2");
        }
        if (leaseMillis <= millis) {
            throw new IllegalArgumentException("--fault=" + fault + " with --lease-seconds of " + leaseMillis + " ms: the producer's lease would end "
                    + "before it resumes, and nothing would write late; give --lease-seconds longer than the stall");
        }
        return millis;
    }
}
