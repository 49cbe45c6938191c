package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpWorker;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closing an instance in UCX's order, on the owner thread once its loop stopped: goodbyes to the
 * peers, in-flight requests completed (or cancelled by closing their endpoints by force when the
 * peer is gone), remote keys destroyed, endpoints closed, the worker flushed, memory unmapped, the
 * worker destroyed and the context cleaned up. Posts and calls still queued fail once the loop has
 * returned: they never touched UCX.
 *
 * <p>Threads: owner thread only.
 */
final class UcxShutdown
{
    private static final Logger LOG = LoggerFactory.getLogger(UcxShutdown.class);

    private final String description;
    private final UcxOptions options;
    private final UcxWorker worker;
    private final UcxMemory memory;
    private final UcxEndpoints endpoints;
    private final UcxMessaging messaging;
    private final UcxTransfers transfers;
    // null with access=registered
    private final UcxActiveMessages activeMessages;

    UcxShutdown(String description, UcxOptions options, UcxWorker worker, UcxMemory memory, UcxEndpoints endpoints, UcxMessaging messaging,
            UcxTransfers transfers, UcxActiveMessages activeMessages)
    {
        this.activeMessages = activeMessages;
        this.description = description;
        this.options = options;
        this.worker = worker;
        this.memory = memory;
        this.endpoints = endpoints;
        this.messaging = messaging;
        this.transfers = transfers;
    }

    void run()
    {
        if (!worker.opened()) {
            worker.release();
            if (activeMessages != null) {
                activeMessages.release();
            }
            return;
        }
        // tell every peer we can reach that we are going, so its transfers to us fail instead of hanging
        messaging.sayGoodbye();
        long closeNanos = TimeUnit.MILLISECONDS.toNanos(options.closeTimeoutMillis());
        long deadline = System.nanoTime() + closeNanos;
        while (transfers.busy() || messaging.sending() || endpoints.busy()) {
            UcpWorker.workerProgress(worker.worker());
            messaging.receive();
            if (activeMessages != null) {
                activeMessages.advance();
            }
            transfers.advance();
            messaging.advanceSends();
            endpoints.advanceRetiring();
            endpoints.advanceSetups();
            if (System.nanoTime() - deadline > 0) {
                endpoints.hurryRetiring(deadline);
                if (System.nanoTime() - deadline > closeNanos) {
                    break;
                }
            }
            Thread.yield();
        }
        // whatever UCX did not complete in time is abandoned here; destroying the worker ends it
        transfers.cutOff();
        if (activeMessages != null) {
            activeMessages.abandon();
        }
        messaging.cutOff();
        endpoints.cutOff();
        // UCX 1.13 aborts the process when a worker is destroyed while it still owes a peer that is
        // connecting to it a reply: let such replies go out first
        if (!worker.flush(System.nanoTime() + closeNanos)) {
            LOG.debug("{}: the worker did not flush within {} ms (a peer is gone or not answering); destroying it anyway",
                    description, options.closeTimeoutMillis());
        }
        // every operation that could use the memory has ended or was cut off above
        memory.unmapAll();
        worker.release();
        if (activeMessages != null) {
            // the handlers' upcall stub outlives the worker that could call it
            activeMessages.release();
        }
    }
}
