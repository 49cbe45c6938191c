package io.kvbridge.core.engine;

import io.kvbridge.api.RequestIds;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Push registrations that reached a producer rank before the prefill they name finished, kept until
 * that prefill is held or until they expire. Indexed by the base id a registration may match, so a
 * finished prefill finds its registrations without a scan. Owned by the rank's worker thread.
 */
final class RegistrationStash
{
    /** A stashed registration, who sent it, and when it expires (monotonic nanoseconds). */
    record Stashed(Messages.Registration registration, String sender, long expiry)
    {
    }

    private final Map<String, Stashed> byKey = new HashMap<>();
    private final Map<String, List<String>> keysByBase = new HashMap<>();

    /** {@return the key a registration is known by: the consumer's request, engine and rank} */
    static String key(Messages.Registration registration)
    {
        return registration.requestId() + "|" + registration.engineId() + "|" + registration.ppRank() + "|" + registration.tpRank();
    }

    /**
     * Whether a registration names a producer request: by its producer request id when it carries
     * one, else by the consumer's request id or the base id both share.
     */
    static boolean matches(String producerRequestId, Messages.Registration registration)
    {
        if (!registration.producerRequestId().isEmpty()) {
            return registration.producerRequestId().equals(producerRequestId);
        }
        return registration.requestId().equals(producerRequestId)
                || RequestIds.baseId(registration.requestId()).equals(RequestIds.baseId(producerRequestId));
    }

    private static String base(Messages.Registration registration)
    {
        return RequestIds.baseId(registration.producerRequestId().isEmpty() ? registration.requestId() : registration.producerRequestId());
    }

    boolean contains(String key)
    {
        return byKey.containsKey(key);
    }

    int size()
    {
        return byKey.size();
    }

    void put(Messages.Registration registration, String sender, long expiry)
    {
        String key = key(registration);
        byKey.put(key, new Stashed(registration, sender, expiry));
        keysByBase.computeIfAbsent(base(registration), ignored -> new ArrayList<>(1)).add(key);
    }

    /**
     * Removes and returns the registrations that name a request now held, in the order they came.
     *
     * @param requestId the producer's request.
     * @return what matched; empty when nothing did.
     */
    List<Stashed> takeMatching(String requestId)
    {
        List<String> candidates = keysByBase.get(RequestIds.baseId(requestId));
        if (candidates == null) {
            return List.of();
        }
        List<Stashed> taken = new ArrayList<>(1);
        for (String key : List.copyOf(candidates)) {
            Stashed stashed = byKey.get(key);
            if (stashed != null && matches(requestId, stashed.registration())) {
                remove(key);
                taken.add(stashed);
            }
        }
        return taken;
    }

    /**
     * Removes and returns the registrations whose expiry has come.
     *
     * @param now the monotonic clock.
     * @return the expired ones.
     */
    List<Stashed> takeExpired(long now)
    {
        List<Stashed> expired = new ArrayList<>();
        for (Stashed stashed : byKey.values()) {
            if (now - stashed.expiry() >= 0) {
                expired.add(stashed);
            }
        }
        for (Stashed stashed : expired) {
            remove(key(stashed.registration()));
        }
        return expired;
    }

    private void remove(String key)
    {
        Stashed stashed = byKey.remove(key);
        if (stashed != null) {
            String base = base(stashed.registration());
            List<String> keys = keysByBase.get(base);
            if (keys != null && keys.remove(key) && keys.isEmpty()) {
                keysByBase.remove(base);
            }
        }
    }
}
