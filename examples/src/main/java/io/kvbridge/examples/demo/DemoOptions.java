package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

/**
 * What the demo runs; checked by the command before anything starts.
 *
 * @param backend transport name.
 * @param mode {@code push}, {@code pull} or {@code mixed} (requests alternate).
 * @param layout {@code hma}, {@code mla} or {@code per-layer}.
 * @param producerPp producer pipeline stages.
 * @param producerTp producer tensor-parallel ranks per stage.
 * @param consumerPp decoder pipeline stages.
 * @param consumerTp decoder tensor-parallel ranks per stage.
 * @param requests requests to move.
 * @param concurrency requests in flight.
 * @param maxTokens longest prompt; lengths are drawn uniformly from 1 to this.
 * @param seed random seed of the prompt lengths.
 * @param idleMillis wait after the last request before the idle audit.
 * @param processes whether every producer stage and the decoder run in JVMs of their own.
 * @param leaseMillis how long the producer holds finished blocks without news from the decoder.
 */
public record DemoOptions(String backend, String mode, String layout, int producerPp, int producerTp, int consumerPp, int consumerTp, int requests,
        int concurrency, int maxTokens, long seed, long idleMillis, boolean processes, long leaseMillis)
{
    /** Checks the references. */
    public DemoOptions
    {
        requireNonNull(backend, "backend is null");
        requireNonNull(mode, "mode is null");
        requireNonNull(layout, "layout is null");
    }
}
