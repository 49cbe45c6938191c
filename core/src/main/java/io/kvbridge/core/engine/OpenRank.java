package io.kvbridge.core.engine;

import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.Health;
import java.util.concurrent.CompletableFuture;

/**
 * What the bridge's {@link EngineServices} sees of an open rank: enough to sum audits, probe health
 * and close it, and nothing of how the rank works.
 */
interface OpenRank
{
    /** {@return the rank's name in logs and health checks} */
    String name();

    /** {@return what the rank holds} */
    ConnectorAudit audit();

    /** {@return completed by the rank's worker when it answers; never completed when the worker does not run} */
    CompletableFuture<HealthReport> probe();

    /** {@return the rank's health check, from the probe's answer awaited until {@code deadlineNanos}} */
    Health.Check check(CompletableFuture<HealthReport> answer, long sentNanos, long deadlineNanos, long graceNanos);

    /** {@return whether the rank was closed} */
    boolean isClosed();

    /** Closes the rank; idempotent. */
    void close();
}
