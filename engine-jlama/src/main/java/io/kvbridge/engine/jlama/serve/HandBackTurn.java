package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The router's part of the hand-back: a conversation's turn goes to the prefill JVM that keeps it,
 * with the decoder's hand-back of the earlier turn (its parameters, request id and token count), and
 * the turn's decode asks the decoder to hand the conversation back once it decoded, unless it is the
 * last turn. A prefill that refuses or fails a hand-back has the decoder abort it, so that neither
 * engine holds it.
 */
final class HandBackTurn
{
    private HandBackTurn()
    {
    }

    /**
     * What one turn of a conversation does with the hand-back.
     */
    static final class Plan
    {
        private final boolean on;
        private final ObjectNode handBack;
        private final boolean handBackAfter;
        private ObjectNode next;

        /**
         * Plans a turn.
         *
         * @param on whether the run hands conversations back.
         * @param handBack the earlier turn's decode reply holding its hand-back, or null for a first turn.
         * @param handBackAfter whether a later turn follows, for which the decoder hands this one back.
         */
        Plan(boolean on, ObjectNode handBack, boolean handBackAfter)
        {
            this.on = on;
            this.handBack = handBack;
            this.handBackAfter = on && handBackAfter;
        }

        boolean on()
        {
            return on;
        }

        boolean handBackAfter()
        {
            return handBackAfter;
        }

        /** Takes the decode reply: its hand-back, if any, goes with the next turn. */
        void decoded(ObjectNode reply)
        {
            next = reply != null && reply.has("handBack") ? reply : null;
        }

        /** {@return the decode reply whose hand-back the next turn carries, or null} */
        ObjectNode next()
        {
            return next;
        }
    }

    /**
     * Sends a conversation's turn to the prefill JVM, with the earlier turn's hand-back when there is one.
     *
     * @param id the turn's request.
     * @param mode how the hand-back moves, as the turn's hand-off.
     * @param conversation the conversation.
     * @param prompt the turn's whole prompt.
     * @param plan the turn's plan.
     * @param prefill the prefill JVM.
     * @param decode the decoder, which aborts a refused hand-back.
     * @param seconds the deadline of each request.
     * @return the prefill's reply.
     */
    static ObjectNode prefill(String id, String mode, String conversation, ArrayNode prompt, Plan plan, EngineProcess prefill, EngineProcess decode,
            int seconds)
    {
        ObjectNode command = (ObjectNode) Lines.object().put("op", "prefill").put("id", id).put("conversation", conversation).put("mode", mode)
                .set("prompt", prompt);
        ObjectNode handBack = plan.handBack;
        if (handBack != null) {
            command.put("handBack", handBack.path("handBack").asText()).put("handBackId", handBack.path("handBackId").asText())
                    .put("handBackTokens", handBack.path("handBackTokens").asInt());
        }
        ObjectNode reply = prefill.request(command, seconds);
        if (reply.has("error") && handBack != null) {
            decode.request(Lines.object().put("op", "abort").put("id", handBack.path("handBackId").asText()), seconds);
        }
        return reply;
    }
}
