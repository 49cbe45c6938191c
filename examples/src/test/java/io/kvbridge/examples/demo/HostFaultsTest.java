package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.netlab.VirtualHosts;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Faults between "hosts" ({@link DemoHosts}: network namespaces joined by a switch): a prefill host
 * and two decode hosts, each engine in a worker JVM started through {@code ip netns exec}, UCX over
 * TCP between them, and a real etcd on a host of its own, through which alone the decoders find the
 * producer. The faults strike the first decoder's host (or the producer); the second decoder, an
 * engine of its own id, is the bystander that must go on being served beside them. Each test injects
 * one fault, measures how long the survivor took to notice (printed as {@code detection: ...}), and
 * asserts that every request ended exactly once within its deadline with a typed error or its bytes
 * checked, and that every host holds nothing afterwards. Skipped, with the reason, without root,
 * namespaces, UCX or etcd.
 */
@Tag("hosts")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class HostFaultsTest
{
    private static final long LEASE_MILLIS = 2_000;
    // scheduling and JVM noise on two loaded cores: a report counts as in time within this of its deadline
    private static final long SLACK_MILLIS = 3_000;
    private static final int PROMPT_BLOCKS = 16;
    private static final int TOKENS = PROMPT_BLOCKS * DemoModel.BLOCK_TOKENS;
    private static final byte[] SECRET = "host-faults-test-secret-0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private static DemoHosts hosts;
    private static DemoOptions options;
    private static int capacity;
    private static BlockPool producerBlocks;
    private static BlockPool decoderBlocks;
    private static BlockPool bystanderBlocks;
    private static ProcessHost producer;
    private static ProcessHost decoder;
    /** The second decode engine, on a host of its own, which no fault touches. */
    private static ProcessHost bystander;
    private static int nextRequest;
    private static final RecordingEvents producerEvents = new RecordingEvents();
    private static final RecordingEvents decoderEvents = new RecordingEvents();
    private static final RecordingEvents bystanderEvents = new RecordingEvents();
    /** When each request was handed to the decoder, and its deadline. */
    private static final Map<Integer, long[]> started = new LinkedHashMap<>();
    /** When each request's decoder report came. */
    private static final Map<Integer, Long> reported = new LinkedHashMap<>();

    /** UCX between hosts runs over its tcp transport, which the ucx transport opens only when told to. */
    private static final Map<String, String> UNCHECKED_TCP_LANE = Map.of("allow-unchecked-tcp-lane", "true");

    @BeforeAll
    static void startHosts()
    {
        // root, iproute2, veth pairs and the etcd binary: the demo's own check, the reason named in the skip
        Optional<String> noHosts = DemoHosts.unavailability();
        assumeTrue(noHosts.isEmpty(), () -> noHosts.orElseThrow());
        Ucx.assumeAvailable();
        // room for every request of the class: the pools never take blocks back
        options = new DemoOptions("ucx", "pull", "hma", 1, 1, 1, 1, 64, 64, TOKENS, 1, 0, true, LEASE_MILLIS, DemoOptions.CacheShape.DEFAULT,
                DemoOptions.CacheShape.DEFAULT, DemoOptions.HOST_CACHES, "", true, UNCHECKED_TCP_LANE);
        capacity = DemoRun.capacity(options);
        producerBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        decoderBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        bystanderBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        hosts = DemoHosts.start(options, 2);
        producer = hosts.startProducer(0, capacity, SECRET);
        decoder = hosts.startDecoder(0, capacity, SECRET);
        bystander = hosts.startDecoder(1, capacity, SECRET);
        producer.awaitReady();
        decoder.awaitReady();
        bystander.awaitReady();
        hosts.awaitHealthy(List.of(producer, decoder, bystander));
        System.out.println("hosts " + hosts.describe() + "; producer " + producer.label() + ", decoders " + decoder.label() + " and " + bystander.label());
    }

    /**
     * Restarts a host an earlier test left dead, then moves requests until one arrives in each mode:
     * a cold JVM's first handshake, READ or WRITE may take longer than the short lease the tests run
     * with on a loaded machine.
     */
    @BeforeEach
    void serving() throws InterruptedException
    {
        if (!decoder.process().isAlive()) {
            decoder.close();
            decoder = hosts.startDecoder(capacity, SECRET);
            decoder.awaitReady();
            hosts.awaitHealthy(List.of(decoder));
        }
        if (!bystander.process().isAlive()) {
            throw new AssertionError("the bystander decoder died: " + bystander.label());
        }
        if (!producer.process().isAlive()) {
            producer.close();
            producer = hosts.startProducer(0, capacity, SECRET);
            producer.awaitReady();
            hosts.awaitHealthy(List.of(producer));
        }
        // both paths once, cold paths being slow on a loaded machine: a pull's READ and a push's WRITE
        awaitRecovered("the hosts' start", TransferMode.PULL);
        awaitRecovered("the hosts' start", TransferMode.PUSH);
        if (bystanderEvents.checked.isEmpty()) {
            // the bystander's first requests: after them, each of its requests must arrive at the first try
            awaitRecovered(bystander, bystanderBlocks, "the hosts' start", TransferMode.PULL);
            awaitRecovered(bystander, bystanderBlocks, "the hosts' start", TransferMode.PUSH);
        }
    }

    @AfterAll
    static void stopHosts()
    {
        for (ProcessHost host : new ProcessHost[] {bystander, decoder, producer}) {
            if (host != null) {
                host.close();
            }
        }
        if (hosts != null) {
            hosts.close();
        }
    }

    @Test
    void aCutCableFailsTheRequestsInFlightWithinTheirDeadlineAndARestoredOneServesAgain() throws Exception
    {
        int first = transfer(TransferMode.PULL);
        List<Integer> inFlight = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            inFlight.add(prefill());
        }
        long cut = System.nanoTime();
        hosts.network().cut(hosts.decode());
        for (int request : inFlight) {
            receive(request, TransferMode.PULL);
        }
        await(() -> inFlight.stream().allMatch(reported::containsKey) && inFlight.stream().allMatch(HostFaultsTest::freed), "every request in flight to end");
        long detected = inFlight.stream().mapToLong(reported::get).min().orElseThrow();
        detection("cable cut", "the decoder reported its first request in flight", cut, detected);
        // the other decode host's cable is whole: it is served while the first is cut off
        long asked = System.nanoTime();
        List<Integer> beside = List.of(transferToBystander(TransferMode.PULL), transferToBystander(TransferMode.PUSH));
        detection("cable cut", "the other decode host was served a pull and a push", asked, System.nanoTime());
        hosts.network().restore(hosts.decode());
        // a request whose READ lingered past the cut is handed back once the READ ended
        await(() -> inFlight.stream().noneMatch(request -> outcome(request).equals("none")), "every request in flight to be handed back");
        for (int request : inFlight) {
            String outcome = outcome(request);
            assertTrue(outcome.equals(request + " parity=0") || outcome.startsWith(request + " parity=0 failed=KVB/"), outcome);
        }
        assertTrue(inFlight.stream().anyMatch(request -> outcome(request).contains("failed=KVB/")), "a cut cable fails a request: " + decoderEvents.checked);
        // the producer let go of what the decoder could not read, by its lease at the latest
        awaitRecovered("the cable's restore", TransferMode.PULL);
        assertEndedOnce(List.of(first));
        assertEndedOnce(inFlight);
        assertEndedOnce(beside);
        assertIdle();
    }

    @Test
    void aRateLimitedCableSlowsRequestsButEveryOneArrives() throws Exception
    {
        long before = timed(TransferMode.PULL);
        VirtualHosts.Host decode = hosts.decode();
        hosts.network().limitRate(decode, 20);
        List<Integer> requests = new ArrayList<>();
        long slowed;
        try {
            long start = System.nanoTime();
            for (int i = 0; i < 3; i++) {
                requests.add(transfer(TransferMode.PULL));
            }
            slowed = (System.nanoTime() - start) / 3;
        }
        finally {
            hosts.network().clearImpairment(decode);
        }
        System.out.printf(Locale.ROOT, "detection: rate limit 20 Mbit/s: a request took %.1f ms before, %.1f ms limited (nothing to detect: every request arrived)%n",
                before / 1e6, slowed / 1e6);
        assertTrue(slowed > before, "a limited cable is slower: " + slowed + " ns against " + before + " ns");
        assertEndedOnce(requests);
        assertIdle();
    }

    @Test
    void delayAndLossSlowRequestsButEveryOneArrives() throws Exception
    {
        Optional<String> noImpairment = VirtualHosts.impairmentUnavailability();
        assumeTrue(noImpairment.isEmpty(), () -> noImpairment.orElseThrow());
        long before = timed(TransferMode.PULL);
        VirtualHosts.Host decode = hosts.decode();
        // 5 ms each way and 1 % of frames lost (a few per request, so TCP retransmits): requests still arrive within the 2 s lease
        hosts.network().impair(decode, 5, 1.0);
        List<Integer> requests = new ArrayList<>();
        long slowed;
        String impairedBy;
        try {
            long start = System.nanoTime();
            for (int i = 0; i < 3; i++) {
                requests.add(transfer(i % 2 == 0 ? TransferMode.PULL : TransferMode.PUSH));
            }
            slowed = (System.nanoTime() - start) / 3;
            // where the kernel lacks netem, the frame relay impairs the cable and counts what it dropped
            impairedBy = hosts.network().relayCounters(decode)
                    .map(counters -> String.format(Locale.ROOT, "frame relay, %d of %d frames lost", counters.lost(), counters.received()))
                    .orElse("tc netem");
        }
        finally {
            hosts.network().clearImpairment(decode);
        }
        System.out.printf(Locale.ROOT, "detection: delay 5 ms loss 1 %% each way (%s): a request took %.1f ms before, %.1f ms impaired%n", impairedBy,
                before / 1e6, slowed / 1e6);
        assertTrue(slowed > before, "an impaired cable is slower: " + slowed + " ns against " + before + " ns");
        assertEndedOnce(requests);
        assertIdle();
    }

    @Test
    void aKilledDecoderIsLetGoByTheProducerAndANewOneIsServed() throws Exception
    {
        int first = transfer(TransferMode.PULL);
        // a router may hand a push decoder the parameters before the prefill finished: its registration
        // waits at the producer, which then owes the decoder its writes
        int doomed = nextRequest++;
        TransferParams early = new TransferParams("demo-prefill", "", hosts.stageSideChannels(), 1, 1, BlockIds.empty(), EnumSet.allOf(TransferMode.class),
                LEASE_MILLIS);
        handOver(doomed, early, TransferMode.PUSH);
        await(() -> held(producer, "stashedRegistrations") == 1, "the decoder's registration to reach the producer");
        long killed = System.nanoTime();
        kill(decoder);
        producer.prefill(doomed, TOKENS, producerBlocks.allocate(PROMPT_BLOCKS));
        producer.params(doomed);
        await(() -> freed(doomed), "the producer to free request " + doomed);
        long freedAt = System.nanoTime();
        detection("decoder JVM killed (SIGKILL) with a push registered", "the producer freed the request it owed", killed, freedAt);
        // a dead decoder never acknowledges: only the lease frees the blocks
        assertEquals(List.of("req-" + doomed + " EXPIRED"), producerEvents.freed.stream().filter(line -> line.startsWith("req-" + doomed + " ")).toList());
        assertTrue(freedAt - killed <= TimeUnit.MILLISECONDS.toNanos(LEASE_MILLIS + SLACK_MILLIS), "freed " + (freedAt - killed) / 1_000_000
                + " ms after the kill, lease " + LEASE_MILLIS + " ms");
        // the other decoder, a different engine, is served while the first one is dead
        List<Integer> beside = List.of(transferToBystander(TransferMode.PUSH), transferToBystander(TransferMode.PULL));
        decoder.close();
        decoder = hosts.startDecoder(capacity, SECRET);
        decoder.awaitReady();
        hosts.awaitHealthy(List.of(decoder));
        int after = transfer(TransferMode.PUSH);
        assertEndedOnce(List.of(first, after));
        assertEndedOnce(beside);
        assertIdle();
    }

    @Test
    void etcdStoppedKeepsTheCachedEntriesServingAndHealthSaysSo() throws Exception
    {
        // each side looks the other up once, a pull the producer and a push the decoder (for the producer's writes)
        List<Integer> before = List.of(transfer(TransferMode.PULL), transfer(TransferMode.PUSH));
        long stopped = System.nanoTime();
        hosts.etcd().stop();
        List<Integer> during = new ArrayList<>();
        try {
            await(() -> unhealthy(decoder).contains("unreachable since"), "the decoder's health to say etcd is unreachable");
            detection("etcd stopped (SIGTERM)", "the decoder's health said unreachable", stopped, System.nanoTime());
            during.add(transfer(TransferMode.PULL));
            during.add(transfer(TransferMode.PUSH));
            during.add(transferToBystander(TransferMode.PULL));
        }
        finally {
            hosts.etcd().start();
        }
        long restarted = System.nanoTime();
        await(() -> unhealthy(decoder).isEmpty() && unhealthy(producer).isEmpty() && unhealthy(bystander).isEmpty(), "every host to reach etcd again");
        detection("etcd restarted", "every host's health cleared", restarted, System.nanoTime());
        assertEndedOnce(before);
        assertEndedOnce(during);
        assertIdle();
    }

    @Test
    void aRestartedProducerRefusesTheOldEpochAtOnceAndServesTheNewOne() throws Exception
    {
        transfer(TransferMode.PULL);
        List<Integer> stale = List.of(prefill(), prefill());
        int staleBeside = prefill();
        Map<Integer, TransferParams> old = new LinkedHashMap<>();
        stale.forEach(request -> old.put(request, params.remove(request)));
        old.put(staleBeside, params.remove(staleBeside));
        kill(producer);
        producer.close();
        long restarted = System.nanoTime();
        producer = hosts.startProducer(0, capacity, SECRET);
        producer.awaitReady();
        detection("producer restarted (new epoch)", "the new producer served", restarted, System.nanoTime());
        // its new entry is in etcd once it reaches etcd; the decoder's directory must reach etcd too, or its
        // handshakes go to the parameters' address, which leads nowhere here (KVB/HandshakeFailed)
        hosts.awaitHealthy(List.of(producer, decoder, bystander));
        for (int request : stale) {
            long asked = System.nanoTime();
            handOver(request, old.get(request), TransferMode.PULL);
            await(() -> reported.containsKey(request), "the decoder to report request " + request);
            detection("producer restarted (new epoch)", "the decoder failed stale request " + request + " (" + outcome(request) + ")", asked,
                    reported.get(request));
        }
        // a decoder that still caches the old engine posts to its dead endpoint and fails with PeerUnknown; that failure
        // has the next handshake ask the side channel again, which answers with the new epoch
        assertTrue(List.of(stale.getFirst() + " parity=0 failed=KVB/StaleEpoch", stale.getFirst() + " parity=0 failed=KVB/PeerUnknown")
                .contains(outcome(stale.getFirst())), outcome(stale.getFirst()));
        assertEquals(stale.getLast() + " parity=0 failed=KVB/StaleEpoch", outcome(stale.getLast()));
        long served = System.nanoTime();
        int request = transfer(TransferMode.PULL);
        detection("producer restarted (new epoch)", "a request of the new one arrived", served, reported.get(request));
        // the other decoder cached the old producer too: its stale request fails the same ways, and its next one is served
        handOver(bystander, bystanderBlocks, staleBeside, old.get(staleBeside), TransferMode.PULL);
        await(() -> reported.containsKey(staleBeside), "the other decoder to report request " + staleBeside);
        assertTrue(List.of(staleBeside + " parity=0 failed=KVB/StaleEpoch", staleBeside + " parity=0 failed=KVB/PeerUnknown").contains(outcome(staleBeside)),
                outcome(staleBeside));
        int besideServed = transferToBystander(TransferMode.PULL);
        assertEndedOnce(List.of(request, besideServed));
        for (int gone : List.of(stale.getFirst(), stale.getLast(), staleBeside)) {
            // ended once at the decoder; its blocks died with the old producer, and the new one never heard of it
            assertReportedOnce(gone);
            assertEquals("none", producerOutcome(gone));
        }
        assertIdle();
    }

    // ---- requests

    private static final Map<Integer, TransferParams> params = new LinkedHashMap<>();
    private static final List<ProcessHost> killed = new ArrayList<>();

    private static void kill(ProcessHost host)
    {
        killed.add(host);
        try {
            assertTrue(host.process().destroyForcibly().waitFor(30, TimeUnit.SECONDS), host.label() + " did not die");
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while killing " + host.label());
        }
    }

    /** Prefills a request at the producer and keeps its parameters; returns its index. */
    private static int prefill()
    {
        int request = nextRequest++;
        producer.prefill(request, TOKENS, producerBlocks.allocate(PROMPT_BLOCKS));
        params.put(request, producer.params(request));
        return request;
    }

    /** Hands a prefilled request to the decoder, as a router would: without the producer's address. */
    private static void receive(int request, TransferMode mode)
    {
        handOver(request, params.remove(request), mode);
    }

    private static void handOver(int request, TransferParams given, TransferMode mode)
    {
        handOver(decoder, decoderBlocks, request, given, mode);
    }

    private static void handOver(ProcessHost to, BlockPool blocks, int request, TransferParams given, TransferMode mode)
    {
        long now = System.nanoTime();
        // the decoder's deadline: a push write within two leases, a pull within its transfer deadline (the lease)
        started.put(request, new long[] {now, now + TimeUnit.MILLISECONDS.toNanos(2 * LEASE_MILLIS + SLACK_MILLIS)});
        to.receive(request, DemoHosts.withoutAddresses(given), mode, TOKENS, blocks.allocate(PROMPT_BLOCKS));
    }

    /** Moves one request end to end to the first decoder and checks it arrived whole. */
    private static int transfer(TransferMode mode) throws InterruptedException
    {
        return transfer(decoder, decoderBlocks, mode);
    }

    /** Moves one request end to end to the bystander decoder and checks it arrived whole. */
    private static int transferToBystander(TransferMode mode) throws InterruptedException
    {
        return transfer(bystander, bystanderBlocks, mode);
    }

    private static int transfer(ProcessHost to, BlockPool blocks, TransferMode mode) throws InterruptedException
    {
        int request = prefill();
        handOver(to, blocks, request, params.remove(request), mode);
        await(() -> reported.containsKey(request) && freed(request), "request " + request + " to arrive at the " + to.label());
        assertEquals(request + " parity=0", outcome(request));
        assertEquals("req-" + request + " COMPLETED", producerOutcome(request));
        return request;
    }

    /** The median time of three requests, so that one slow outlier (a compilation, a loaded core) does not count. */
    private static long timed(TransferMode mode) throws InterruptedException
    {
        long[] times = new long[3];
        for (int i = 0; i < times.length; i++) {
            long start = System.nanoTime();
            transfer(mode);
            times[i] = System.nanoTime() - start;
        }
        java.util.Arrays.sort(times);
        return times[1];
    }

    /** Reads every host's reports, stamping when each decoder report came. */
    private static void poll()
    {
        int before = decoderEvents.checked.size();
        int beforeBystander = bystanderEvents.checked.size();
        int quarantinedBefore = decoderEvents.quarantined.size();
        int quarantinedBeforeBystander = bystanderEvents.quarantined.size();
        // a host a test killed reports only that it went away
        if (!killed.contains(decoder)) {
            decoder.poll(decoderEvents);
        }
        bystander.poll(bystanderEvents);
        if (!killed.contains(producer)) {
            producer.poll(producerEvents);
        }
        long now = System.nanoTime();
        List<String> news = new ArrayList<>(decoderEvents.checked.subList(before, decoderEvents.checked.size()));
        news.addAll(bystanderEvents.checked.subList(beforeBystander, bystanderEvents.checked.size()));
        for (String line : news) {
            reported.putIfAbsent(Integer.parseInt(line.substring(0, line.indexOf(' '))), now);
        }
        // a failure whose blocks a lingering READ may still reach: the engine learnt of it now, and the
        // host hands the blocks back (its report) only once the READ provably ended
        List<Integer> held = new ArrayList<>(decoderEvents.quarantined.subList(quarantinedBefore, decoderEvents.quarantined.size()));
        held.addAll(bystanderEvents.quarantined.subList(quarantinedBeforeBystander, bystanderEvents.quarantined.size()));
        for (int request : held) {
            reported.putIfAbsent(request, now);
        }
    }

    /** Every decoder report, the first decoder's then the bystander's. */
    private static List<String> decoderReports()
    {
        List<String> all = new ArrayList<>(decoderEvents.checked);
        all.addAll(bystanderEvents.checked);
        return all;
    }

    private static boolean freed(int request)
    {
        return producerEvents.freed.stream().anyMatch(line -> line.startsWith("req-" + request + " "));
    }

    private static String outcome(int request)
    {
        return decoderReports().stream().filter(line -> line.startsWith(request + " ")).findFirst().orElse("none");
    }

    private static String producerOutcome(int request)
    {
        return producerEvents.freed.stream().filter(line -> line.startsWith("req-" + request + " ")).findFirst().orElse("none");
    }

    /** Each request reported once by the decoder and freed once by the producer, before its deadline. */
    private static void assertEndedOnce(List<Integer> requests)
    {
        for (int request : requests) {
            assertReportedOnce(request);
            assertEquals(1, producerEvents.freed.stream().filter(line -> line.startsWith("req-" + request + " ")).count(),
                    "request " + request + " freed by the producer: " + producerEvents.freed);
        }
    }

    private static void assertReportedOnce(int request)
    {
        // once in all: by the decoder it was handed to, never by the other
        assertEquals(1, decoderReports().stream().filter(line -> line.startsWith(request + " ")).count(),
                "request " + request + " reported by the decoders: " + decoderReports());
        long[] times = started.get(request);
        assertTrue(reported.get(request) <= times[1], "request " + request + " ended " + (reported.get(request) - times[0]) / 1_000_000
                + " ms after it was handed over, past its deadline of " + (times[1] - times[0]) / 1_000_000 + " ms");
    }

    private static int held(ProcessHost host, String key)
    {
        @SuppressWarnings("unchecked")
        Map<String, Object> idle = (Map<String, Object>) host.audit().get("idle");
        return ((Number) idle.get(key)).intValue();
    }

    /** Waits until a request moves again after a fault: the first ones may fail while peers are re-validated. */
    private static void awaitRecovered(String since, TransferMode mode) throws InterruptedException
    {
        awaitRecovered(decoder, decoderBlocks, since, mode);
    }

    private static void awaitRecovered(ProcessHost to, BlockPool blocks, String since, TransferMode mode) throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            int request = prefill();
            handOver(to, blocks, request, params.remove(request), mode);
            await(() -> reported.containsKey(request) && freed(request), "request " + request + " to end");
            if (outcome(request).equals(request + " parity=0")) {
                return;
            }
            assertTrue(System.nanoTime() < deadline, "no request arrived at the " + to.label() + " within 30 s of " + since + ": " + decoderReports());
        }
    }

    /** Every host holds nothing and is healthy: no requests, leases, grants, transfers or handles. */
    private static void assertIdle() throws InterruptedException
    {
        for (ProcessHost host : List.of(producer, decoder, bystander)) {
            await(() -> (boolean) host.audit().get("idleOk"), host.label() + " to hold nothing: " + host.audit());
        }
    }

    @SuppressWarnings("unchecked")
    private static String unhealthy(ProcessHost host)
    {
        return String.join("; ", (List<String>) host.audit().get("health"));
    }

    private static void detection(String fault, String what, long since, long at)
    {
        System.out.printf(Locale.ROOT, "detection: %s: %s after %d ms%n", fault, what, (at - since) / 1_000_000);
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            poll();
            if (condition.getAsBoolean()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what + " (decoders: " + decoderReports() + ", producer: " + producerEvents.freed + ")");
            }
            Thread.sleep(5);
        }
    }
}
