package io.kvbridge.benchmarks;

import io.kvbridge.backend.ucx.UcxBackendFactory;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * UCX put/get bandwidth between two JVMs, shaped like the C baseline {@code ucp_probe.c} so both
 * can run with the same parameters, interleaved: the initiator (this process) moves
 * {@code total} bytes per batch in {@code block}-byte operations that walk a {@code span}-byte
 * registered region, as one transfer (one put or get per block, one flush), then waits for the
 * target's acknowledgement of the batch's notification. Five timed batches follow the warm-up: at
 * least three batches, continued up to 200,000 operations or 2 s so the issue loop runs compiled
 * (the C probe warms up with one batch; it has nothing to compile). The blocks are walked with
 * neighbours swapped so that the transport cannot coalesce them: one operation per block on both sides.
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar io.kvbridge.benchmarks.UcxTwoProcessStream \
 *       put|get BLOCK TOTAL SPAN sm|tcp ucx|own
 * </pre>
 * {@code ucx} memory comes from {@code allocate()} (UCX shared memory, like {@code PROBE_ALLOC=1});
 * {@code own} memory is an arena segment registered with {@code register()}.
 * The reported GB/s is total / (post to DONE), averaged over the timed batches; DONE also covers the
 * notification's send, which the C probe times separately (microseconds). The environment variable
 * {@code KVBRIDGE_STREAM_OPTIONS} ({@code key=value,...}) adds transport options on both sides, e.g.
 * {@code stagger-allocations=false}; UCX would warn about a variable named {@code UCX_*} it does not know.
 *
 * <p>{@code KVBRIDGE_STREAM_WAIT=woken} has both sides ask the transport to wake them
 * ({@code wakeOnProgress}) instead of polling on timers: the initiator parks from its post until
 * the transfer ends, the target until a notification arrives. By default timed batches sleep half
 * the fastest warm-up batch, then poll every 1/256 of it.
 */
public final class UcxTwoProcessStream
{
    private static final int REPS = 5;
    private static final int MIN_WARMUP_BATCHES = 3;
    private static final long WARMUP_OPERATIONS = 200_000;
    private static final long WARMUP_NANOS = 2_000_000_000L;
    // callers poll gently: on two cores a spinning or often woken caller takes the CPU the owner
    // threads need (over tcp, callers waking every 100 to 200 us cost a fifth of the bandwidth).
    // Warm-up batches poll every 1/256 of the fastest batch so far (within 50 us and 2 ms); timed
    // batches first sleep half the fastest warm-up batch, so polling adds under 0.5 % to a batch.
    // The target's answer is not timed, so it polls every 2 ms.
    private static final long POLL_SHARE_OF_FASTEST = 256;
    // refilled for every post of the one posting thread: posting allocates nothing
    private static final TransferRequest REQUEST = new TransferRequest();
    private static final long MIN_POLL_NANOS = 50_000;
    private static final long MAX_POLL_NANOS = 2_000_000;
    private static final long TARGET_POLL_NANOS = 2_000_000;
    // how long a woken caller parks at most: only a lost wake-up would make it matter
    private static final long WOKEN_PARK_NANOS = 10_000_000;
    private static final boolean WAKE = "woken".equals(System.getenv("KVBRIDGE_STREAM_WAIT"));
    // whether the transport wakes this process's caller (only when asked to)
    private static boolean woken;

    // post to DONE of the fastest warm-up batch, 0 before the first
    private static long fastestWarmupNanos;
    // how long a timed batch sleeps after its post before it polls; 0 during the warm-up
    private static long sleepNanos;
    // timed batches already DONE when their caller first looked: the sleep may have hidden time
    private static int overslept;

    private UcxTwoProcessStream()
    {
    }

    public static void main(String[] args) throws Exception
    {
        if (args.length == 4 && args[0].equals("target")) {
            target(args[1], args[2], Long.parseLong(args[3]));
            return;
        }
        if (args.length != 6) {
            System.err.println("usage: UcxTwoProcessStream put|get BLOCK TOTAL SPAN sm|tcp ucx|own");
            System.exit(2);
        }
        boolean get = args[0].equals("get");
        long block = Long.parseLong(args[1]);
        long total = Long.parseLong(args[2]);
        long span = Math.max(block, Long.parseLong(args[3]));
        initiator(get, block, total, span, args[4], args[5]);
    }

    private static TransferBackend open(String tls, String role)
    {
        Map<String, String> config = new HashMap<>();
        config.put("tls", tls);
        if (tls.equals("tcp")) {
            config.put("net-devices", "lo");
            // measured on loopback only: the ucx transport opens UCX's tcp transport only when told to
            config.put("allow-unchecked-tcp-lane", "true");
        }
        // further transport options for experiments, e.g. KVBRIDGE_STREAM_OPTIONS=idle-spin-us=100000,keepalive-interval-ms=0
        String extra = System.getenv("KVBRIDGE_STREAM_OPTIONS");
        if (extra != null && !extra.isBlank()) {
            for (String option : extra.split(",")) {
                String[] keyValue = option.split("=", 2);
                config.put(keyValue[0].trim(), keyValue.length > 1 ? keyValue[1].trim() : "");
            }
        }
        return new UcxBackendFactory().create(config, () -> role);
    }

    private static MemorySegment memory(TransferBackend backend, String mode, long bytes, Arena arena)
    {
        if (mode.equals("ucx")) {
            Allocation allocation = backend.allocate(bytes, MemoryKind.HOST, 0);
            return MemorySegment.ofAddress(allocation.address()).reinterpret(bytes);
        }
        MemorySegment segment = arena.allocate(bytes, 4096);
        backend.register(Allocation.host(segment));
        return segment;
    }

    private static DescriptorList blocks(long address, long span, long block)
    {
        int count = (int) (span / block);
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, count);
        for (int i = 0; i < count; i++) {
            builder.add(address + i * block, block);
        }
        return builder.build();
    }

    private static void initiator(boolean get, long block, long total, long span, String tls, String mode) throws Exception
    {
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), UcxTwoProcessStream.class.getName(), "target", tls, mode, Long.toString(span));
        Process child = new ProcessBuilder(new ArrayList<>(command)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (Arena arena = Arena.ofShared(); TransferBackend backend = open(tls, "initiator")) {
            PrintStream toTarget = new PrintStream(child.getOutputStream(), true, StandardCharsets.UTF_8);
            BufferedReader fromTarget = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            MemorySegment memory = memory(backend, mode, span, arena);
            memory.fill((byte) 0xab);
            woken = WAKE && backend.wakeOnProgress(Thread.currentThread());
            toTarget.println(Base64.getEncoder().encodeToString(backend.localMetadata()));
            Peer peer = backend.connect(Base64.getDecoder().decode(line(fromTarget)));
            long targetAddress = Long.parseLong(line(fromTarget));
            PreparedList local = backend.prepareLocal(blocks(memory.address(), span, block));
            PreparedList remote = backend.prepareRemote(peer, blocks(targetAddress, span, block));
            int operations = (int) (total / block);
            int spanBlocks = (int) (span / block);
            int[] indices = new int[operations];
            for (int i = 0; i < operations; i++) {
                // neighbours swapped (1, 0, 3, 2, ...): no two consecutive pairs are contiguous, so the
                // transport issues one operation per block, as the C probe does, over the same walk
                int swapped = (i % spanBlocks) ^ 1;
                indices[i] = swapped < spanBlocks ? swapped : i % spanBlocks;
            }
            byte[] notification = "batch".getBytes(StandardCharsets.UTF_8);
            double sum = 0;
            double bestBatch = Double.MAX_VALUE;
            double bestRoundTrip = Double.MAX_VALUE;
            long warmupStarted = System.nanoTime();
            int warmups = 0;
            while (warmups < MIN_WARMUP_BATCHES
                    || ((long) warmups * operations < WARMUP_OPERATIONS && System.nanoTime() - warmupStarted < WARMUP_NANOS)) {
                batch(backend, get, local, indices, remote, operations, notification);
                warmups++;
            }
            sleepNanos = woken ? 0 : fastestWarmupNanos / 2;
            for (int r = 0; r < REPS; r++) {
                long[] times = batch(backend, get, local, indices, remote, operations, notification);
                sum += total / ((times[1] - times[0]) / 1e9) / 1e9;
                bestBatch = Math.min(bestBatch, (times[2] - times[0]) / 1e6);
                bestRoundTrip = Math.min(bestRoundTrip, (times[2] - times[1]) / 1e3);
            }
            if (!get && memory.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) != (byte) 0xab) {
                System.out.println("unexpected local data");
            }
            System.out.printf(Locale.ROOT, "java %s block=%d total=%d span=%d tls=%s memory=%s wait=%s : avg %.2f GB/s (post to DONE), best batch incl. notif+ack %.3f ms, ack after DONE %.1f us%s%n",
                    get ? "get" : "put", block, total, span, tls, mode, woken ? "woken" : "poll", sum / REPS, bestBatch, bestRoundTrip,
                    overslept == 0 ? "" : ", " + overslept + " batches were DONE before the first poll (too slow a figure)");
            toTarget.println("EXIT");
        }
        if (child.waitFor() != 0) {
            throw new IllegalStateException("target exited with " + child.exitValue());
        }
    }

    /** Runs one batch; returns the post, DONE and acknowledgement times. */
    private static long[] batch(TransferBackend backend, boolean get, PreparedList local, int[] indices, PreparedList remote, int operations,
            byte[] notification)
    {
        long t0 = System.nanoTime();
        long handle = backend.post(REQUEST.start(get ? TransferOp.READ : TransferOp.WRITE).local(local, indices).remote(remote, indices)
                .count(operations).notification(notification));
        long wakeAt = t0 + sleepNanos;
        for (long now = t0; now < wakeAt; now = System.nanoTime()) {
            LockSupport.parkNanos(wakeAt - now);
        }
        long pollNanos = Math.clamp(fastestWarmupNanos / POLL_SHARE_OF_FASTEST, MIN_POLL_NANOS, MAX_POLL_NANOS);
        boolean doneAtFirstLook = true;
        TransferStatus status;
        while (!(status = backend.status(handle)).terminal()) {
            doneAtFirstLook = false;
            LockSupport.parkNanos(woken ? WOKEN_PARK_NANOS : pollNanos);
        }
        long t1 = System.nanoTime();
        if (sleepNanos == 0) {
            fastestWarmupNanos = fastestWarmupNanos == 0 ? t1 - t0 : Math.min(fastestWarmupNanos, t1 - t0);
        }
        else if (doneAtFirstLook) {
            overslept++;
        }
        if (status != TransferStatus.DONE) {
            throw new IllegalStateException("batch failed: " + backend.failure(handle).map(Throwable::getMessage).orElse("?"));
        }
        backend.release(handle);
        int[] acks = new int[1];
        while (acks[0] == 0) {
            backend.drainNotifications((sender, message) -> acks[0]++);
            if (acks[0] == 0) {
                LockSupport.parkNanos(woken ? WOKEN_PARK_NANOS : MIN_POLL_NANOS);
            }
        }
        return new long[] {t0, t1, System.nanoTime()};
    }

    private static void target(String tls, String mode, long span) throws Exception
    {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Arena arena = Arena.ofShared(); TransferBackend backend = open(tls, "target")) {
            MemorySegment memory = memory(backend, mode, span, arena);
            memory.fill((byte) 0);
            boolean targetWoken = WAKE && backend.wakeOnProgress(Thread.currentThread());
            Peer peer = backend.connect(Base64.getDecoder().decode(line(in)));
            out.println(Base64.getEncoder().encodeToString(backend.localMetadata()));
            out.println(memory.address());
            AtomicBoolean exit = new AtomicBoolean();
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    in.readLine();
                }
                catch (java.io.IOException e) {
                    // a closed pipe ends the run as well
                }
                exit.set(true);
            });
            byte[] ack = "ack".getBytes(StandardCharsets.UTF_8);
            while (!exit.get()) {
                if (backend.drainNotifications((sender, message) -> backend.notify(peer, ack)) == 0) {
                    LockSupport.parkNanos(targetWoken ? WOKEN_PARK_NANOS : TARGET_POLL_NANOS);
                }
            }
        }
    }

    private static String line(BufferedReader reader) throws java.io.IOException
    {
        String line = reader.readLine();
        if (line == null) {
            throw new IllegalStateException("the other process ended early");
        }
        return line;
    }
}
