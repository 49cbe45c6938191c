package io.kvbridge.core.engine;

import io.kvbridge.core.wire.WireDecoder;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.core.wire.WireMap;
import io.kvbridge.core.wire.WireWriter;
import java.util.Arrays;
import java.util.List;

/**
 * The notifications of a streamed pull, parsed as untrusted as {@link Messages} parses the others:
 * a consumer rank asks a producer rank to tell it the layers of a request as they are computed
 * ({@link PullWatch}, which names where to answer as a push registration does), and the producer
 * rank answers with the layers computed since its last answer ({@link LayersComputed}).
 */
final class PullMessages
{
    static final String WATCH = "PULL_WATCH:";
    static final String LAYERS = "PULL_LAYERS:";
    // a rank holds a few hundred layers at most; a longer list is not a producer's
    static final int MAX_LAYERS = 4096;

    private PullMessages()
    {
    }

    /**
     * A consumer rank pulls a streamed request and asks for its layers as they are computed.
     *
     * @param registration who asks and where to answer, in a push registration's form: it writes nothing and carries no blocks or key.
     */
    record PullWatch(Messages.Registration registration) implements Messages.Message
    {
    }

    /**
     * Layers of a streamed request a producer rank computed since its last answer to a watch.
     *
     * @param requestId the consumer's request id.
     * @param producerRequestId the producer's id.
     * @param layers the producer rank's names of the layers.
     * @param all whether every layer of the producer rank is computed now.
     * @param epoch the consumer's epoch its watch named.
     */
    record LayersComputed(String requestId, String producerRequestId, List<String> layers, boolean all, long epoch) implements Messages.Message
    {
    }

    static byte[] watch(Messages.Registration registration)
    {
        return Messages.registration(WATCH, registration);
    }

    static byte[] layersComputed(String requestId, String producerRequestId, List<String> layers, boolean all, long epoch)
    {
        WireWriter writer = new WireWriter().map(5)
                .string("request_id").string(requestId)
                .string("producer_request_id").string(producerRequestId)
                .string("epoch").integer(epoch)
                .string("all").bool(all)
                .string("layers").array(layers.size());
        for (String layer : layers) {
            writer.string(layer);
        }
        return Messages.prefixed(LAYERS, writer.toByteArray());
    }

    /** Parses a message that starts with {@link #WATCH} or {@link #LAYERS}; throws {@code PROTOCOL_ERROR} for what it refuses. */
    static Messages.Message parse(byte[] message, WireLimits limits)
    {
        if (Messages.startsWith(message, WATCH)) {
            return new PullWatch(Messages.parseRegistration(WireDecoder.decodeMap(Arrays.copyOfRange(message, WATCH.length(), message.length), limits,
                    "pull watch")));
        }
        WireMap map = WireDecoder.decodeMap(Arrays.copyOfRange(message, LAYERS.length(), message.length), limits, "computed layers");
        List<String> layers = map.requireStrings("layers");
        if (layers.size() > MAX_LAYERS) {
            throw map.error("layers", layers.size() + " names (expected: at most " + MAX_LAYERS + ")");
        }
        return new LayersComputed(Messages.id(map, "request_id"), Messages.id(map, "producer_request_id"), List.copyOf(layers),
                map.optionalBoolean("all", false), Messages.epoch(map, "epoch"));
    }
}
