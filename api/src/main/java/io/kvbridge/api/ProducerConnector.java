package io.kvbridge.api;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.Experimental;
import io.kvbridge.spi.KvBridgeException;
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
     * Announces a request whose prefill has started, so that the router can hand its parameters to a
     * decoder before the prefill ends: the blocks are held under a lease from now, and each layer
     * moves once {@link #layerComputed} says it is computed. The parameters serve the connector's
     * modes and say the prefill has not finished ({@link TransferParams#UNKNOWN_TIME}): a pushing
     * decoder is written each layer once it is computed; a pulling one asks this rank for the
     * computed layers and reads each one once it is announced, never before (its READ grant covers
     * the blocks from now on, but a decoder reads only what was announced). The request completes
     * when the decoder has every layer, after {@link #allLayersComputed}.
     *
     * @param requestId the request's id; printable ASCII, see {@link RequestIds#problem}.
     * @param blocks the request's logical block ids per cache group; final when announced.
     * @return the parameters the router forwards to the consumer.
     * @throws KvBridgeException as {@link #prefillFinished(String, BlockIds)}, and {@code UNSUPPORTED}
     *     when the connector checks integrity (digests need final bytes) or does not stream.
     */
    @Experimental(eta = "2027-06-01")
    default TransferParams prefillStarted(String requestId, BlockIds blocks)
    {
        throw new KvBridgeException(ErrorCode.UNSUPPORTED, "this producer does not stream layers: report request " + requestId
                + " with prefillFinished once its prefill ended");
    }

    /**
     * Says that one layer of an announced request is computed: its blocks are final and may move.
     * Allocates nothing when the arguments are valid, so the engine may call it from its forward pass.
     *
     * @param requestId the id given to {@link #prefillStarted}.
     * @param layer the layer's name, as the cache geometry's regions list it; one this rank holds.
     * @throws KvBridgeException {@code INVALID_ARGUMENT}, naming the request and the layer, for a
     *     request that is not streamed here, a layer this rank does not hold, a layer announced
     *     before, or any layer after {@link #allLayersComputed}; nothing moves then.
     */
    @Experimental(eta = "2027-06-01")
    default void layerComputed(String requestId, String layer)
    {
        throw new KvBridgeException(ErrorCode.UNSUPPORTED, "this producer does not stream layers (request " + requestId + ", layer " + layer + ")");
    }

    /**
     * Says that every layer of an announced request is computed; the last writes then carry the
     * request's completion to the decoder.
     *
     * @param requestId the id given to {@link #prefillStarted}.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for a request that is not streamed here,
     *     said done twice, or with a layer of this rank not yet announced (the message names it;
     *     announce it, or {@link #abort} the request).
     */
    @Experimental(eta = "2027-06-01")
    default void allLayersComputed(String requestId)
    {
        throw new KvBridgeException(ErrorCode.UNSUPPORTED, "this producer does not stream layers (request " + requestId + ")");
    }

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
