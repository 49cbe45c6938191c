package io.kvbridge.api;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.Experimental;
import io.kvbridge.spi.KvBridgeException;

/**
 * The consumer (decode) side of one rank. Created with {@link KvBridge#consumer}; the caches of the
 * settings' geometry are registered with the connector's own transport and advertised on the engine's
 * side channel, from which push producers fetch them.
 *
 * <p>Pull: the rank READs from every producer rank of its tensor-parallel plan and notifies each
 * producer rank it addresses. Push: the rank registers its blocks with every producer rank and stage
 * that will write to it, reports the request received once every writer's completion arrived, then
 * acknowledges to each writer. While a request waits, the rank sends heartbeats that keep the
 * producer's lease alive.
 *
 * <p><b>Threading.</b> Every method may be called from any thread and returns at once. Each request
 * is reported by {@link #poll()} exactly once, as received or failed.
 */
public interface ConsumerConnector extends AutoCloseable
{
    /**
     * Starts receiving a request into blocks the engine allocated.
     *
     * @param requestId the consumer's id of the request.
     * @param params the producer's parameters, from the router.
     * @param mode who moves the bytes; one of the modes both sides serve.
     * @param blocks the consumer's logical block ids per cache group (its uncached suffix); all
     *     groups empty for a full prefix-cache hit, which only tells the producer to free its blocks.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} for a malformed id, an id
     *     in progress, block ids for another number of cache groups, or a mode either side does not
     *     serve; {@code BLOCK_OUT_OF_RANGE} for a block id outside the cache; {@code CLOSED} after close.
     *     (A consumer whose caches mix host and device memory refuses push when it is created.)
     */
    void blocksAllocated(String requestId, TransferParams params, TransferMode mode, BlockIds blocks);

    /**
     * Tells whether one layer of a request is in place in this rank's blocks, for a decoder that
     * starts computing a layer as soon as it landed (vLLM's {@code wait_for_layer_load}); allocates
     * nothing when the arguments are valid. A pushed layer is in place once every producer rank that
     * writes it said its write landed, which producers that stream layers say behind each write; a
     * layer pulled from a producer that streams is in place once this rank's READs of it completed;
     * every layer is in place once the request was received (producers that do not stream say
     * nothing earlier). A failed request has no layer in place.
     *
     * @param requestId the consumer's request id, until {@link #poll()} reported it.
     * @param layer the layer's name, as this rank's cache geometry lists it.
     * @return whether the layer's bytes are in place.
     * @throws io.kvbridge.spi.KvBridgeException {@code INVALID_ARGUMENT} for a request this rank is
     *     not receiving (never started, or reported and polled) or a layer it does not hold.
     */
    @Experimental(eta = "2027-06-01")
    default boolean layerLoaded(String requestId, String layer)
    {
        throw new KvBridgeException(ErrorCode.UNSUPPORTED, "this consumer does not track layers (request " + requestId + ", layer " + layer + ")");
    }

    /**
     * Returns what was received and what failed since the last call, and which blocks of failed
     * requests a late writer may still reach ({@link ReceiveBatch#quarantined()}: never free or
     * reuse them, not even to recompute into) or was proven to have stopped reaching
     * ({@link ReceiveBatch#released()}). A quarantine comes in the same batch as its request's failure.
     *
     * @return the batch; {@link ReceiveBatch#EMPTY} when nothing happened.
     */
    ReceiveBatch poll();

    /**
     * Fills a view of one request without allocating, for schedulers that poll it and for debugging:
     * {@link RequestState#PENDING} while handshaking and planning, {@code IN_FLIGHT} (pull, READs
     * posted) or {@code REGISTERED} (push, registrations sent), then {@code COMPLETED} or
     * {@code FAILED} until {@link #poll()} handed out its report; the handshake or registration
     * deadline; the blocks received; the transfers done (pull) or writers done (push) out of those
     * awaited.
     *
     * @param requestId the consumer's request id.
     * @param into the caller's view, overwritten when the request is known.
     * @return false, leaving the view as it was, when the connector does not know the request
     *     (never started, or reported and polled).
     */
    boolean inspect(String requestId, RequestView into);

    /**
     * Counts what the connector holds.
     *
     * @return the counts.
     */
    ConnectorAudit audit();

    /**
     * Stops the worker, cancels and releases every transfer, deregisters the caches and closes the
     * transport; requests in progress are not reported. Idempotent.
     */
    @Override
    void close();
}
