package io.kvbridge.core.engine;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.kvbridge.core.wire.NotificationSeal;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.testkit.ForwardingBackendFactory;
import io.kvbridge.testkit.ForwardingTransferBackend;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Wraps another factory's transports and records, per agent, the posts each one made and the
 * notifications each one received (as text), so tests can see the protocol on the wire.
 */
final class RecordingBackendFactory extends ForwardingBackendFactory
{
    final Map<String, List<String>> received = new ConcurrentHashMap<>();
    final Map<String, List<TransferOp>> posts = new ConcurrentHashMap<>();
    /** While positive, each release throws instead of releasing, and counts this down. */
    final AtomicInteger failingReleases = new AtomicInteger();
    /** While set, each drain waits until it opens, as a transport stuck in a native call would. */
    volatile CountDownLatch drainGate;
    /** While set, each drain throws it, as a transport failing for good in native code would. */
    volatile Error drainFailure;
    /** While set, transports report no operation count, as a transport that cannot count them. */
    volatile boolean operationsUnreported;

    RecordingBackendFactory(TransferBackendFactory delegate)
    {
        super(delegate);
    }

    List<String> receivedBy(String agent)
    {
        return List.copyOf(received.getOrDefault(agent, List.of()));
    }

    List<TransferOp> postsBy(String agent)
    {
        return List.copyOf(posts.getOrDefault(agent, List.of()));
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        TransferBackend backend = delegate.create(config, context);
        List<String> inbox = received.computeIfAbsent(backend.agentName(), ignored -> java.util.Collections.synchronizedList(new ArrayList<>()));
        List<TransferOp> outbox = posts.computeIfAbsent(backend.agentName(), ignored -> java.util.Collections.synchronizedList(new ArrayList<>()));
        return new ForwardingTransferBackend(backend)
        {
            @Override
            public long post(TransferRequest request)
            {
                long handle = super.post(request);
                outbox.add(request.op());
                return handle;
            }

            @Override
            public int operations(long handle)
            {
                int operations = super.operations(handle);
                return operationsUnreported ? -1 : operations;
            }

            @Override
            public void release(long handle)
            {
                if (failingReleases.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "injected release failure");
                }
                super.release(handle);
            }

            @Override
            public int drainNotifications(NotificationSink sink)
            {
                Error failure = drainFailure;
                if (failure != null) {
                    throw failure;
                }
                CountDownLatch gate = drainGate;
                if (gate != null) {
                    try {
                        gate.await();
                    }
                    catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return super.drainNotifications((sender, message) -> {
                    // the rank checks the seal; tests read the notification inside it
                    boolean sealed = NotificationSeal.isSealed(message);
                    inbox.add(new String(message, sealed ? NotificationSeal.bodyOffset() : 0,
                            sealed ? NotificationSeal.bodyLength(message) : message.length, UTF_8));
                    sink.accept(sender, message);
                });
            }
        };
    }
}
