package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A streamed request (the producer reports each layer with a compute pause between them) whose
 * producer or decoder process is killed ({@code kill -9}) or stopped ({@code kill -STOP}, then
 * {@code kill -CONT}) mid-stream, once some layers moved and before all-done; pushed and pulled, over
 * real UCX and over the {@code tcp} transport. The survivor reports the request within its deadline
 * (the producer's lease; the decoder's registration deadline, which bounds a layer never
 * announced), a stopped peer reports its side once after it continues, nothing is reported twice,
 * and the survivor then serves a new streamed request, every byte checked, and holds nothing.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
final class StreamedPeerFaultTest
{
    private static final long LEASE_MILLIS = 5_000;
    // the decoder's registration deadline the demo derives from the lease
    private static final long REGISTRATION_MILLIS = 2 * LEASE_MILLIS;
    // scheduling and JVM noise on a loaded machine: a report counts as in time within this of its deadline
    private static final long SLACK_MILLIS = 3_000;
    // 30 layers of 60 ms: a prefill of 1.8 s, well inside the lease, long enough to stop a peer mid-stream
    private static final long LAYER_NANOS = TimeUnit.MILLISECONDS.toNanos(60);
    // above streamMinTokens, so that the request moves layer by layer
    private static final int PROMPT_BLOCKS = 64;
    private static final int TOKENS = PROMPT_BLOCKS * DemoModel.BLOCK_TOKENS;
    private static final int LAYERS = DemoModel.layerCount(DemoModel.DEFAULT);
    private static final byte[] SECRET = "streamed-peer-fault-test-secret-01234".getBytes(StandardCharsets.US_ASCII);

    // each case starts four JVMs and waits out a lease and a registration deadline: by default each test runs each mode once and
    // each transport once, crosswise to the other test; -Dkvbridge.streamedFaults.all=true runs every pair in both
    private static final boolean EVERY_PAIR = Boolean.getBoolean("kvbridge.streamedFaults.all");

    static Stream<Arguments> killedCases()
    {
        return EVERY_PAIR ? everyPair() : Stream.of(Arguments.of("ucx", "pull"), Arguments.of("tcp", "push"));
    }

    static Stream<Arguments> stoppedCases()
    {
        return EVERY_PAIR ? everyPair() : Stream.of(Arguments.of("ucx", "push"), Arguments.of("tcp", "pull"));
    }

    private static Stream<Arguments> everyPair()
    {
        return Stream.of(Arguments.of("ucx", "push"), Arguments.of("ucx", "pull"), Arguments.of("tcp", "push"), Arguments.of("tcp", "pull"));
    }

    /** A producer and a decoder process, streamed prefills, and what they reported; either may be replaced. */
    private static final class Peers implements AutoCloseable
    {
        final DemoOptions options;
        final TransferMode mode;
        final int capacity;
        final BlockPool decoderBlocks;
        final RecordingEvents producerEvents = new RecordingEvents();
        final RecordingEvents decoderEvents = new RecordingEvents();
        BlockPool producerBlocks;
        ProcessHost producer;
        ProcessHost decoder;
        // the decoder's blocks of the last request started
        int[][] decoderIds;

        Peers(String backend, String mode)
        {
            this.options = new DemoOptions(backend, mode, "hma", 1, 1, 1, 1, 8, 8, TOKENS, 1, 0, true, LEASE_MILLIS).withPrefill(true, LAYER_NANOS);
            this.mode = TransferMode.valueOf(mode.toUpperCase(Locale.ROOT));
            this.capacity = DemoRun.capacity(options);
            this.decoderBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
            this.producer = startProducer();
            this.decoder = startDecoder();
            producer.awaitReady();
            decoder.awaitReady();
        }

        ProcessHost startProducer()
        {
            List<SideChannelAddress> addresses = DemoRun.freeLoopbackAddresses(1);
            producerBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
            return ProcessHost.start(new HostSpec(HostSpec.PREFILL, options, capacity, List.of(0), addresses, SECRET));
        }

        ProcessHost startDecoder()
        {
            return ProcessHost.start(new HostSpec(HostSpec.DECODE, options, capacity, List.of(0), List.of(), SECRET));
        }

        /** Starts a streamed prefill and hands its parameters, ready at once, to the decoder. */
        void start(int request)
        {
            producer.prefill(request, TOKENS, producerBlocks.allocate(PROMPT_BLOCKS));
            TransferParams params = producer.params(request);
            // streamed: handed over before the prefill finished
            assertEquals(TransferParams.UNKNOWN_TIME, params.finishedNanos(), params.toString());
            decoderIds = decoderBlocks.allocate(PROMPT_BLOCKS);
            decoder.receive(request, params, mode, TOKENS, decoderIds);
        }

        /** Moves one streamed request end to end and checks it arrived whole. */
        void transfer(int request) throws InterruptedException
        {
            start(request);
            await(() -> poll() && decoderEvents.checked.contains(request + " parity=0") && producerEvents.freed.contains("req-" + request + " COMPLETED"),
                    "request " + request + " to arrive (decoder: " + decoderEvents.checked + ", producer: " + producerEvents.freed + ")");
        }

        /**
         * Waits until the decoder loaded some of the request's layers but not all: mid-stream.
         *
         * @return the layers loaded then.
         */
        boolean[] awaitMidStream(int request) throws InterruptedException
        {
            boolean[][] seen = new boolean[1][];
            await(() -> {
                boolean[] loaded = decoder.layersLoaded(request);
                assertNotNull(loaded, "request " + request + " ended before it was seen mid-stream: " + decoderEvents.checked);
                seen[0] = loaded;
                return count(loaded) >= 2;
            }, "the decoder to load some layers of request " + request);
            assertTrue(count(seen[0]) < LAYERS, "request " + request + " loaded whole before it was seen mid-stream");
            return seen[0];
        }

        boolean poll()
        {
            if (producer.process().isAlive()) {
                producer.poll(producerEvents);
            }
            if (decoder.process().isAlive()) {
                decoder.poll(decoderEvents);
            }
            return true;
        }

        @Override
        public void close()
        {
            for (ProcessHost host : List.of(decoder, producer)) {
                if (host.process().isAlive()) {
                    signal(host, "CONT");
                }
                host.close();
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("killedCases")
    void aKilledDecoderAndAKilledProducerMidStream(String backend, String mode) throws Exception
    {
        assumeTransport(backend);
        try (Peers peers = new Peers(backend, mode)) {
            peers.transfer(0);

            // the decoder killed mid-stream: the producer frees the blocks at its lease, once, and serves a new decoder
            peers.start(1);
            peers.awaitMidStream(1);
            ProcessHost killedDecoder = peers.decoder;
            long killed = kill(killedDecoder);
            long freedAfter = waitFor(() -> peers.producerEvents.freed.contains("req-1 EXPIRED"), peers, "the producer to free request 1") - killed;
            System.out.println("killed decoder, streamed " + mode + " over " + backend + ": the producer freed the request after " + freedAfter + " ms");
            assertTrue(freedAfter <= LEASE_MILLIS + SLACK_MILLIS, "freed " + freedAfter + " ms after the kill; the lease is " + LEASE_MILLIS + " ms");
            peers.decoder = peers.startDecoder();
            killedDecoder.close();
            peers.decoder.awaitReady();
            peers.transfer(2);
            awaitIdle(peers.producer);
            assertEquals(List.of("req-0 COMPLETED", "req-1 EXPIRED", "req-2 COMPLETED"), peers.producerEvents.freed);
            assertEquals(0L, ((Number) peers.producer.audit().get("prefillsCutShort")).longValue(), "the killed decoder's prefill ran to its end");

            // the producer killed mid-stream: the decoder fails the request in time, with its blocks, and never reports it received
            peers.start(3);
            boolean[] before = peers.awaitMidStream(3);
            ProcessHost killedProducer = peers.producer;
            killed = kill(killedProducer);
            boolean[] after = peers.decoder.layersLoaded(3);
            long failedAfter = waitFor(() -> peers.decoderEvents.checked.stream().anyMatch(line -> line.startsWith("3 ")), peers,
                    "the decoder to give up request 3") - killed;
            System.out.println("killed producer, streamed " + mode + " over " + backend + ": the decoder failed the request after " + failedAfter + " ms: "
                    + peers.decoderEvents.failures);
            assertTrue(failedAfter <= REGISTRATION_MILLIS + SLACK_MILLIS,
                    "failed " + failedAfter + " ms after the kill; the registration deadline is " + REGISTRATION_MILLIS + " ms");
            assertTrue(peers.decoderEvents.checked.getLast().matches("3 parity=0 failed=KVB/\\w+"), peers.decoderEvents.checked.toString());
            assertFalse(peers.decoderEvents.decodeReady.contains(3), "a failed request was reported received");
            // every block of every group is missing the layers never moved, from the first block on
            assertTrue(peers.decoderEvents.failures.getLast().endsWith("[invalid blocks per group " + blocksPerGroup(peers.decoderIds) + "; first invalid block 0]"),
                    peers.decoderEvents.failures.toString());
            // a layer not loaded when the producer died was never moved: it stays unloaded (false after the failure too)
            assertFalse(before[LAYERS - 1], "the last layer loaded before all-done: " + Arrays.toString(before));
            if (after != null) {
                for (int layer = 0; layer < LAYERS; layer++) {
                    assertTrue(!after[layer] || before[layer], "layer " + layer + " loaded after its producer died: " + Arrays.toString(after));
                }
            }
            // blocks a late reader or writer may reach come back only on proof, before the request is checked
            assertEquals(peers.decoderEvents.quarantined, peers.decoderEvents.released, "quarantined and released differ");

            // a new producer process: the decoder serves its streamed request, every byte checked, and holds nothing
            peers.producer = peers.startProducer();
            killedProducer.close();
            peers.producer.awaitReady();
            peers.transfer(4);
            awaitIdle(peers.decoder);
            // request 1 died with its decoder; 3 was reported once, failed
            List<String> checked = peers.decoderEvents.checked;
            assertEquals(List.of("0 parity=0", "2 parity=0", "4 parity=0"), List.of(checked.get(0), checked.get(1), checked.get(3)), checked.toString());
            assertEquals(4, checked.size(), checked.toString());
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("stoppedCases")
    void aStoppedDecoderAndAStoppedProducerMidStream(String backend, String mode) throws Exception
    {
        assumeTransport(backend);
        try (Peers peers = new Peers(backend, mode)) {
            peers.transfer(0);

            // the decoder stopped mid-stream: the producer frees the blocks at its lease; the decoder reports its side once it continues
            peers.start(1);
            peers.awaitMidStream(1);
            long stopped = signal(peers.decoder, "STOP");
            long freedAfter = waitFor(peers.producer, peers.producerEvents, () -> peers.producerEvents.freed.contains("req-1 EXPIRED"),
                    "the producer to free request 1") - stopped;
            System.out.println("stopped decoder, streamed " + mode + " over " + backend + ": the producer freed the request after " + freedAfter + " ms");
            assertTrue(freedAfter <= LEASE_MILLIS + SLACK_MILLIS, "freed " + freedAfter + " ms after the stop; the lease is " + LEASE_MILLIS + " ms");
            signal(peers.decoder, "CONT");
            await(() -> peers.poll() && peers.decoderEvents.checked.size() == 2, "the continued decoder to report request 1");
            // a write or READ that landed whole before the producer gave up may complete the request; either way no byte is wrong
            assertTrue(peers.decoderEvents.checked.get(1).startsWith("1 parity=0"), peers.decoderEvents.checked.toString());
            peers.transfer(2);

            // the producer stopped mid-stream: the decoder gives up at its registration deadline; the producer reports once it continues
            peers.start(3);
            peers.awaitMidStream(3);
            stopped = signal(peers.producer, "STOP");
            long failedAfter = waitFor(peers.decoder, peers.decoderEvents, () -> peers.decoderEvents.checked.size() == 4, "the decoder to give up request 3")
                    - stopped;
            System.out.println("stopped producer, streamed " + mode + " over " + backend + ": the decoder failed the request after " + failedAfter + " ms: "
                    + peers.decoderEvents.failures.getLast());
            assertTrue(failedAfter <= REGISTRATION_MILLIS + SLACK_MILLIS,
                    "failed " + failedAfter + " ms after the stop; the registration deadline is " + REGISTRATION_MILLIS + " ms");
            assertTrue(peers.decoderEvents.checked.get(3).matches("3 parity=0 failed=KVB/\\w+"), peers.decoderEvents.checked.toString());
            assertFalse(peers.decoderEvents.decodeReady.contains(3), "a failed request was reported received");
            signal(peers.producer, "CONT");
            // its lease ran out while it was stopped: the continued producer frees the request, and its prefill thread drops the rest of it
            await(() -> peers.poll() && peers.producerEvents.freed.size() == 4, "the continued producer to report request 3");
            assertEquals("req-3 EXPIRED", peers.producerEvents.freed.get(3));
            System.out.println("the continued producer dropped " + peers.producer.audit().get("prefillsCutShort") + " prefill whose request had ended");
            peers.transfer(4);

            // nothing is reported twice, even a while later; both sides hold nothing
            Thread.sleep(500);
            peers.poll();
            assertEquals(List.of("req-0 COMPLETED", "req-1 EXPIRED", "req-2 COMPLETED", "req-3 EXPIRED", "req-4 COMPLETED"), peers.producerEvents.freed);
            assertEquals(5, peers.decoderEvents.checked.size(), peers.decoderEvents.checked.toString());
            assertEquals(List.of(0, 1, 2, 3, 4), peers.decoderEvents.checked.stream().map(line -> Integer.parseInt(line.split(" ")[0])).toList());
            awaitIdle(peers.producer);
            awaitIdle(peers.decoder);
        }
    }

    private static void assumeTransport(String backend)
    {
        if (backend.equals("ucx")) {
            Ucx.assumeAvailable();
        }
    }

    /** Every block of the request in each of the model's groups, as {@link EngineHost}'s failure line counts them. */
    private static String blocksPerGroup(int[][] ids)
    {
        return String.join(",", Arrays.stream(ids).map(group -> Integer.toString(group.length)).toList());
    }

    private static int count(boolean[] flags)
    {
        int count = 0;
        for (boolean flag : flags) {
            count += flag ? 1 : 0;
        }
        return count;
    }

    private static void awaitIdle(ProcessHost host) throws InterruptedException
    {
        await(() -> (boolean) host.audit().get("idleOk"), host.label() + " to hold nothing: " + host.audit());
    }

    /** Kills a host's process and waits for it to die; {@return when it was killed, in milliseconds of the nano clock} */
    private static long kill(ProcessHost host) throws InterruptedException
    {
        long killed = signal(host, "KILL");
        assertTrue(host.process().waitFor(10, TimeUnit.SECONDS), host.label() + " did not die");
        return killed;
    }

    /** Waits for a report, polling whichever side is alive; {@return when it came, in milliseconds of the nano clock} */
    private static long waitFor(BooleanSupplier reported, Peers peers, String what) throws InterruptedException
    {
        await(() -> peers.poll() && reported.getAsBoolean(), what);
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime());
    }

    /** Waits for the survivor's report, polling only it (the other is stopped); {@return when it came} */
    private static long waitFor(ProcessHost survivor, RecordingEvents events, BooleanSupplier reported, String what) throws InterruptedException
    {
        await(() -> {
            survivor.poll(events);
            return reported.getAsBoolean();
        }, what);
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime());
    }

    /** {@return when the signal was sent, in milliseconds of the nano clock} */
    private static long signal(ProcessHost host, String signal)
    {
        try {
            long sent = TimeUnit.NANOSECONDS.toMillis(System.nanoTime());
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(host.process().pid())).inheritIO().start();
            assertTrue(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0, "kill -" + signal + " " + host.label() + " failed");
            return sent;
        }
        catch (java.io.IOException e) {
            throw new AssertionError("cannot run kill: " + e.getMessage(), e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while signalling " + host.label());
        }
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5);
        }
    }
}
