package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.TransferParams;
import io.kvbridge.engine.jlama.JlamaSessionPool;
import io.kvbridge.json.TransferParamsJson;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * A decoder's conversations: the slot each keeps between turns with the tokens whose rows it holds
 * (the prompt and every token fed), and, with the hand-back on, the request that hands those rows
 * back to the prefill JVM at a turn's end ({@code prefillFinished} of this JVM's producer over the
 * slot's blocks), so that the next turn's prefill computes only the new tokens. A slot is let go
 * when the router forgets its conversation, and not before this JVM's producer reports the last
 * hand-back freed: the prefill JVM may still be reading it.
 */
final class HandBackSource
{
    private final JlamaSessionPool pool;
    private final ProducerConnector producer;
    private final boolean corrupt;
    private final Map<String, Conversation> conversations = new HashMap<>();
    private final Set<String> asked = new HashSet<>();
    /** Hand-back requests the producer holds, by id, with their conversation's slot. */
    private final Map<String, Integer> outstanding = new HashMap<>();
    /** Slots of forgotten conversations whose hand-back the producer still holds. */
    private final Set<String> releaseWhenFreed = new HashSet<>();

    /**
     * Creates the conversations of a decoder.
     *
     * @param pool the decoder's slots.
     * @param producer the decoder's producer over its slots, or null when the hand-back is off.
     * @param corrupt the negative control: change one byte of each hand-back's last row before it moves.
     */
    HandBackSource(JlamaSessionPool pool, ProducerConnector producer, boolean corrupt)
    {
        this.pool = pool;
        this.producer = producer;
        this.corrupt = corrupt;
    }

    /** A conversation's decoder slot between turns, and the tokens whose K/V rows it holds (prompt and fed tokens, in position order). */
    record Conversation(int slot, int[] tokens)
    {
    }

    /**
     * Takes a conversation's kept slot for its next turn.
     *
     * @param conversation the conversation.
     * @return what the slot holds, or null for a first turn.
     */
    Conversation take(String conversation)
    {
        return conversations.remove(conversation);
    }

    /**
     * Keeps a conversation's slot after a turn.
     *
     * @param conversation the conversation.
     * @param slot its slot.
     * @param tokens the tokens whose rows the slot holds.
     */
    void keep(String conversation, int slot, int[] tokens)
    {
        conversations.put(conversation, new Conversation(slot, tokens));
    }

    /**
     * Returns how many of a new turn's first tokens a slot already holds, in whole blocks: the new
     * prompt must repeat what the slot holds, and a block is kept only when every token in it
     * matches (the last, partly matching one is received again).
     *
     * @param held the tokens the slot holds.
     * @param prompt the new turn's prompt.
     * @return the tokens kept.
     */
    int cachedPrefix(int[] held, int[] prompt)
    {
        int same = 0;
        while (same < held.length && same < prompt.length && held[same] == prompt[same]) {
            same++;
        }
        return same / pool.blockTokens() * pool.blockTokens();
    }

    /**
     * Notes that a session's turn, once decoded, hands its conversation back.
     *
     * @param session the decode request.
     * @param conversation its conversation, which a hand-back needs.
     */
    void ask(String session, String conversation)
    {
        KvBridgeException.check(producer != null, ErrorCode.INVALID_ARGUMENT,
                "session %s asks for a hand-back but this decoder runs without one; start it with --hand-back on", session);
        KvBridgeException.check(conversation != null, ErrorCode.INVALID_ARGUMENT,
                "session %s asks for a hand-back but names no conversation whose slot this decoder would keep", session);
        asked.add(session);
    }

    /**
     * Hands a decoded turn's conversation back when its decode asked for it: the slot's blocks of
     * every token it holds, under request {@code <session>-hand-back}, whose parameters, id and
     * token count go into the reply for the router to carry to the next turn's prefill.
     *
     * @param session the decode request.
     * @param conversation its conversation.
     * @param reply the decode's reply.
     */
    void handBack(String session, String conversation, ObjectNode reply)
    {
        if (!asked.remove(session)) {
            return;
        }
        Conversation held = conversations.get(conversation);
        int tokens = held.tokens().length;
        if (corrupt) {
            MemorySegment row = pool.buffer(held.slot()).getKeyTensorForPosition(0, tokens - 1).getMemorySegment();
            row.set(ValueLayout.JAVA_BYTE, 1, (byte) (row.get(ValueLayout.JAVA_BYTE, 1) ^ 0x10));
        }
        String id = session + "-hand-back";
        TransferParams params = producer.prefillFinished(id, pool.blockIds(held.slot(), tokens));
        outstanding.put(id, held.slot());
        reply.put("handBackId", id).put("handBackTokens", tokens).put("handBack", TransferParamsJson.write(params));
    }

    /**
     * Forgets a session whose turn failed before decoding: it hands nothing back.
     *
     * @param session the decode request.
     */
    void failed(String session)
    {
        asked.remove(session);
    }

    /**
     * Tells that the producer freed a request; a forgotten conversation's slot returns now.
     *
     * @param requestId the freed request.
     */
    void freed(String requestId)
    {
        Integer slot = outstanding.remove(requestId);
        if (slot != null && releaseWhenFreed.remove(requestId)) {
            pool.release(slot);
        }
    }

    /**
     * Lets go of a conversation's slot: at once, or, while its last hand-back is held, when the
     * producer frees it (an unread hand-back is aborted: no later turn will read it).
     *
     * @param conversation the conversation.
     * @return whether this decoder kept it.
     */
    boolean forget(String conversation)
    {
        Conversation held = conversations.remove(conversation);
        if (held == null) {
            return false;
        }
        for (Map.Entry<String, Integer> handBack : outstanding.entrySet()) {
            if (handBack.getValue() == held.slot()) {
                releaseWhenFreed.add(handBack.getKey());
                producer.abort(handBack.getKey());
                return true;
            }
        }
        pool.release(held.slot());
        return true;
    }
}
