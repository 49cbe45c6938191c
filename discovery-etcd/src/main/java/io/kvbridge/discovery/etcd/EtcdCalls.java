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
 */
final class EtcdCalls
{
    private static final Logger LOG = LoggerFactory.getLogger(EtcdCalls.class);

    private final String location;
    private final Duration timeout;
    // guarded by this
    private Instant unreachableSince;
    private String lastFailure = "";

    EtcdCalls(String location, Duration timeout)
    {
        this.location = location;
        this.timeout = timeout;
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
        synchronized (this) {
            since = unreachableSince;
            unreachableSince = null;
        }
        if (since != null) {
            LOG.info("{}: etcd answers again (unreachable since {})", location, since);
        }
    }

    void failed(String reason)
    {
        boolean first;
        synchronized (this) {
            first = unreachableSince == null;
            if (first) {
                unreachableSince = Instant.now();
            }
            lastFailure = reason;
        }
        if (first) {
            LOG.warn("{}: etcd unreachable: {}", location, reason);
        }
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
