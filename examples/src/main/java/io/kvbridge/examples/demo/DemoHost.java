package io.kvbridge.examples.demo;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import java.util.List;
import java.util.Map;

/**
 * What the demo's scheduler asks of a process that runs ranks of an engine: the same calls whether
 * the ranks run in this JVM ({@link EngineHost}) or in a worker process ({@link ProcessHost}).
 */
interface DemoHost extends AutoCloseable
{
    /** What a host reports from {@link #poll}. */
    interface Events
    {
        /** A producer rank may free a request's blocks. */
        void freed(String requestId, FreeReason reason);

        /**
         * Every decoder rank of the host reported a request and its bytes were checked and wiped.
         *
         * @param request the request's index.
         * @param parityErrors wrong bytes found (0 when the request failed: nothing is checked).
         * @param failures each failed rank's report; empty when the request arrived.
         */
        void checked(int request, long parityErrors, List<String> failures);

        /**
         * A decoder rank quarantined a failed request's blocks (a late writer may still reach them):
         * the request's {@link #checked} comes only once every rank released them.
         *
         * @param request the request's index.
         * @param reason what is unproven, as the connector said.
         */
        void quarantined(int request, String reason);

        /**
         * One rank's quarantine of a request ended on proof.
         *
         * @param request the request's index.
         * @param reason the release's reason, as the connector said.
         */
        void released(int request, String reason);

        /**
         * Every decoder rank of the host reported a request received, before its bytes are checked:
         * the moment the decoder could start decoding it.
         *
         * @param request the request's index.
         */
        void decodeReady(int request);
    }

    /** @return a name for messages. */
    String label();

    /** @return the ranks the host runs. */
    int ranks();

    /** Waits until the host serves its side channel. */
    void awaitReady();

    /** Producer: fills the request's pages on every rank and reports the prefill finished; see {@link #params}. */
    void prefill(int request, int tokens, int[][] blockIds);

    /**
     * Producer: whether the request's parameters are ready, so that {@link #params} returns at once;
     * a prefill that takes time ({@link DemoOptions#computedPrefill()}) ends after {@link #prefill} returned.
     *
     * @throws DemoFailure when the prefill failed or the host is gone.
     */
    boolean paramsReady(int request);

    /** Producer: the parameters a finished prefill handed to the router; waits for them. */
    TransferParams params(int request);

    /** Decoder: every rank starts receiving the request into its blocks. */
    void receive(int request, TransferParams params, TransferMode mode, int tokens, int[][] blockIds);

    /**
     * Reports what happened since the last call.
     *
     * @return whether anything was reported.
     * @throws DemoFailure when the host is gone.
     */
    boolean poll(Events events);

    /**
     * Decoder: counts the bytes of a failed request's blocks that differ from the sentinel the host
     * wrote into them when they were handed back, then wipes them for the next request.
     *
     * @param request the request's index.
     * @return the changed bytes: 0 unless something wrote the blocks after kvbridge handed them back.
     */
    long sentinelChanged(int request);

    /**
     * Producer: stops the host's process for a while (the {@code stall-producer} fault), then lets it
     * go on.
     *
     * @param millis how long it stays stopped.
     * @throws UnsupportedOperationException when the host runs in this JVM.
     */
    default void stall(long millis)
    {
        throw new UnsupportedOperationException(label() + " runs in this JVM: only a host in a process of its own can be stopped");
    }

    /** @return the host's part of the audit: meters, idle audit, cache layout, leftover bytes. */
    Map<String, Object> audit();

    @Override
    void close();
}
