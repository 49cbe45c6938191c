package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.PullKey;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The pull keys of the requests of one engine's side channel in this process: {@link PullKey#BYTES}
 * bytes drawn from {@link SecureRandom} per request id. Every rank that side channel serves reports
 * the request separately and returns parameters of its own, any of which the router may forward,
 * so the ranks take the key the first of them drew: it is kept while they report the request (for
 * a retention from each one's report, the request's lease), then forgotten, and a request id used
 * again later gets a new key. Nothing about a key follows from the request id or anything published;
 * it leaves the process only in the parameters.
 *
 * <p>Thread-safe: one lock, taken once per reported request.
 */
final class PullKeys
{
    private static final SecureRandom RANDOM = new SecureRandom();
    // sweeps for expired keys when the table has grown past this since the last sweep
    private static final int MIN_SWEEP = 64;

    private final LongSupplier monotonicNanos;
    private final Map<String, Drawn> drawn = new HashMap<>();
    private int nextSweep = MIN_SWEEP;

    private record Drawn(PullKey key, long expiresNanos)
    {
    }

    /**
     * Creates an empty table.
     *
     * @param monotonicNanos the clock of the retention.
     */
    PullKeys(LongSupplier monotonicNanos)
    {
        this.monotonicNanos = requireNonNull(monotonicNanos, "monotonicNanos is null");
    }

    /**
     * Returns the key a request is granted under: the one another rank drew for it within the
     * retention, else a fresh one.
     *
     * @param producerRequestId the producer's id of the request.
     * @param retentionNanos how long other ranks may still ask for the same key: the request's lease.
     * @return its key.
     */
    synchronized PullKey of(String producerRequestId, long retentionNanos)
    {
        long now = monotonicNanos.getAsLong();
        if (drawn.size() >= nextSweep) {
            sweep(now);
        }
        Drawn current = drawn.get(producerRequestId);
        PullKey key = current != null && current.expiresNanos - now > 0 ? current.key : fresh();
        drawn.put(producerRequestId, new Drawn(key, now + Math.max(1, retentionNanos)));
        return key;
    }

    private void sweep(long now)
    {
        for (Iterator<Drawn> it = drawn.values().iterator(); it.hasNext(); ) {
            if (it.next().expiresNanos - now <= 0) {
                it.remove();
            }
        }
        nextSweep = Math.max(MIN_SWEEP, 2 * drawn.size());
    }

    /** {@return keys kept, for tests} */
    synchronized int size()
    {
        return drawn.size();
    }

    private static PullKey fresh()
    {
        byte[] key = new byte[PullKey.BYTES];
        RANDOM.nextBytes(key);
        return PullKey.of(key);
    }
}
