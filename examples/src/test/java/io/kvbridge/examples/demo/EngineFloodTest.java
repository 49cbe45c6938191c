package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.wire.ConnectionKeys;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A flood against every socket a producer and a decoder engine listen on, at once: each engine in
 * a worker JVM of its own over the {@code tcp} transport, every listening socket of both processes
 * found in the kernel's tables ({@code /proc/PID/fd} against {@code /proc/net/tcp}), and up to
 * {@value #CONNECTIONS} connections spread over all of them from {@value #THREADS} threads and
 * eight loopback source addresses, the legitimate peers' among them: two thirds silent, a third
 * that send a burst of garbage (something that looks like the start of a frame) and then stay idle;
 * and a peer that proves the transport's connection key floods the producer with notifications it
 * cannot seal. Meanwhile, and while the flood is held, requests alternate push and pull between the
 * engines: every one arrives with no wrong byte and is freed as completed, both engines stay
 * healthy, hold fewer than {@value #MAX_FLOOD_DESCRIPTORS} descriptors each for the flood at any time, hold
 * nothing afterwards, and their used heap after a full GC, while the flood is held and after it,
 * exceeds what it was before by less than {@value #MAX_HEAP_GROWTH_MIB} MiB.
 *
 * <p>The flood runs in this JVM, whose descriptors bound it: it uses what the hard limit on open
 * files leaves ({@code /proc/self/limits}, the JVM raises its soft limit to it), less a margin for
 * the test's own files, and prints the number it used and why.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
final class EngineFloodTest
{
    private static final int CONNECTIONS = 20_000;
    private static final int THREADS = 4;
    private static final int SOURCES = 8;
    // descriptors this JVM keeps for everything but the flood: its jars, the workers' pipes, jcmd
    private static final int DESCRIPTOR_MARGIN = 400;
    private static final int CONNECT_TIMEOUT_MILLIS = 3_000;
    private static final long LEASE_MILLIS = 20_000;
    private static final int PROMPT_BLOCKS = 16;
    private static final int TOKENS = PROMPT_BLOCKS * DemoModel.BLOCK_TOKENS;
    // requests moved while the flood is held open, after those moved while it was being opened
    private static final int HELD_REQUESTS = 20;
    private static final int MIN_REQUESTS_DURING_OPENING = 5;
    private static final long MAX_HEAP_GROWTH_MIB = 48;
    // per engine, above what it held before the flood: its side channel's pending and served bounds (256 + 64), the tcp
    // transport's (256 + 1,024), and room for sockets already shed whose descriptor NIO closes on its selector's next pass
    private static final int MAX_FLOOD_DESCRIPTORS = 256 + 64 + 256 + 1_024 + 400;
    // a verified peer's unsealed notifications while the connection flood lasts; sent through the transport's API, one
    // round trip to its owner thread each (some 2,000 a second on two busy cores), so the engine drains them faster than
    // they come: the inbox's bound under a faster flood is TcpAuthenticationTest's
    private static final int MIN_NOTIFICATIONS = 5_000;
    private static final int NOTIFICATION_BYTES = 256;
    private static final byte[] SECRET = "engine-flood-test-secret-0123456789abcd".getBytes(StandardCharsets.US_ASCII);
    // a frame's start: a length, a magic-like word and a type, then nothing more
    private static final byte[] GARBAGE = {0, 0, 0, 64, 'K', 'V', 'B', 'T', 1, 7, 0, 0};

    @Test
    void everyRequestCompletesWhileEveryListeningSocketOfBothEnginesIsFlooded() throws Exception
    {
        DemoOptions options = new DemoOptions("tcp", "mixed", "hma", 1, 1, 1, 1, 2, 1, TOKENS, 1, 0, true, LEASE_MILLIS);
        int capacity = DemoRun.capacity(options);
        List<SideChannelAddress> addresses = DemoRun.freeLoopbackAddresses(1);
        BlockPool producerBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        BlockPool decoderBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        // one set of blocks for every request: each ends before the next takes them
        int[][] producerIds = producerBlocks.allocate(PROMPT_BLOCKS);
        int[][] decoderIds = decoderBlocks.allocate(PROMPT_BLOCKS);
        try (ProcessHost producer = ProcessHost.start(new HostSpec(HostSpec.PREFILL, options, capacity, List.of(0), addresses, SECRET));
                ProcessHost decoder = ProcessHost.start(new HostSpec(HostSpec.DECODE, options, capacity, List.of(0), List.of(), SECRET))) {
            producer.awaitReady();
            decoder.awaitReady();
            Requests requests = new Requests(producer, decoder, producerIds, decoderIds);
            // the first requests open the transport's listeners and connections and warm both JVMs up
            for (int i = 0; i < 4; i++) {
                requests.next();
            }
            requests.awaitIdle();
            long heapBefore = usedHeapAfterGc(producer) + usedHeapAfterGc(decoder);

            List<InetSocketAddress> targets = new ArrayList<>();
            Map<InetSocketAddress, String> owners = new LinkedHashMap<>();
            for (ProcessHost host : List.of(producer, decoder)) {
                for (InetSocketAddress socket : listening(host.process().pid())) {
                    targets.add(socket);
                    owners.put(socket, host.label());
                }
            }
            // the producer's side channel and data port, the decoder's data port (and its side channel, if it has one)
            assertTrue(targets.contains(new InetSocketAddress("127.0.0.1", addresses.getFirst().port())), "the producer's side channel is not among " + owners);
            assertTrue(targets.size() >= 3, "expected a side channel and two data ports among " + owners);

            int connections = floodSize();
            Descriptors descriptors = new Descriptors(producer, decoder);
            System.out.println("engine flood: open descriptors before the flood: " + descriptors);
            long started = System.nanoTime();
            int during;
            long floodMillis;
            InetSocketAddress producerSideChannel = new InetSocketAddress("127.0.0.1", addresses.getFirst().port());
            try (NotifyFlood notifications = new NotifyFlood(producerSideChannel);
                    EngineFlood flood = new EngineFlood(targets, connections)) {
                // requests keep moving while the flood is being opened
                while (!flood.opened() || requests.completed() < MIN_REQUESTS_DURING_OPENING) {
                    requests.next();
                    descriptors.sample();
                }
                during = requests.completed();
                floodMillis = (System.nanoTime() - started) / 1_000_000;
                for (int i = 0; i < HELD_REQUESTS; i++) {
                    requests.next();
                    descriptors.sample();
                }
                // what the engines hold for the flood while it is held, as well as what it left behind
                long heapHeld = usedHeapAfterGc(producer) + usedHeapAfterGc(decoder);
                System.out.printf(Locale.ROOT, "engine flood: used heap of both engines after a full GC %d KiB before the flood, %d KiB while it is held%n",
                        heapBefore >> 10, heapHeld >> 10);
                assertTrue(heapHeld - heapBefore < MAX_HEAP_GROWTH_MIB << 20,
                        "the held flood grew the engines' used heap from " + heapBefore + " to " + heapHeld + " bytes");
                long notified = notifications.sent();
                String perSocket = flood.report(targets, owners);
                System.out.printf(Locale.ROOT, "engine flood: %d connections over %d sockets in %d ms (%s); %d requests while it opened, %d while held;"
                        + " %d unsealed notifications sent to the producer meanwhile (%s)%n", connections, targets.size(), floodMillis, perSocket, during,
                        HELD_REQUESTS, notified, notifications.stopReason());
                // each engine holds what its admission bounds allow, not one descriptor per flood connection
                System.out.println("engine flood: open descriptors, most seen while the flood opened and was held: " + descriptors);
                descriptors.assertBelow(MAX_FLOOD_DESCRIPTORS);
                assertTrue(notified >= MIN_NOTIFICATIONS, "the notification flood sent only " + notified + ": " + notifications.stopReason());
                assertTrue(flood.connected() > connections * 9L / 10, "most flood connections should connect: " + perSocket);
                for (int t = 0; t < targets.size(); t++) {
                    assertTrue(flood.connectedTo(t) > 0, "no flood connection reached " + owners.get(targets.get(t)) + " " + targets.get(t) + ": " + perSocket);
                }
                // both engines still serve and report nothing wrong while the flood is held
                for (ProcessHost host : List.of(producer, decoder)) {
                    assertEquals(List.of(), host.audit().get("health"), host.label() + " unhealthy under the flood");
                }
            }
            requests.awaitIdle();
            long heapAfter = usedHeapAfterGc(producer) + usedHeapAfterGc(decoder);
            long totalMillis = (System.nanoTime() - started) / 1_000_000;
            System.out.printf(Locale.ROOT, "engine flood: %d requests, all whole; used heap of both engines after a full GC %d KiB before, %d KiB after; %d ms in all%n",
                    requests.completed(), heapBefore >> 10, heapAfter >> 10, totalMillis);
            assertTrue(heapAfter - heapBefore < MAX_HEAP_GROWTH_MIB << 20,
                    "the flood grew the engines' used heap from " + heapBefore + " to " + heapAfter + " bytes");
            for (ProcessHost host : List.of(producer, decoder)) {
                Map<String, Object> audit = host.audit();
                assertEquals(0, ((Number) audit.get("failedTransfers")).longValue(), host.label() + ": " + audit);
                assertEquals(0, ((Number) audit.get("expiredLeases")).longValue(), host.label() + ": " + audit);
                assertTrue(host.process().isAlive(), host.label() + " died");
            }
        }
    }

    /** Moves requests one after another, alternating push and pull, each checked whole. */
    private static final class Requests
    {
        private final ProcessHost producer;
        private final ProcessHost decoder;
        private final int[][] producerIds;
        private final int[][] decoderIds;
        private final RecordingEvents producerEvents = new RecordingEvents();
        private final RecordingEvents decoderEvents = new RecordingEvents();
        private int next;

        Requests(ProcessHost producer, ProcessHost decoder, int[][] producerIds, int[][] decoderIds)
        {
            this.producer = producer;
            this.decoder = decoder;
            this.producerIds = producerIds;
            this.decoderIds = decoderIds;
        }

        void next() throws InterruptedException
        {
            int request = next++;
            producer.prefill(request, TOKENS, producerIds);
            TransferMode mode = request % 2 == 0 ? TransferMode.PUSH : TransferMode.PULL;
            decoder.receive(request, producer.params(request), mode, TOKENS, decoderIds);
            await(() -> poll() && decoderEvents.checked.size() == request + 1 && producerEvents.freed.size() == request + 1,
                    () -> "request " + request + " (" + mode + ") to end (decoder: " + decoderEvents.checked + ", producer: " + producerEvents.freed + ")");
            assertEquals(request + " parity=0", decoderEvents.checked.get(request), "request " + request + " (" + mode + ")");
            assertEquals("req-" + request + " COMPLETED", producerEvents.freed.get(request), "request " + request + " (" + mode + ")");
        }

        int completed()
        {
            return next;
        }

        private boolean poll()
        {
            producer.poll(producerEvents);
            decoder.poll(decoderEvents);
            return true;
        }

        void awaitIdle() throws InterruptedException
        {
            for (ProcessHost host : List.of(producer, decoder)) {
                await(() -> (boolean) host.audit().get("idleOk"), () -> host.label() + " to hold nothing: " + host.audit());
            }
        }
    }

    /**
     * Connections opened from {@link #THREADS} threads, the i-th to {@code targets[i % n]} from
     * {@code 127.0.0.(1 + i % 8)}; every third sends {@link #GARBAGE} and goes quiet. All are held
     * until {@link #close}, which resets them.
     */
    private static final class EngineFlood implements AutoCloseable
    {
        private final List<InetSocketAddress> targets;
        private final int connections;
        private final List<Thread> threads = new ArrayList<>();
        private final List<List<Socket>> held = new ArrayList<>();
        private final AtomicLongArray connected;
        private final AtomicLongArray failed;
        private final AtomicLongArray garbageRefused;
        private volatile boolean stopped;

        EngineFlood(List<InetSocketAddress> targets, int connections)
        {
            this.targets = List.copyOf(targets);
            this.connections = connections;
            this.connected = new AtomicLongArray(targets.size());
            this.failed = new AtomicLongArray(targets.size());
            this.garbageRefused = new AtomicLongArray(targets.size());
            for (int t = 0; t < THREADS; t++) {
                List<Socket> own = new ArrayList<>();
                held.add(own);
                int thread = t;
                threads.add(Thread.ofPlatform().daemon().name("engine-flood-" + t).start(() -> open(thread, own)));
            }
        }

        private void open(int thread, List<Socket> own)
        {
            for (int i = thread; i < connections && !stopped; i += THREADS) {
                int target = i % targets.size();
                Socket socket = new Socket();
                own.add(socket);
                try {
                    socket.setSoLinger(true, 0);
                    socket.bind(new InetSocketAddress("127.0.0." + (1 + i % SOURCES), 0));
                    socket.connect(targets.get(target), CONNECT_TIMEOUT_MILLIS);
                    connected.incrementAndGet(target);
                    if (i % 3 == 2) {
                        try {
                            socket.getOutputStream().write(GARBAGE);
                        }
                        catch (IOException e) {
                            // the engine already shed it: what admission is for
                            garbageRefused.incrementAndGet(target);
                        }
                    }
                }
                catch (IOException e) {
                    failed.incrementAndGet(target);
                }
            }
        }

        boolean opened()
        {
            return threads.stream().noneMatch(Thread::isAlive);
        }

        long connected()
        {
            long sum = 0;
            for (int t = 0; t < targets.size(); t++) {
                sum += connected.get(t);
            }
            return sum;
        }

        long connectedTo(int target)
        {
            return connected.get(target);
        }

        String report(List<InetSocketAddress> targets, Map<InetSocketAddress, String> owners)
        {
            List<String> lines = new ArrayList<>();
            for (int t = 0; t < targets.size(); t++) {
                lines.add(String.format(Locale.ROOT, "%s port %d: %d connected, %d failed, %d shed before their garbage", owners.get(targets.get(t)),
                        targets.get(t).getPort(), connected.get(t), failed.get(t), garbageRefused.get(t)));
            }
            return String.join("; ", lines);
        }

        @Override
        public void close() throws InterruptedException
        {
            stopped = true;
            for (Thread thread : threads) {
                thread.join(TimeUnit.SECONDS.toMillis(60));
            }
            for (List<Socket> own : held) {
                for (Socket socket : own) {
                    try {
                        socket.close();
                    }
                    catch (IOException e) {
                        // a reset of a socket the engine closed already: nothing to check
                    }
                }
            }
        }
    }

    /** The most descriptors each engine process held at once, sampled between requests, and what it held before. */
    private static final class Descriptors
    {
        private final List<ProcessHost> hosts;
        private final long[] before;
        private final long[] most;

        Descriptors(ProcessHost... hosts) throws IOException
        {
            this.hosts = List.of(hosts);
            this.before = new long[hosts.length];
            this.most = new long[hosts.length];
            sample();
            System.arraycopy(most, 0, before, 0, most.length);
        }

        void sample() throws IOException
        {
            for (int h = 0; h < most.length; h++) {
                try (var open = Files.list(Path.of("/proc", Long.toString(hosts.get(h).process().pid()), "fd"))) {
                    most[h] = Math.max(most[h], open.count());
                }
            }
        }

        /** Fails where an engine held {@code bound} or more descriptors beyond those it held before the flood. */
        void assertBelow(long bound)
        {
            for (int h = 0; h < most.length; h++) {
                assertTrue(most[h] - before[h] < bound, hosts.get(h).label() + " held " + most[h] + " descriptors at once under the flood, "
                        + before[h] + " before it; bound " + bound + " more");
            }
        }

        @Override
        public String toString()
        {
            List<String> parts = new ArrayList<>();
            for (int h = 0; h < most.length; h++) {
                parts.add(hosts.get(h).label() + " " + most[h]);
            }
            return String.join(", ", parts);
        }
    }

    /**
     * A peer that knows the shared secret, and so proves the {@code tcp} transport's connection key,
     * but not the session the engine seals its notifications under: it connects to the producer's
     * data port with the metadata its side channel serves and sends unsealed notifications as fast
     * as the transport takes them, until closed.
     */
    private static final class NotifyFlood implements AutoCloseable
    {
        private final TransferBackend flooder;
        private final Thread thread;
        private final java.util.concurrent.atomic.AtomicLong sent = new java.util.concurrent.atomic.AtomicLong();
        private volatile boolean stopped;
        private volatile String stopReason = "stopped by the test";

        NotifyFlood(InetSocketAddress producerSideChannel)
        {
            SideChannelSettings settings = SideChannelSettings.builder().secret(SECRET).build();
            byte[] payload = new SideChannelClient(settings, SideChannelClock.system()).fetch(producerSideChannel, List.of(new RankKey(0, 0))).getFirst()
                    .payload();
            RankMetadata rank = MetadataCodec.decode(HandshakePayload.decode(payload, settings.limits()).metadata(), settings.limits());
            TransferBackendFactory tcp = ServiceLoader.load(TransferBackendFactory.class).stream().map(ServiceLoader.Provider::get)
                    .filter(factory -> factory.name().equals("tcp")).findFirst().orElseThrow(() -> new AssertionError("no tcp transport on the class path"));
            byte[] key = ConnectionKeys.derive(SECRET, "tcp").orElseThrow();
            flooder = tcp.create(Map.of("host", "127.0.0.1"), new BackendContext()
            {
                @Override
                public String agentName()
                {
                    return "notify-flooder";
                }

                @Override
                public Optional<byte[]> connectionKey()
                {
                    return Optional.of(key.clone());
                }
            });
            Peer producer = flooder.connect(rank.transportMetadata());
            byte[] message = new byte[NOTIFICATION_BYTES];
            thread = Thread.ofPlatform().daemon().name("notify-flood").start(() -> {
                try {
                    while (!stopped) {
                        message[0] = (byte) sent.get();
                        flooder.notify(producer, message);
                        sent.incrementAndGet();
                    }
                }
                catch (RuntimeException e) {
                    stopReason = e.getMessage();
                }
            });
        }

        long sent()
        {
            return sent.get();
        }

        String stopReason()
        {
            return thread.isAlive() ? "still sending" : stopReason;
        }

        @Override
        public void close() throws InterruptedException
        {
            stopped = true;
            thread.join(TimeUnit.SECONDS.toMillis(30));
            flooder.close();
        }
    }

    /** {@return the flood's size: {@link #CONNECTIONS}, or what this JVM's hard limit on open files leaves} */
    private static int floodSize() throws IOException
    {
        long hard = Long.MAX_VALUE;
        for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
            if (line.startsWith("Max open files")) {
                String value = line.substring("Max open files".length()).trim().split("\\s+")[1];
                hard = value.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(value);
            }
        }
        long open;
        try (var descriptors = Files.list(Path.of("/proc/self/fd"))) {
            open = descriptors.count();
        }
        int size = (int) Math.min(CONNECTIONS, hard - open - DESCRIPTOR_MARGIN);
        if (size < CONNECTIONS) {
            System.out.printf(Locale.ROOT, "engine flood: %d connections, not %d: this JVM's hard limit on open files is %d, %d are open, %d kept for the test%n",
                    size, CONNECTIONS, hard, open, DESCRIPTOR_MARGIN);
        }
        return size;
    }

    /** {@return every TCP socket the process listens on, from its descriptors and the kernel's socket tables} */
    private static List<InetSocketAddress> listening(long pid) throws IOException
    {
        Set<String> inodes = new HashSet<>();
        try (var descriptors = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path descriptor : descriptors.toList()) {
                try {
                    String link = Files.readSymbolicLink(descriptor).toString();
                    if (link.startsWith("socket:[")) {
                        inodes.add(link.substring("socket:[".length(), link.length() - 1));
                    }
                }
                catch (IOException e) {
                    // closed meanwhile
                }
            }
        }
        List<InetSocketAddress> sockets = new ArrayList<>();
        for (String table : List.of("tcp", "tcp6")) {
            Path path = Path.of("/proc", Long.toString(pid), "net", table);
            if (!Files.exists(path)) {
                continue;
            }
            for (String line : Files.readAllLines(path).subList(1, Files.readAllLines(path).size())) {
                String[] fields = line.trim().split("\\s+");
                // local_address, state 0A (LISTEN), inode
                if (fields[3].equals("0A") && inodes.contains(fields[9])) {
                    int port = Integer.parseInt(fields[1].substring(fields[1].indexOf(':') + 1), 16);
                    String host = fields[1].startsWith("0100007F") || table.equals("tcp6") || fields[1].startsWith("00000000") ? "127.0.0.1" : null;
                    assertTrue(host != null, "pid " + pid + " listens on " + fields[1] + ", beyond loopback");
                    sockets.add(new InetSocketAddress(host, port));
                }
            }
        }
        return sockets;
    }

    private static final Pattern HEAP_USED = Pattern.compile("used (\\d+)K");

    /** {@return the worker's used heap right after a full GC, which {@code jcmd} asks for} */
    private static long usedHeapAfterGc(ProcessHost host) throws IOException, InterruptedException
    {
        String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
        String pid = Long.toString(host.process().pid());
        run(jcmd, pid, "GC.run");
        Matcher used = HEAP_USED.matcher(run(jcmd, pid, "GC.heap_info"));
        assertTrue(used.find(), "jcmd GC.heap_info of " + host.label() + " shows no used heap");
        return Long.parseLong(used.group(1)) << 10;
    }

    private static String run(String... command) throws IOException, InterruptedException
    {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(30, TimeUnit.SECONDS) && process.exitValue() == 0, String.join(" ", command) + " failed: " + output);
        return output;
    }

    private static void await(BooleanSupplier condition, java.util.function.Supplier<String> what) throws InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what.get());
            }
            Thread.sleep(2);
        }
    }
}
