package io.kvbridge.api;

import java.util.List;

/**
 * The producer (prefill) side of one rank. Created with {@link KvBridge#producer}; the caches of the
 * settings' geometry are registered with the connector's own transport instance and advertised on the
 * engine's side channel.
 *
 * <p>The producer holds a finished request's blocks until every consumer rank that needs them says it
 * has them (pull: the completion notification on its READ; push: the acknowledgement after the
 * producer's WRITEs arrived), or until the lease expires. It serves push and pull requests at once;
 * the consumer chooses the mode per request.
 *
 * <p><b>Threading.</b> Every method may be called from any thread and returns at once: transfers,
 * notifications and handshakes run on the connector's own worker thread and a handshake executor.
 * Each request is reported by {@link #poll()} exactly once.
 */
public interface ProducerConnector extends AutoCloseable
{
    /**
     * Reports a finished prefill: the blocks are held under a lease of the configured duration from now.
     *
     * @param requestId the request's id; printable ASCII, see {@link RequestIds#problem}.
     * @param blocks the request's logical block ids per cache group; empty groups when nothing is held.
     * @return the parameters the router forwards to the consumer.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} for a malformed id, an id
     *     already held, or block ids for another number of cache groups; {@code BLOCK_OUT_OF_RANGE}
     *     for a block id outside the cache; {@code CLOSED} after {@link #close()}.
     */
    TransferParams prefillFinished(String requestId, BlockIds blocks);

    /**
     * Reports a finished prefill whose lease was computed on another clock (for example by a scheduler
     * in another process): the local deadline is {@code now + (callerDeadlineNanos - callerNowNanos)},
     * so the two clocks need not agree.
     *
     * @param requestId the request's id.
     * @param blocks the request's logical block ids per cache group.
     * @param callerNowNanos the caller's monotonic clock when it computed the deadline.
     * @param callerDeadlineNanos the lease deadline on the caller's clock.
     * @return the parameters the router forwards to the consumer.
     */
    TransferParams prefillFinished(String requestId, BlockIds blocks, long callerNowNanos, long callerDeadlineNanos);

    /**
     * Gives up a request: its blocks are reported {@link FreeReason#ABORTED} once no transfer of the
     * connector touches them any more. Unknown or already reported ids are ignored.
     *
     * @param requestId the request's id.
     */
    void abort(String requestId);

    /**
     * Returns the requests whose blocks may be freed since the last call.
     *
     * @return the requests, each reported once; empty when none.
     */
    List<FreedRequest> poll();

    /**
     * Fills a view of one request without allocating, for schedulers that poll it and for debugging:
     * {@link RequestState#PENDING} until the worker armed the lease, {@code HELD}, {@code IN_FLIGHT}
     * while push writes of it run, then {@code COMPLETED}, {@code EXPIRED} or {@code ABORTED} until
     * {@link #poll()} handed out its report; the lease deadline; the blocks held; the distinct
     * consumer ranks that finished and how many the request waits for.
     *
     * @param requestId the request's id.
     * @param into the caller's view, overwritten when the request is known.
     * @return false, leaving the view as it was, when the connector does not know the request
     *     (never held, or reported and polled).
     */
    boolean inspect(String requestId, RequestView into);

    /**
     * Counts what the connector holds.
     *
     * @return the counts.
     */
    ConnectorAudit audit();

    /**
     * Stops the worker, releases every transfer, list and peer, deregisters the caches and closes the
     * transport; requests still held are not reported. Idempotent.
     */
    @Override
    void close();
}
