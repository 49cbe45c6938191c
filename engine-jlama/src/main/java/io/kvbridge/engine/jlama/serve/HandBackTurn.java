package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The router's part of the hand-back: a conversation's turn goes to the prefill JVM that keeps it,
 * with the decoder's hand-back of the earlier turn (its parameters, request id and token count), and
 * the turn's decode asks the decoder to hand the conversation back once it decoded, unless it is the
 * last turn. A streamed turn goes the same way and hands over as {@link StreamedHandoff} does. A prefill that refuses or fails a hand-back has the decoder abort it, so that neither
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
        ObjectNode reply = prefill.request(command(id, mode, conversation, prompt, plan), seconds);
        abortRefused(reply, plan, decode, seconds);
        return reply;
    }

    /**
     * Runs a conversation's turn streamed: the prefill JVM receives the earlier turn's hand-back,
     * announces the turn and sends its parameters, which go to the decoder at once, and hands each
     * layer over as its pass over the new tokens computes it.
     *
     * @param id the turn's request.
     * @param mode how the hand-back moves, as the turn's hand-off.
     * @param conversation the conversation.
     * @param prompt the turn's whole prompt.
     * @param plan the turn's plan.
     * @param decodeCommand the decoder's {@code decode} command without {@code token}, {@code params} and {@code handBack}.
     * @param prefill the prefill JVM.
     * @param decode the decoder, which aborts a refused hand-back.
     * @param seconds the deadline of each request.
     * @return the prefill's and the decoder's replies.
     */
    static StreamedHandoff.Replies streamed(String id, String mode, String conversation, ArrayNode prompt, Plan plan, ObjectNode decodeCommand,
            EngineProcess prefill, EngineProcess decode, int seconds)
    {
        ObjectNode command = command(id, mode, conversation, prompt, plan).put("stream", true);
        StreamedHandoff.Replies replies = StreamedHandoff.run(id, decodeCommand.put("handBack", plan.handBackAfter()),
                started -> prefill.request(command, seconds, message -> started.accept(message.path("params").asText())), decode, seconds);
        abortRefused(replies.prefill(), plan, decode, seconds);
        return replies;
    }

    private static ObjectNode command(String id, String mode, String conversation, ArrayNode prompt, Plan plan)
    {
        ObjectNode command = (ObjectNode) Lines.object().put("op", "prefill").put("id", id).put("conversation", conversation).put("mode", mode)
                .set("prompt", prompt);
        ObjectNode handBack = plan.handBack;
        if (handBack != null) {
            command.put("handBack", handBack.path("handBack").asText()).put("handBackId", handBack.path("handBackId").asText())
                    .put("handBackTokens", handBack.path("handBackTokens").asInt());
        }
        return command;
    }

    /** A prefill that refused or failed the turn leaves the hand-back unread: the decoder aborts it, so that neither engine holds it. */
    private static void abortRefused(ObjectNode reply, Plan plan, EngineProcess decode, int seconds)
    {
        if (reply.has("error") && plan.handBack != null) {
            decode.request(Lines.object().put("op", "abort").put("id", plan.handBack.path("handBackId").asText()), seconds);
        }
    }
}
