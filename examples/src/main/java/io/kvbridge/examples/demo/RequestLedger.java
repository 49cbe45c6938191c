package io.kvbridge.examples.demo;

import io.kvbridge.api.FreeReason;
import io.kvbridge.spi.ErrorCode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntPredicate;

/**
 * What the demo's scheduler knows of the requests in flight, and the running totals of the audit: it
 * hears every host's events ({@link DemoHost.Events}), tells which requests are done (every decoder
 * host reported, every producer rank freed), and counts what the audit checks.
 */
final class RequestLedger implements DemoHost.Events
{
    /** How a decoder host reports a request its digests refused: the code's id leads the failure. */
    private static final String DIGEST_MISMATCH = ErrorCode.DIGEST_MISMATCH.id() + " ";

    /** One request on its way. */
    static final class Active
    {
        final int index;
        final int tokens;
        final int[][] producerIds;
        final int[][] decoderIds;
        int producerRanksDone;
        int decoderHostsDone;
        boolean failed;
        boolean digestRefused;

        Active(int index, int tokens, int[][] producerIds, int[][] decoderIds)
        {
            this.index = index;
            this.tokens = tokens;
            this.producerIds = producerIds;
            this.decoderIds = decoderIds;
        }
    }

    final Map<Integer, Active> active = new LinkedHashMap<>();
    final Map<String, Integer> byProducerId = new HashMap<>();
    final List<Active> done = new ArrayList<>();
    final List<String> problems = new ArrayList<>();
    final int producerRanks;
    final int decoderHosts;
    final BlockPool decoderBlocks;
    long tokensNeeded;
    long tokensReceived;
    long parityErrors;
    long completed;
    long expiredLeases;
    long receiveFailures;
    // the corrupt:N fault: which requests it changed, and how many of them the decoder refused by their digests
    final IntPredicate corrupted;
    long digestRefused;
    long digestRefusedTokens;
    // the stall-producer fault, or null
    final ProducerStall stall;
    long quarantined;
    long released;
    // set by the scheduler when it records decode-ready times, else null
    DecodeReadyTimes decodeReadyTimes;

    RequestLedger(int producerRanks, int decoderHosts, BlockPool decoderBlocks, IntPredicate corrupted, ProducerStall stall)
    {
        this.producerRanks = producerRanks;
        this.decoderHosts = decoderHosts;
        this.decoderBlocks = decoderBlocks;
        this.corrupted = corrupted;
        this.stall = stall;
    }

    boolean stalled(int index)
    {
        return stall != null && stall.request() == index;
    }

    void started(Active request)
    {
        active.put(request.index, request);
        byProducerId.put(EngineHost.producerId(request.index), request.index);
        tokensNeeded += request.tokens;
    }

    void finished(Active request)
    {
        active.remove(request.index);
        byProducerId.remove(EngineHost.producerId(request.index));
    }

    @Override
    public void decodeReady(int index)
    {
        if (decodeReadyTimes != null) {
            decodeReadyTimes.ready(index, System.nanoTime());
        }
    }

    @Override
    public void freed(String requestId, FreeReason reason)
    {
        Integer index = byProducerId.get(requestId);
        Active request = index == null ? null : active.get(index);
        if (request == null) {
            problems.add("producer freed unknown request " + requestId);
            return;
        }
        if (stalled(index)) {
            // the decoder gave up on it: the producer's lease ends it, or its refused late write
            stall.producerFreed(reason);
        }
        else if (reason == FreeReason.EXPIRED) {
            expiredLeases++;
        }
        else if (reason != FreeReason.COMPLETED) {
            problems.add("producer freed " + requestId + " as " + reason);
        }
        request.producerRanksDone++;
        settle(request);
    }

    @Override
    public void checked(int index, long parity, List<String> failures)
    {
        Active request = active.get(index);
        if (request == null) {
            problems.add("decoder reported unknown request " + index);
            return;
        }
        parityErrors += parity;
        request.decoderHostsDone++;
        if (!failures.isEmpty() && corrupted.test(index) && failures.stream().allMatch(failure -> failure.startsWith(DIGEST_MISMATCH))) {
            // what the fault is for: the decoder refused the changed bytes instead of taking them as data
            request.failed = true;
            request.digestRefused = true;
        }
        else if (!failures.isEmpty() && stalled(index)) {
            request.failed = true;
            stall.decoderFailed(failures);
        }
        else if (!failures.isEmpty()) {
            request.failed = true;
            receiveFailures += failures.size();
            failures.forEach(failure -> problems.add("decoder failed " + EngineHost.decoderId(index) + ": " + failure));
        }
        if (request.decoderHostsDone == decoderHosts) {
            if (!request.failed) {
                tokensReceived += request.tokens;
                completed++;
            }
            else if (request.digestRefused) {
                digestRefused++;
                digestRefusedTokens += request.tokens;
            }
            if (!request.failed) {
                decoderBlocks.release(request.decoderIds);
            }
            // a failed request's blocks hold the decoder's sentinel until the request settles
        }
        settle(request);
    }

    @Override
    public void quarantined(int index, String reason)
    {
        quarantined++;
        if (stalled(index)) {
            stall.quarantined(reason);
        }
    }

    @Override
    public void released(int index, String reason)
    {
        released++;
        if (stalled(index)) {
            stall.released(reason);
        }
    }

    private void settle(Active request)
    {
        if (request.decoderHostsDone == decoderHosts && request.producerRanksDone == producerRanks) {
            done.add(request);
        }
    }
}
