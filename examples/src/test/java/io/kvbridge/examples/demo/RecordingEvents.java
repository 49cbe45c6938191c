package io.kvbridge.examples.demo;

import io.kvbridge.api.FreeReason;
import java.util.ArrayList;
import java.util.List;

/**
 * What a demo host reported, as lines the process tests compare: {@code "req-1 COMPLETED"} for a
 * freed request, {@code "1 parity=0"} for a checked one, with {@code " failed=<code>"} (the first
 * word of its first failure) when it failed.
 */
final class RecordingEvents implements DemoHost.Events
{
    final List<String> freed = new ArrayList<>();
    final List<String> checked = new ArrayList<>();
    // every failure line of every failed request, whole
    final List<String> failures = new ArrayList<>();
    // requests whose blocks a decoder host reported quarantined, and released on proof
    final List<Integer> quarantined = new ArrayList<>();
    final List<Integer> released = new ArrayList<>();
    // requests every decoder rank of the host reported received
    final List<Integer> decodeReady = new ArrayList<>();

    @Override
    public void decodeReady(int request)
    {
        decodeReady.add(request);
    }

    @Override
    public void freed(String requestId, FreeReason reason)
    {
        freed.add(requestId + " " + reason);
    }

    @Override
    public void checked(int request, long parityErrors, List<String> failures)
    {
        this.failures.addAll(failures);
        checked.add(request + " parity=" + parityErrors + (failures.isEmpty() ? "" : " failed=" + failures.getFirst().split(" ")[0]));
    }

    @Override
    public void quarantined(int request, String reason)
    {
        quarantined.add(request);
    }

    @Override
    public void released(int request, String reason)
    {
        released.add(request);
    }
}
