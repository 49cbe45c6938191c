package io.kvbridge.examples.cli;

import io.kvbridge.api.KvBridge;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendResources;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferStatus;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvbridge demo}: a producer and a consumer engine in one JVM. The producer's KV cache (one
 * host allocation per layer) holds bytes derived from (layer, block, offset); requests WRITE random
 * producer blocks of every layer into blocks the consumer allocated for them, with a completion
 * notification; the consumer then checks every byte it received and that no other byte changed.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, description = "Move KV blocks between two engines and verify every byte.")
final class DemoCommand implements Callable<Integer>
{
    @Spec
    private CommandSpec spec;

    @Option(names = "--backend", defaultValue = "local", description = "Transport (default: ${DEFAULT-VALUE}).")
    private String backend;

    @Option(names = "--requests", defaultValue = "64", description = "Requests to move (default: ${DEFAULT-VALUE}).")
    private int requests;

    @Option(names = "--concurrency", defaultValue = "8", description = "Requests in flight (default: ${DEFAULT-VALUE}).")
    private int concurrency;

    @Option(names = "--layers", defaultValue = "8", description = "Layers of the synthetic model (default: ${DEFAULT-VALUE}).")
    private int layers;

    @Option(names = "--blocks", defaultValue = "1024", description = "Blocks per layer on each engine (default: ${DEFAULT-VALUE}).")
    private int blocks;

    @Option(names = "--block-bytes", defaultValue = "16384", description = "Bytes per block and layer (default: ${DEFAULT-VALUE}).")
    private int blockBytes;

    @Option(names = "--seed", defaultValue = "42", description = "Random seed (default: ${DEFAULT-VALUE}).")
    private long seed;

    @Option(names = "--json", description = "Print the audit as one JSON object.")
    private boolean json;

    private record Request(String id, int[] producerBlocks, int[] consumerBlocks)
    {
    }

    @Override
    public Integer call()
    {
        validate();
        long started = System.nanoTime();
        String suffix = Long.toString(ProcessHandle.current().pid());
        Map<String, Object> audit = new LinkedHashMap<>();
        try (Arena arena = Arena.ofShared();
                KvBridge producerEngine = KvBridge.builder().transport(backend).agentName("demo-producer-" + suffix).build();
                KvBridge consumerEngine = KvBridge.builder().transport(backend).agentName("demo-consumer-" + suffix).build()) {
            TransferBackend producer = producerEngine.transport();
            TransferBackend consumer = consumerEngine.transport();
            MemorySegment[] producerCache = allocateCache(arena, producer, 1);
            MemorySegment[] consumerCache = allocateCache(arena, consumer, 2);
            Peer consumerPeer = producer.connect(consumer.localMetadata());
            PreparedList local = producer.prepareLocal(blocksOf(producerCache));
            PreparedList remote = producer.prepareRemote(consumerPeer, blocksOf(consumerCache));

            Request[] plan = planRequests();
            long bytes = 0;
            long descriptors = 0;
            int failed = 0;
            Map<String, Integer> notified = new HashMap<>();
            ArrayDeque<long[]> inFlight = new ArrayDeque<>();
            long transferStart = System.nanoTime();
            for (int next = 0; next < plan.length || !inFlight.isEmpty(); ) {
                while (next < plan.length && inFlight.size() < concurrency) {
                    Request request = plan[next];
                    int pairs = request.producerBlocks().length * layers;
                    int[] localIndices = new int[pairs];
                    int[] remoteIndices = new int[pairs];
                    // region-major descriptor ids: region r's blocks start at r * blocks
                    for (int layer = 0, i = 0; layer < layers; layer++) {
                        for (int b = 0; b < request.producerBlocks().length; b++, i++) {
                            localIndices[i] = layer * blocks + request.producerBlocks()[b];
                            remoteIndices[i] = layer * blocks + request.consumerBlocks()[b];
                        }
                    }
                    long handle = producer.post(TransferOp.WRITE, local, localIndices, remote, remoteIndices, pairs,
                            (request.id() + ":1").getBytes(StandardCharsets.US_ASCII));
                    inFlight.add(new long[] {handle, next});
                    descriptors += pairs;
                    bytes += (long) pairs * blockBytes;
                    next++;
                }
                long[] oldest = inFlight.peek();
                TransferStatus status = producer.status(oldest[0]);
                if (status.terminal()) {
                    inFlight.poll();
                    if (status == TransferStatus.FAILED) {
                        failed++;
                    }
                    producer.release(oldest[0]);
                }
                consumer.drainNotifications((sender, message) -> notified.merge(new String(message, StandardCharsets.US_ASCII), 1, Integer::sum));
            }
            long transferNanos = System.nanoTime() - transferStart;
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (notified.size() < plan.length && System.nanoTime() < deadline) {
                consumer.drainNotifications((sender, message) -> notified.merge(new String(message, StandardCharsets.US_ASCII), 1, Integer::sum));
                Thread.onSpinWait();
            }
            long parityErrors = verify(plan, consumerCache);
            long missingNotifications = plan.length - notified.values().stream().filter(count -> count == 1).count();
            producer.releasePrepared(local);
            producer.releasePrepared(remote);
            BackendResources idle = producer.resources();

            audit.put("backend", producer.name());
            audit.put("requestsCompleted", plan.length - failed);
            audit.put("transfers", plan.length);
            audit.put("bytes", bytes);
            audit.put("descriptors", descriptors);
            audit.put("transferSeconds", transferNanos / 1e9);
            audit.put("throughputGBps", bytes / (transferNanos / 1e9) / 1e9);
            audit.put("failedTransfers", failed);
            audit.put("missingNotifications", missingNotifications);
            audit.put("parityErrors", parityErrors);
            audit.put("layers", layers);
            audit.put("blocksPerLayer", blocks);
            audit.put("blockBytes", blockBytes);
            audit.put("idleHandles", idle.transfers());
            audit.put("idlePreparedLists", idle.preparedLists());
            audit.put("ok", failed == 0 && parityErrors == 0 && missingNotifications == 0 && idle.transfers() == 0 && idle.preparedLists() == 0);
        }
        audit.put("wallSeconds", (System.nanoTime() - started) / 1e9);
        print(audit);
        return Boolean.TRUE.equals(audit.get("ok")) ? 0 : 1;
    }

    private void validate()
    {
        check(requests > 0, "--requests=" + requests + " must be positive");
        check(concurrency > 0, "--concurrency=" + concurrency + " must be positive");
        check(layers > 0 && layers <= 1024, "--layers=" + layers + " must be in [1, 1024]");
        check(blockBytes >= 8 && blockBytes % 8 == 0, "--block-bytes=" + blockBytes + " must be a positive multiple of 8");
        check(blocks >= 16 * requests, "--blocks=" + blocks + " is too few for --requests=" + requests
                + " (each request takes up to 16 consumer blocks that are never reused, so the check can see every stray byte): use --blocks " + 16 * requests);
        check((long) layers * blocks * blockBytes <= (4L << 30), "the cache would exceed 4 GiB per engine: lower --layers, --blocks or --block-bytes");
    }

    private void check(boolean condition, String message)
    {
        if (!condition) {
            throw new ParameterException(spec.commandLine(), message);
        }
    }

    private MemorySegment[] allocateCache(Arena arena, TransferBackend engine, int side)
    {
        MemorySegment[] cache = new MemorySegment[layers];
        for (int layer = 0; layer < layers; layer++) {
            cache[layer] = arena.allocate((long) blocks * blockBytes, 4096);
            for (long offset = 0; offset < cache[layer].byteSize(); offset += 8) {
                cache[layer].set(ValueLayout.JAVA_LONG, offset, pattern(side, layer, offset));
            }
            engine.register(Allocation.host(cache[layer]));
        }
        return cache;
    }

    private DescriptorList blocksOf(MemorySegment[] cache)
    {
        DescriptorList.Builder list = DescriptorList.builder(MemoryKind.HOST, 0, layers * blocks);
        for (MemorySegment layer : cache) {
            for (int b = 0; b < blocks; b++) {
                list.add(layer.address() + (long) b * blockBytes, blockBytes);
            }
        }
        return list.build();
    }

    private Request[] planRequests()
    {
        SplittableRandom random = new SplittableRandom(seed);
        Request[] plan = new Request[requests];
        int nextConsumerBlock = 0;
        for (int r = 0; r < requests; r++) {
            int count = 1 + random.nextInt(16);
            int[] producerBlocks = random.ints(0, blocks).distinct().limit(count).toArray();
            int[] consumerBlocks = new int[count];
            for (int b = 0; b < count; b++) {
                consumerBlocks[b] = nextConsumerBlock++;
            }
            plan[r] = new Request("req-" + r, producerBlocks, consumerBlocks);
        }
        return plan;
    }

    /** Counts 8-byte words that differ from what the consumer should hold. */
    private long verify(Request[] plan, MemorySegment[] consumerCache)
    {
        int[] sourceOf = new int[blocks];
        java.util.Arrays.fill(sourceOf, -1);
        for (Request request : plan) {
            for (int b = 0; b < request.consumerBlocks().length; b++) {
                sourceOf[request.consumerBlocks()[b]] = request.producerBlocks()[b];
            }
        }
        long errors = 0;
        for (int layer = 0; layer < layers; layer++) {
            for (int block = 0; block < blocks; block++) {
                for (long word = 0; word < blockBytes; word += 8) {
                    long offset = (long) block * blockBytes + word;
                    long expected = sourceOf[block] < 0
                            ? pattern(2, layer, offset)
                            : pattern(1, layer, (long) sourceOf[block] * blockBytes + word);
                    if (consumerCache[layer].get(ValueLayout.JAVA_LONG, offset) != expected) {
                        errors++;
                    }
                }
            }
        }
        return errors;
    }

    private static long pattern(int side, int layer, long offset)
    {
        long x = ((long) side << 56) ^ ((long) layer << 40) ^ offset;
        x *= 0x9E3779B97F4A7C15L;
        return x ^ (x >>> 32);
    }

    private void print(Map<String, Object> audit)
    {
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(Json.write(audit));
            return;
        }
        out.println("kvbridge demo: producer -> consumer over '" + audit.get("backend") + "'");
        out.printf(Locale.ROOT, "  requests completed      %d of %d%n", audit.get("requestsCompleted"), requests);
        out.printf(Locale.ROOT, "  transfers / bytes       %d / %,d%n", audit.get("transfers"), audit.get("bytes"));
        out.printf(Locale.ROOT, "  descriptors             %,d (%d layers x %d blocks x %d bytes cache per engine)%n",
                audit.get("descriptors"), layers, blocks, blockBytes);
        out.printf(Locale.ROOT, "  throughput              %.2f GB/s over %.3f s%n", audit.get("throughputGBps"), audit.get("transferSeconds"));
        out.printf(Locale.ROOT, "  failed transfers        %d%n", audit.get("failedTransfers"));
        out.printf(Locale.ROOT, "  missing notifications   %d%n", audit.get("missingNotifications"));
        out.printf(Locale.ROOT, "  parity errors           %d (every byte of every layer checked)%n", audit.get("parityErrors"));
        out.printf(Locale.ROOT, "  idle: handles %d, prepared lists %d%n", audit.get("idleHandles"), audit.get("idlePreparedLists"));
        out.println(Boolean.TRUE.equals(audit.get("ok")) ? "  result                  OK" : "  result                  FAILED");
    }
}
