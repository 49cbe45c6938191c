package io.kvbridge.core.engine;

import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.spi.transfer.TransferBackend;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * What the bridge's {@link EngineServices} and its health probes ({@link HealthProbes#connector})
 * see of an open rank: enough to sum audits, probe health and close it, and nothing of how the
 * rank works. Any thread.
 */
interface OpenRank
{
    /** {@return the rank's name in logs and health checks} */
    String name();

    /** {@return what the rank holds} */
    ConnectorAudit audit();

    /** {@return completed by the rank's worker when it answers; never completed when the worker does not run} */
    CompletableFuture<HealthReport> probe();

    /** {@return the rank's worker thread} */
    Thread workerThread();

    /** {@return the rank's own transport instance} */
    TransferBackend transport();

    /** {@return now on the clock the rank's deadlines are on} */
    long now();

    /** {@return the earliest deadline of the transfers in flight as of the worker's last round; far ahead when none} */
    long earliestDeadlineNanos();

    /** {@return in-flight transfers as of the worker's last round} */
    int inFlightTransfers();

    /** {@return retained handles as of the worker's last round} */
    int retainedHandles();

    /** {@return how long a transfer of the rank may take} */
    Duration transferTimeout();

    /** {@return whether the rank was closed} */
    boolean isClosed();

    /** Closes the rank; idempotent. */
    void close();
}
