package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.HandBacks;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.engine.jlama.JlamaEngine;
import io.kvbridge.engine.jlama.JlamaSessionPool;
import io.kvbridge.json.TransferParamsJson;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.IntSupplier;

/**
 * A prefill JVM's conversations: it keeps each one's slot between turns, with the tokens whose
 * rows the slot holds (and records them in kvbridge's {@link HandBacks}), and a later turn that
 * carries the decoder's hand-back receives only the blocks the slot lacks (those after its last
 * whole block, as {@link HandBacks#lacking} plans) through this JVM's consumer, then runs
 * Jlama's forward pass over the new tokens only, from the position after the handed-back ones, and
 * hands forward as any prefill. A turn with {@code stream} hands forward as the streamed prefill
 * does, after the hand-back landed: it announces the request with every block of the conversation
 * ({@code prefillStarted}), sends its parameters at once, and runs the pass over the new tokens with
 * the per-layer hook, so that the decoder receives each layer's new rows as they are computed. A
 * hand-back naming a conversation this JVM does not keep, or whose
 * counts do not fit what it keeps and the new prompt, is refused before anything moves.
 */
final class HandBackTarget
{
    private static final long RECEIVE_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final JlamaEngine engine;
    private final JlamaSessionPool pool;
    private final ProducerConnector producer;
    private final ConsumerConnector consumer;
    private final Map<String, Integer> heldSlots;
    private final Map<String, Kept> kept = new HashMap<>();
    private final HandBacks handBacks;
    private final StreamedPrefill streamed;
    private final BiConsumer<String, ObjectNode> started;

    /**
     * Creates the conversations of a prefill JVM.
     *
     * @param engine the model.
     * @param pool the slots.
     * @param producer hands every turn forward.
     * @param consumer receives the hand-backs.
     * @param heldSlots the server's slots the producer holds, by request: a kept slot is let go only once no request holds it.
     * @param streamed announces the layers of a streamed turn as its pass computes them.
     * @param started sends a streamed turn's {@code started} message (its parameters) ahead of its reply, given the request id.
     */
    HandBackTarget(JlamaEngine engine, JlamaSessionPool pool, ProducerConnector producer, ConsumerConnector consumer, Map<String, Integer> heldSlots,
            StreamedPrefill streamed, BiConsumer<String, ObjectNode> started)
    {
        this.streamed = streamed;
        this.started = started;
        this.engine = engine;
        this.pool = pool;
        this.producer = producer;
        this.consumer = consumer;
        this.heldSlots = heldSlots;
        this.handBacks = new HandBacks(pool.blockTokens());
    }

    private record Kept(int slot, int[] tokens)
    {
    }

    /**
     * Tells whether a conversation keeps a slot, which the producer's freeing a request must then not return.
     *
     * @param slot the slot.
     * @return true when kept.
     */
    boolean keeps(int slot)
    {
        for (Kept k : kept.values()) {
            if (k.slot() == slot) {
                return true;
            }
        }
        return false;
    }

    /**
     * Prefills a conversation's turn: the first into a free slot, a later one into the kept slot,
     * computing from the position after the hand-back's tokens when the command carries one
     * ({@code handBack}, {@code handBackId}, {@code handBackTokens}, {@code mode}); streamed when it
     * carries {@code stream}.
     *
     * @param command the {@code prefill} command with {@code conversation}.
     * @param freeSlot takes a free slot, within its deadline.
     * @return the reply: first token, digest, parameters, {@code computedFrom} (the first position computed) and
     *     {@code handBackBlocks} (the blocks received back).
     */
    ObjectNode prefill(ObjectNode command, IntSupplier freeSlot)
    {
        String id = command.path("id").asText();
        String conversation = command.path("conversation").asText();
        int[] prompt = Lines.ints(command.path("prompt"));
        Kept held = kept.get(conversation);
        boolean handBack = command.has("handBack");
        KvBridgeException.check(!handBack || held != null, ErrorCode.INVALID_ARGUMENT,
                "request %s: hand-back of conversation %s, which this prefill JVM does not keep (never prefilled here, or forgotten); nothing was "
                        + "moved; send the turn without a hand-back to compute it whole", id, conversation);
        int start = handBack ? checkedHandBackTokens(id, conversation, held, prompt, command.path("handBackTokens").asInt()) : 0;
        // every check before anything moves: a refused hand-back leaves the conversation as it was kept
        Planned planned = handBack ? plan(conversation, command, held, start) : null;
        int slot = held != null ? held.slot() : freeSlot.getAsInt();
        try {
            long begin = System.nanoTime();
            long receiveNanos = 0;
            int received = 0;
            if (handBack) {
                received = receive(id, conversation, planned);
                receiveNanos = System.nanoTime() - begin;
            }
            Handed handed = command.path("stream").asBoolean() ? streamed(id, slot, prompt, start) : whole(id, slot, prompt, start);
            JlamaEngine.Step first = handed.first();
            TransferParams params = handed.params();
            long prefillNanos = System.nanoTime() - begin;
            kept.put(conversation, new Kept(slot, prompt));
            handBacks.keep(conversation, prompt.length, pool.blockIds(slot, prompt.length));
            return Lines.object().put("token", first.token()).put("digest", Lines.digest(first.logits())).put("prefillNanos", prefillNanos)
                    .put("handBackNanos", receiveNanos).put("computedFrom", start).put("handBackBlocks", received).put("slot", slot)
                    .put("params", TransferParamsJson.write(params));
        }
        catch (RuntimeException e) {
            // the slot's rows are no longer what the conversation held: let it go
            kept.remove(conversation);
            handBacks.forget(conversation);
            if (!heldSlots.containsValue(slot)) {
                pool.release(slot);
            }
            throw e;
        }
    }

    /** A turn's first token and the parameters that hand it forward. */
    private record Handed(JlamaEngine.Step first, TransferParams params)
    {
    }

    /** Computes the new tokens, then hands the conversation's blocks forward once the pass finished. */
    private Handed whole(String id, int slot, int[] prompt, int start)
    {
        JlamaEngine.Step first = engine.prefillFrom(pool.buffer(slot), prompt, start);
        TransferParams params = producer.prefillFinished(id, pool.blockIds(slot, prompt.length));
        heldSlots.put(id, slot);
        return new Handed(first, params);
    }

    /**
     * Announces the conversation's blocks before the pass over the new tokens and each layer as the
     * pass completes it: the rows before {@code start} are in the slot already (kept, or handed back
     * and landed), so a layer's blocks are whole once the pass announced it.
     */
    private Handed streamed(String id, int slot, int[] prompt, int start)
    {
        TransferParams params = producer.prefillStarted(id, pool.blockIds(slot, prompt.length));
        // kvbridge holds the blocks now: the slot stays held until the producer reports the request freed
        heldSlots.put(id, slot);
        started.accept(id, Lines.object().put("op", "started").put("slot", slot).put("params", TransferParamsJson.write(params)));
        try {
            return new Handed(streamed.run(engine, slot, pool.buffer(slot), prompt, start, id), params);
        }
        catch (RuntimeException e) {
            producer.abort(id);
            throw e;
        }
    }

    /** The hand-back must hold what this JVM keeps and stop before the new prompt's last token, which the forward pass computes. */
    private int checkedHandBackTokens(String id, String conversation, Kept held, int[] prompt, int handBackTokens)
    {
        KvBridgeException.check(handBackTokens >= held.tokens().length && handBackTokens < prompt.length, ErrorCode.INVALID_ARGUMENT,
                "request %s: hand-back of conversation %s names %d tokens, but this prefill JVM holds %d and the new prompt has %d; expected "
                        + "%d <= handBackTokens < %d; nothing was moved", id, conversation, handBackTokens, held.tokens().length, prompt.length,
                held.tokens().length, prompt.length);
        KvBridgeException.check(Arrays.equals(held.tokens(), 0, held.tokens().length, prompt, 0, held.tokens().length), ErrorCode.INVALID_ARGUMENT,
                "request %s: the new prompt of conversation %s does not start with the %d tokens this prefill JVM holds for it; nothing was moved",
                id, conversation, held.tokens().length);
        return handBackTokens;
    }

    /** A checked hand-back: the decoder's request and parameters, and the slot's blocks that receive it. */
    private record Planned(String request, TransferParams params, TransferMode mode, int tokens, BlockIds lacking)
    {
    }

    /**
     * Plans the blocks of the hand-back that the slot lacks: from its last whole block to the one
     * holding the hand-back's last token, as many as {@link HandBacks#lacking} counts (the decoder's
     * list is end-trimmed to these, as for a prefix hit).
     */
    private Planned plan(String conversation, ObjectNode command, Kept held, int handBackTokens)
    {
        String request = command.path("handBackId").asText();
        TransferParams params = TransferParamsJson.read(command.path("handBack").asText());
        TransferMode mode = TransferMode.valueOf(command.path("mode").asText());
        int[] lacking = handBacks.lacking(request, conversation, params, handBackTokens);
        int blocks = (handBackTokens + pool.blockTokens() - 1) / pool.blockTokens();
        return new Planned(request, params, mode, handBackTokens, pool.blockIds(held.slot(), blocks - lacking[0], handBackTokens));
    }

    /** Receives a planned hand-back into the slot and waits for it within a deadline. */
    private int receive(String id, String conversation, Planned planned)
    {
        String request = planned.request();
        BlockIds lacking = planned.lacking();
        handBacks.receive(consumer, request, conversation, planned.params(), planned.tokens(), planned.mode(), lacking);
        long deadline = System.nanoTime() + RECEIVE_DEADLINE_NANOS;
        while (System.nanoTime() < deadline) {
            ReceiveBatch batch = consumer.poll();
            for (ReceiveFailure failure : batch.failed()) {
                if (failure.requestId().equals(request)) {
                    throw new KvBridgeException(failure.code(), "request " + id + ": the hand-back of conversation " + conversation + " failed: "
                            + failure.message());
                }
            }
            if (batch.received().contains(request)) {
                return lacking.total();
            }
            Thread.onSpinWait();
        }
        throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, "request " + id + ": the hand-back of conversation " + conversation
                + " did not arrive within " + TimeUnit.NANOSECONDS.toSeconds(RECEIVE_DEADLINE_NANOS) + " s");
    }

    /**
     * Lets go of a conversation's slot; a slot the producer still holds returns when it frees the request.
     *
     * @param conversation the conversation.
     * @return whether this JVM kept it.
     */
    boolean forget(String conversation)
    {
        Kept held = kept.remove(conversation);
        handBacks.forget(conversation);
        if (held != null && !heldSlots.containsValue(held.slot())) {
            pool.release(held.slot());
        }
        return held != null;
    }
}
