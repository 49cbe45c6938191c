package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.core.tools.AuthenticatedPeerClient;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.NativeFakes;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A flood against every socket a producer and a decoder engine listen on, at once: each engine in
 * a worker JVM of its own, every listening socket of both processes found in the kernel's tables
 * ({@code /proc/PID/fd} against {@code /proc/net/tcp} and {@code /proc/net/unix}), and
 * {@value #CONNECTIONS_PER_ENGINE} connections per engine spread over its sockets by
 * {@link FloodAttackers} (child JVMs, each within the limit on open files this JVM has, so the flood
 * needs no raised limit) from eight loopback source addresses, the legitimate peers' among them: two
 * thirds silent, a third that send a burst of garbage (something that looks like the start of a
 * frame, or of a hello) and then stay idle. Over {@code tcp} that is both side channels and data
 * ports, and a peer that proves the transport's connection key floods the producer with
 * notifications it cannot seal; over {@code cuda-ipc} (kvbridge's fake driver) the side channels and
 * both engines' control sockets, abstract Unix sockets. Meanwhile, and while the flood is held,
 * requests alternate push and pull between the engines: every one arrives with no wrong byte and is
 * freed as completed, both engines stay healthy, the engines close flood connections on every socket
 * (refusals the attackers count), hold fewer than {@value #MAX_FLOOD_DESCRIPTORS} descriptors each for
 * the flood at any time, hold nothing afterwards, and their used heap after a full GC, while the flood
 * is held and after it, exceeds what it was before by less than {@value #MAX_HEAP_GROWTH_MIB} MiB.
 *
 * <p>It plays its peer through exported API only: {@link AuthenticatedPeerClient} fetches the
 * producer's transport metadata and derives the connection key, as an engine holding the secret does.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
final class EngineFloodTest
{
    private static final int CONNECTIONS_PER_ENGINE = 20_000;
    private static final int SOURCES = 8;
    private static final long LEASE_MILLIS = 20_000;
    private static final int PROMPT_BLOCKS = 16;
    private static final int TOKENS = PROMPT_BLOCKS * DemoModel.BLOCK_TOKENS;
    // requests moved while the flood is held open, after those moved while it was being opened
    private static final int HELD_REQUESTS = 20;
    private static final int MIN_REQUESTS_DURING_OPENING = 5;
    private static final long MAX_HEAP_GROWTH_MIB = 48;
    // per engine, above what it held before the flood: its side channel's pending and served bounds (256 + 64), the tcp
    // transport's (256 + 1,024) or cuda-ipc's (64 + 1,024), and room for sockets already shed whose descriptor NIO closes on
    // its selector's next pass
    private static final int MAX_FLOOD_DESCRIPTORS = 256 + 64 + 256 + 1_024 + 400;
    // a verified peer's unsealed notifications while the connection flood lasts; sent through the transport's API, one
    // round trip to its owner thread each (some 2,000 a second on two busy cores), so the engine drains them faster than
    // they come: the inbox's bound under a faster flood is TcpAuthenticationTest's
    private static final int MIN_NOTIFICATIONS = 5_000;
    private static final int NOTIFICATION_BYTES = 256;
    private static final byte[] SECRET = "engine-flood-test-secret-0123456789abcd".getBytes(StandardCharsets.US_ASCII);
    private static final String CUDA_FAKE_PROPERTY = "kvbridge.cuda-ipc.test.fake";

    @Test
    void everyRequestCompletesWhileEveryListeningSocketOfBothTcpEnginesIsFlooded() throws Exception
    {
        flood(new DemoOptions("tcp", "mixed", "hma", 1, 1, 1, 1, 2, 1, TOKENS, 1, 0, true, LEASE_MILLIS), Map.of(), true);
    }

    @Test
    void everyRequestCompletesWhileTheSideChannelsAndCudaIpcControlSocketsAreFlooded() throws Exception
    {
        String fake = NativeFakes.require(CUDA_FAKE_PROPERTY).toString();
        // both caches in the fake's device memory, which the transport allocates and shares between the processes
        DemoOptions options = new DemoOptions("cuda-ipc", "mixed", "hma", 1, 1, 1, 1, 2, 1, TOKENS, 1, 0, true, LEASE_MILLIS, DemoOptions.CacheShape.DEFAULT,
                DemoOptions.CacheShape.DEFAULT, 0, "", false, Map.of());
        // the driver is bound once per process, from the property the workers' JVMs read at start
        flood(options, Map.of("JAVA_TOOL_OPTIONS", "-Dkvbridge.cuda-ipc.library=" + fake + " -Dkvbridge.cuda-ipc.allow-fake=true"), false);
    }

    private static void flood(DemoOptions options, Map<String, String> environment, boolean notificationFlood) throws Exception
    {
        int capacity = DemoRun.capacity(options);
        List<SideChannelAddress> addresses = DemoRun.freeLoopbackAddresses(1);
        BlockPool producerBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        BlockPool decoderBlocks = new BlockPool(DemoModel.of("hma"), capacity, DemoModel.BLOCK_TOKENS);
        // one set of blocks for every request: each ends before the next takes them
        int[][] producerIds = producerBlocks.allocate(PROMPT_BLOCKS);
        int[][] decoderIds = decoderBlocks.allocate(PROMPT_BLOCKS);
        try (ProcessHost producer = ProcessHost.start(new HostSpec(HostSpec.PREFILL, options, capacity, List.of(0), addresses, SECRET), environment);
                ProcessHost decoder = ProcessHost.start(new HostSpec(HostSpec.DECODE, options, capacity, List.of(0), List.of(), SECRET), environment)) {
            producer.awaitReady();
            decoder.awaitReady();
            Requests requests = new Requests(producer, decoder, producerIds, decoderIds);
            // the first requests open the transport's listeners and connections and warm both JVMs up
            for (int i = 0; i < 4; i++) {
                requests.next();
            }
            requests.awaitIdle();
            long heapBefore = usedHeapAfterGc(producer) + usedHeapAfterGc(decoder);

            List<String> targets = new ArrayList<>();
            List<String> owners = new ArrayList<>();
            List<Integer> counts = new ArrayList<>();
            for (ProcessHost host : List.of(producer, decoder)) {
                List<String> sockets = listening(host.process().pid());
                if (options.backend().equals("cuda-ipc")) {
                    assertTrue(sockets.stream().anyMatch(socket -> socket.startsWith("unix:")), host.label() + " has no control socket among " + sockets);
                }
                for (int s = 0; s < sockets.size(); s++) {
                    targets.add(sockets.get(s));
                    owners.add(host.label());
                    // the engine's connections spread evenly over its sockets
                    counts.add(CONNECTIONS_PER_ENGINE / sockets.size() + (s < CONNECTIONS_PER_ENGINE % sockets.size() ? 1 : 0));
                }
            }
            // the producer's side channel and data port or control socket, the decoder's data port or control socket (and its side channel, if it has one)
            assertTrue(targets.contains("tcp:" + addresses.getFirst().port()), "the producer's side channel is not among " + targets);
            assertTrue(targets.size() >= 3, "expected a side channel and two transport sockets among " + targets);

            Descriptors descriptors = new Descriptors(MAX_FLOOD_DESCRIPTORS, producer, decoder);
            System.out.println("engine flood: open descriptors before the flood: " + descriptors);
            long started = System.nanoTime();
            int during;
            long floodMillis;
            InetSocketAddress producerSideChannel = new InetSocketAddress("127.0.0.1", addresses.getFirst().port());
            try (NotifyFlood notifications = notificationFlood ? new NotifyFlood(producerSideChannel) : null;
                    FloodAttackers flood = new FloodAttackers(targets, counts.stream().mapToInt(Integer::intValue).toArray(), SOURCES)) {
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
                flood.census();
                String perSocket = flood.report(owners);
                int connections = CONNECTIONS_PER_ENGINE * 2;
                System.out.printf(Locale.ROOT, "engine flood: %d connections (%s) over %d sockets in %d ms (%s); %d requests while it opened, %d while held%n",
                        connections, options.backend(), targets.size(), floodMillis, perSocket, during, HELD_REQUESTS);
                // each engine holds what its admission bounds allow, not one descriptor per flood connection
                System.out.println("engine flood: open descriptors, most seen while the flood opened and was held: " + descriptors);
                descriptors.assertBelow();
                if (notifications != null) {
                    long notified = notifications.sent();
                    System.out.printf(Locale.ROOT, "engine flood: %d unsealed notifications sent to the producer meanwhile (%s)%n", notified,
                            notifications.stopReason());
                    assertTrue(notified >= MIN_NOTIFICATIONS, "the notification flood sent only " + notified + ": " + notifications.stopReason());
                }
                assertTrue(flood.connected() > connections * 9L / 10, "most flood connections should connect: " + perSocket);
                for (int t = 0; t < targets.size(); t++) {
                    assertTrue(flood.connectedTo(t) > 0, "no flood connection reached " + owners.get(t) + " " + targets.get(t) + ": " + perSocket);
                    // a socket's thousands of connections are far beyond its admission bounds: the engine closes most
                    assertTrue(flood.refusedBy(t) > 0, owners.get(t) + " " + targets.get(t) + " closed none of the flood's connections: " + perSocket);
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

    /** The most descriptors each engine process held at once, sampled between requests, and what it held before. */
    private static final class Descriptors
    {
        private final List<ProcessHost> hosts;
        private final long bound;
        private final long[] before;
        private final long[] most;
        // per host, what its descriptors were when it first went over the bound: which sockets, by local port
        private final String[] over;

        Descriptors(long bound, ProcessHost... hosts) throws IOException
        {
            this.hosts = List.of(hosts);
            this.bound = bound;
            this.before = new long[hosts.length];
            this.most = new long[hosts.length];
            this.over = new String[hosts.length];
            sample();
            System.arraycopy(most, 0, before, 0, most.length);
        }

        void sample() throws IOException
        {
            for (int h = 0; h < most.length; h++) {
                long pid = hosts.get(h).process().pid();
                try (var open = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
                    most[h] = Math.max(most[h], open.count());
                }
                if (over[h] == null && most[h] - before[h] >= bound) {
                    over[h] = breakdown(pid);
                }
            }
        }

        /** Fails where an engine held {@code bound} or more descriptors beyond those it held before the flood, naming what they were. */
        void assertBelow()
        {
            for (int h = 0; h < most.length; h++) {
                assertTrue(most[h] - before[h] < bound, hosts.get(h).label() + " held " + most[h] + " descriptors at once under the flood, "
                        + before[h] + " before it; bound " + bound + " more; when it went over: " + over[h]);
            }
        }

        /** {@return the process's descriptors by kind: TCP sockets by local port, Unix sockets, the rest} */
        private static String breakdown(long pid) throws IOException
        {
            Set<String> sockets = new HashSet<>();
            long others = 0;
            try (var descriptors = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
                for (Path descriptor : descriptors.toList()) {
                    try {
                        String link = Files.readSymbolicLink(descriptor).toString();
                        if (link.startsWith("socket:[")) {
                            sockets.add(link.substring("socket:[".length(), link.length() - 1));
                        }
                        else {
                            others++;
                        }
                    }
                    catch (IOException e) {
                        // closed meanwhile
                    }
                }
            }
            java.util.TreeMap<String, Integer> byPort = new java.util.TreeMap<>();
            int tcp = 0;
            for (String table : List.of("tcp", "tcp6")) {
                Path path = Path.of("/proc", Long.toString(pid), "net", table);
                List<String> lines = Files.exists(path) ? Files.readAllLines(path) : List.of("");
                for (String line : lines.subList(1, lines.size())) {
                    String[] fields = line.trim().split("\\s+");
                    if (sockets.contains(fields[9])) {
                        tcp++;
                        String key = "port " + Integer.parseInt(fields[1].substring(fields[1].indexOf(':') + 1), 16) + " state " + fields[3];
                        byPort.merge(key, 1, Integer::sum);
                    }
                }
            }
            return "TCP sockets " + byPort + ", other sockets " + (sockets.size() - tcp) + ", other descriptors " + others;
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
            AuthenticatedPeerClient peer = new AuthenticatedPeerClient(SECRET, Duration.ofSeconds(10));
            AuthenticatedPeerClient.PublishedTransport published = peer.transport(producerSideChannel, 0, 0);
            assertEquals("tcp", published.transport(), "the producer's transport");
            TransferBackendFactory tcp = ServiceLoader.load(TransferBackendFactory.class).stream().map(ServiceLoader.Provider::get)
                    .filter(factory -> factory.name().equals("tcp")).findFirst().orElseThrow(() -> new AssertionError("no tcp transport on the class path"));
            byte[] key = peer.connectionKey("tcp");
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
            Peer producer = flooder.connect(published.metadata());
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

    /**
     * {@return every socket the process listens on, from its descriptors and the kernel's socket
     * tables: {@code tcp:PORT} for TCP on loopback, {@code unix:NAME} for an abstract Unix socket}
     */
    private static List<String> listening(long pid) throws IOException
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
        List<String> sockets = new ArrayList<>();
        for (String table : List.of("tcp", "tcp6")) {
            Path path = Path.of("/proc", Long.toString(pid), "net", table);
            if (!Files.exists(path)) {
                continue;
            }
            List<String> lines = Files.readAllLines(path);
            for (String line : lines.subList(1, lines.size())) {
                String[] fields = line.trim().split("\\s+");
                // local_address, state 0A (LISTEN), inode
                if (fields[3].equals("0A") && inodes.contains(fields[9])) {
                    int port = Integer.parseInt(fields[1].substring(fields[1].indexOf(':') + 1), 16);
                    boolean loopback = fields[1].startsWith("0100007F") || table.equals("tcp6") || fields[1].startsWith("00000000");
                    assertTrue(loopback, "pid " + pid + " listens on " + fields[1] + ", beyond loopback");
                    sockets.add("tcp:" + port);
                }
            }
        }
        List<String> unix = Files.readAllLines(Path.of("/proc", Long.toString(pid), "net", "unix"));
        for (String line : unix.subList(1, unix.size())) {
            // Num RefCount Protocol Flags Type St Inode Path; flags 00010000: listening; a path from '@' is abstract
            String[] fields = line.trim().split("\\s+");
            if (fields.length == 8 && fields[3].equals("00010000") && inodes.contains(fields[6])) {
                // the JVM's attach listener, which jcmd opened, is the JVM's, not the engine's
                if (ATTACH_LISTENER.matcher(fields[7]).matches()) {
                    continue;
                }
                assertTrue(fields[7].startsWith("@"), "pid " + pid + " listens on the Unix socket " + fields[7] + ", which is not abstract");
                sockets.add("unix:" + fields[7].substring(1));
            }
        }
        return sockets;
    }

    private static final Pattern ATTACH_LISTENER = Pattern.compile(".*/\\.java_pid\\d+(\\.tmp)?");
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
