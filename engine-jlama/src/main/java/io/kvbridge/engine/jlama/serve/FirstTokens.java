package io.kvbridge.engine.jlama.serve;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A decoder's sessions of streamed prefills, which it starts receiving before their first token
 * exists: the token (or the prefill's failure) comes later, in a {@code first-token} command, and
 * may come before or after the blocks landed. This pairs the two, whichever comes first.
 */
final class FirstTokens
{
    /** What a {@code first-token} command said for a session whose blocks had not landed yet. */
    private final Map<String, Outcome> early = new HashMap<>();
    /** Sessions whose blocks landed, waiting for their first token. */
    private final Map<String, Landed> landed = new HashMap<>();

    /**
     * The prefill's word on a session: its first token, or why it failed.
     *
     * @param token the first token; {@link Receiving#UNKNOWN} when it failed.
     * @param error the prefill's failure, or null.
     */
    record Outcome(int token, String error)
    {
    }

    /**
     * A session whose blocks landed.
     *
     * @param session the session.
     * @param transferNanos from {@code blocksAllocated} until the blocks landed.
     * @param readyMicros when they landed, in microseconds of the epoch (comparable across JVMs).
     */
    record Landed(Receiving session, long transferNanos, long readyMicros)
    {
    }

    /**
     * Takes what the prefill said of a session whose blocks just landed; when it has not said yet,
     * keeps the session until it does.
     *
     * @param arrived the session whose blocks landed.
     * @return the prefill's outcome, or null when the session waits for it.
     */
    Outcome landed(Landed arrived)
    {
        Outcome outcome = early.remove(arrived.session().id());
        if (outcome == null) {
            landed.put(arrived.session().id(), arrived);
        }
        return outcome;
    }

    /**
     * Takes a landed session the prefill's outcome completes; when its blocks have not landed yet,
     * keeps the outcome until they do.
     *
     * @param id the session.
     * @param outcome what the prefill said.
     * @return the landed session, or null.
     */
    Landed said(String id, Outcome outcome)
    {
        Landed arrived = landed.remove(id);
        if (arrived == null) {
            early.put(id, outcome);
        }
        return arrived;
    }

    /**
     * Removes and returns the landed sessions started before a deadline: their first token never
     * came.
     *
     * @param startedBefore a {@link System#nanoTime()} value.
     * @return the sessions.
     */
    List<Landed> expired(long startedBefore)
    {
        if (landed.isEmpty()) {
            return List.of();
        }
        List<Landed> late = landed.values().stream().filter(l -> l.session().startNanos() < startedBefore).toList();
        late.forEach(l -> landed.remove(l.session().id()));
        return late;
    }

    /**
     * Forgets what a prefill said of a session that ended otherwise (its transfer failed or timed out).
     *
     * @param id the session.
     */
    void forget(String id)
    {
        early.remove(id);
    }
}
