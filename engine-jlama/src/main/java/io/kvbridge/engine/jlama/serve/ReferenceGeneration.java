package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.engine.jlama.JlamaEngine;
import io.kvbridge.engine.jlama.JlamaSessionPool;

/** The reference JVM's one command: prefill and greedy decode in one JVM without kvbridge, what the disaggregated engines must reproduce bit for bit. */
final class ReferenceGeneration
{
    private ReferenceGeneration()
    {
    }

    /**
     * Prefills a prompt into a free slot, decodes greedily and answers every token, every step's
     * logits digest and the times.
     *
     * @param engine the engine.
     * @param pool its session slots.
     * @param prompt the prompt's tokens.
     * @param steps decode steps after the first token.
     * @return the reply.
     */
    static ObjectNode generate(JlamaEngine engine, JlamaSessionPool pool, int[] prompt, int steps)
    {
        int slot = pool.acquire();
        try {
            long start = System.nanoTime();
            JlamaEngine.Step step = engine.prefill(pool.buffer(slot), prompt);
            long prefillNanos = System.nanoTime() - start;
            ArrayNode tokens = Lines.JSON.createArrayNode().add(step.token());
            ArrayNode digests = Lines.JSON.createArrayNode().add(Lines.digest(step.logits()));
            long firstStepNanos = 0;
            for (int s = 0; s < steps; s++) {
                long stepStart = System.nanoTime();
                step = engine.decode(pool.buffer(slot), step.token(), prompt.length + s);
                if (s == 0) {
                    firstStepNanos = System.nanoTime() - stepStart;
                }
                tokens.add(step.token());
                digests.add(Lines.digest(step.logits()));
            }
            ObjectNode reply = Lines.object().put("prefillNanos", prefillNanos).put("firstStepNanos", firstStepNanos);
            reply.set("tokens", tokens);
            reply.set("digests", digests);
            return reply;
        }
        finally {
            pool.release(slot);
        }
    }
}
