package io.kvbridge.spi.discovery;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.util.Optional;

/**
 * How a directory fares, for health checks and audits.
 *
 * @param location where the directory lives, as configured (for example {@code etcd://127.0.0.1:2379}).
 * @param unreachableSince when the store stopped answering; empty while it answers.
 * @param detail the last failure, or empty.
 * @param published entries this process publishes (and keeps alive).
 * @param cachedEngines engines whose entries are cached.
 */
public record DirectoryHealth(String location, Optional<Instant> unreachableSince, String detail, int published, int cachedEngines)
{
    /** Validates the values. */
    public DirectoryHealth
    {
        requireNonNull(location, "location is null");
        requireNonNull(unreachableSince, "unreachableSince is null");
        requireNonNull(detail, "detail is null");
    }

    /** {@return whether the store answered the last call} */
    public boolean reachable()
    {
        return unreachableSince.isEmpty();
    }

    /** {@return one line for humans, such as {@code etcd://h:2379 unreachable since 2026-01-01T10:00:00Z (...)}} */
    public String describe()
    {
        String state = unreachableSince.map(since -> "unreachable since " + since + (detail.isEmpty() ? "" : " (" + detail + ")")).orElse("reachable");
        return location + " " + state + ", " + published + " published, " + cachedEngines + " engines cached";
    }
}
