package io.kvbridge.examples.demo;

import io.kvbridge.api.FreeReason;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The scheduler's side of the {@code stall-producer:DURATION} fault. Request
 * {@link DemoOptions#stalledRequest()} waits until nothing else is in flight and runs alone: once every
 * producer stage finished its prefill, the last stage's process is stopped for the duration, then the
 * decoder is handed the request. The other stages write their part; the decoder gives up after half
 * the duration ({@code registrationTimeout} and {@code transferTimeout}), its blocks are handed back
 * (the transport proved the stopped writer cannot land a byte) or quarantined until released on proof,
 * and the decoder host reuses them at once by writing a sentinel into them. The stopped stage resumes
 * with its lease still running and writes into what it was granted before. Once every producer stage
 * freed the request, the sentinel is checked: a byte changed there is a write after free. Nothing else
 * is admitted while the request is in flight, so every failed transfer and notification of the run is
 * this request's.
 */
final class ProducerStall
{
    private final int request;
    private final long millis;
    private boolean started;
    private int tokens;
    private boolean settled;
    private String stoppedHost = "";
    private final List<String> decoderFailures = new ArrayList<>();
    private final List<String> quarantines = new ArrayList<>();
    private final List<String> releases = new ArrayList<>();
    private final List<String> producerFreed = new ArrayList<>();
    private long sentinelBytesChanged = -1;

    ProducerStall(DemoOptions options)
    {
        this.request = options.stalledRequest();
        this.millis = options.stallProducerMillis();
    }

    /** {@return the stalled request's index} */
    int request()
    {
        return request;
    }

    /** {@return the stalled request's prompt tokens, which the decoder does not receive} */
    int tokens()
    {
        return tokens;
    }

    /** {@return whether the next request may start now} */
    boolean admits(int next, boolean nothingInFlight)
    {
        if (started && !settled) {
            return false;
        }
        return next != request || nothingInFlight;
    }

    /** Stops the last producer stage: its prefill is finished, its writes not yet posted. */
    void stop(DemoHost lastStage, int promptTokens)
    {
        started = true;
        tokens = promptTokens;
        stoppedHost = lastStage.label();
        lastStage.stall(millis);
    }

    void decoderFailed(List<String> failures)
    {
        decoderFailures.addAll(failures);
    }

    void quarantined(String reason)
    {
        quarantines.add(reason);
    }

    void released(String reason)
    {
        releases.add(reason);
    }

    void producerFreed(FreeReason reason)
    {
        producerFreed.add(reason.name());
    }

    /** Every producer stage freed the request and every decoder host handed its blocks back: the sentinel is checked. */
    void settled(List<DemoHost> decoders)
    {
        long changed = 0;
        for (DemoHost decoder : decoders) {
            changed += decoder.sentinelChanged(request);
        }
        sentinelBytesChanged = changed;
        settled = true;
    }

    /** {@return whether the fault did what it is for: the request failed at the decoder, and no byte landed after its blocks came back} */
    boolean ok()
    {
        return settled && !decoderFailures.isEmpty() && sentinelBytesChanged == 0 && releases.size() == quarantines.size();
    }

    Map<String, Object> audit()
    {
        Map<String, Object> audit = new LinkedHashMap<>();
        audit.put("fault", "stall-producer:" + millis + "ms");
        audit.put("request", request);
        audit.put("stopped", stoppedHost);
        audit.put("decoderFailures", List.copyOf(decoderFailures));
        audit.put("quarantined", List.copyOf(quarantines));
        audit.put("releasedOnProof", List.copyOf(releases));
        audit.put("producerFreed", List.copyOf(producerFreed));
        audit.put("sentinelBytesChanged", sentinelBytesChanged);
        audit.put("ok", ok());
        return audit;
    }
}
