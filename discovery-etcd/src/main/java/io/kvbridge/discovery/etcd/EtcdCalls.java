package io.kvbridge.discovery.etcd;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Waits for etcd's answers within the request timeout and keeps the reachability they show: a call
 * that fails marks etcd unreachable (since the first failure) until one succeeds.
 *
 * <p>An outage is warned about once, at its first failure, with one exception: until etcd has
 * answered once, within the start-up grace, failures are logged at debug level only. A fresh
 * client's first calls set up its connection and load the gRPC stack, which on a loaded host can
 * take longer than the request timeout, and the callers retry them (the maintenance thread puts
 * what was not published and probes again). Health says unreachable meanwhile all the same; an etcd
 * that has not answered when the grace ends is warned about at the next failure.
 */
final class EtcdCalls
{
    private static final Logger LOG = LoggerFactory.getLogger(EtcdCalls.class);

    /** How long after the directory opens its first calls may fail without a warning, while etcd has never answered. */
    static final Duration STARTUP_GRACE = Duration.ofSeconds(30);

    private final String location;
    private final Duration timeout;
    private final Duration startupGrace;
    private final long openedNanos = System.nanoTime();
    // guarded by this
    private Instant unreachableSince;
    private String lastFailure = "";
    private boolean answered;
    private boolean warned;

    EtcdCalls(String location, Duration timeout)
    {
        this(location, timeout, STARTUP_GRACE);
    }

    EtcdCalls(String location, Duration timeout, Duration startupGrace)
    {
        this.location = location;
        this.timeout = timeout;
        this.startupGrace = startupGrace;
    }

    /** Waits for a call's answer; a failure or no answer within the timeout is {@code DISCOVERY_UNAVAILABLE}. */
    <T> T await(CompletableFuture<T> future, String what)
    {
        try {
            T result = future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            succeeded();
            return result;
        }
        catch (TimeoutException e) {
            future.cancel(true);
            throw unavailable(what, "no answer within requestTimeout=" + timeout, e);
        }
        catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw unavailable(what, String.valueOf(cause.getMessage()), cause);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            future.cancel(true);
            throw unavailable(what, "interrupted", e);
        }
    }

    private KvBridgeException unavailable(String what, String reason, Throwable cause)
    {
        String message = String.format(Locale.ROOT, "etcd at %s: %s failed: %s (is etcd running and reachable from here?)", location, what, reason);
        failed(message);
        return new KvBridgeException(ErrorCode.DISCOVERY_UNAVAILABLE, message, cause);
    }

    void succeeded()
    {
        Instant since;
        boolean wasWarned;
        synchronized (this) {
            since = unreachableSince;
            wasWarned = warned;
            unreachableSince = null;
            answered = true;
            warned = false;
        }
        if (since != null && wasWarned) {
            LOG.info("{}: etcd answers again (unreachable since {})", location, since);
        }
        else if (since != null) {
            LOG.debug("{}: etcd answered, after start-up calls that failed since {}", location, since);
        }
    }

    void failed(String reason)
    {
        boolean warn;
        boolean first;
        boolean everAnswered;
        synchronized (this) {
            everAnswered = answered;
            first = unreachableSince == null;
            if (first) {
                unreachableSince = Instant.now();
            }
            lastFailure = reason;
            warn = !warned && !starting();
            warned |= warn;
        }
        if (warn) {
            LOG.warn("{}: etcd unreachable{}: {}", location, everAnswered ? "" : " (no answer since it was opened, start-up grace " + startupGrace + ")", reason);
        }
        else if (first) {
            LOG.debug("{}: etcd not answering yet, within the start-up grace of {}: {}", location, startupGrace, reason);
        }
    }

    /**
     * Logs that a call the directory will retry failed: a warning, unless etcd is still starting up
     * (never answered, within the start-up grace), where the retry is the expected course.
     */
    void willRetry(String what, String reason)
    {
        if (starting()) {
            LOG.debug("{}: could not {} yet, will retry: {}", location, what, reason);
        }
        else {
            LOG.warn("{}: could not {} yet, will retry: {}", location, what, reason);
        }
    }

    /** {@return whether etcd has not answered yet and the start-up grace has not passed} */
    synchronized boolean starting()
    {
        return !answered && System.nanoTime() - openedNanos < startupGrace.toNanos();
    }

    synchronized Optional<Instant> unreachableSince()
    {
        return Optional.ofNullable(unreachableSince);
    }

    /** {@return the last failure while etcd is unreachable, else empty} */
    synchronized String failure()
    {
        return unreachableSince == null ? "" : lastFailure;
    }
}
