package io.kvbridge.backend.cudaipc;

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
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;

/**
 * The child JVM of the two-process tests: one cuda-ipc instance with a device allocation (VMM or
 * legacy, as asked) and a shared host allocation, filled through its own copies. It prints
 * {@code META <hex>} and {@code ADDR <device> <host>}, connects to the parent on {@code PEER <hex>},
 * reports every notification ({@code NOTIFIED <sender> <text>}), and on {@code CHECK <device|host>
 * <seed> <first> <count> <sourceFirst> [<sourceStep>]} copies its memory back to host and prints
 * {@code CHECKED <wrong words>}: block {@code first + b} must hold source block
 * {@code sourceFirst + b * sourceStep} (step 1 unless given). {@code GRANT <key>} grants every block
 * of both allocations, for reading and writing, under that key ({@code GRANTED}), {@code REVOKE}
 * revokes those grants and prints {@code REVOKED 1} when the host memory changed within 2 s after
 * (else 0); {@code HEALTH}
 * prints {@code HEALTH ok} or the instance's problem; {@code EXHAUST} opens {@code /dev/null} until
 * the process runs out of descriptors ({@code EXHAUSTED <n>}) and {@code RELEASE} closes them again.
 */
public final class CudaIpcPeerProcess
{
    static final int BLOCKS = 64;
    static final int BLOCK_BYTES = 16 * 1024;
    static final long BYTES = (long) BLOCKS * BLOCK_BYTES;

    private CudaIpcPeerProcess()
    {
    }

    static long pattern(int seed, long offset)
    {
        long x = seed * 0x9E3779B97F4A7C15L + offset;
        x ^= x >>> 31;
        x *= 0xBF58476D1CE4E5B9L;
        return x ^ (x >>> 29);
    }

    static DescriptorList blocks(MemoryKind kind, long base, int first, int count)
    {
        long[] addresses = new long[count];
        long[] lengths = new long[count];
        for (int i = 0; i < count; i++) {
            addresses[i] = base + (long) (first + i) * BLOCK_BYTES;
            lengths[i] = BLOCK_BYTES;
        }
        return DescriptorList.wrap(kind, 0, addresses, lengths, count);
    }

    static int[] range(int first, int count)
    {
        int[] indices = new int[count];
        for (int i = 0; i < count; i++) {
            indices[i] = first + i;
        }
        return indices;
    }

    /** Copies between two of an instance's own allocations through a peer on itself and waits. */
    static void selfCopy(TransferBackend backend, Peer self, MemoryKind fromKind, long from, MemoryKind toKind, long to)
    {
        PreparedList local = backend.prepareLocal(blocks(toKind, to, 0, BLOCKS));
        PreparedList remote = backend.prepareRemote(self, blocks(fromKind, from, 0, BLOCKS));
        long handle = backend.post(new TransferRequest().start(TransferOp.READ).local(local, range(0, BLOCKS)).remote(remote, range(0, BLOCKS))
                .count(BLOCKS));
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (backend.status(handle) == TransferStatus.IN_PROGRESS && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        if (backend.status(handle) != TransferStatus.DONE) {
            throw new IllegalStateException("self copy ended " + backend.status(handle) + ": " + backend.failure(handle));
        }
        backend.release(handle);
        backend.releasePrepared(local);
        backend.releasePrepared(remote);
    }

    public static void main(String[] args) throws Exception
    {
        String mode = args[0];
        TransferBackend backend = new CudaIpcBackendFactory(true).create(Map.of("allocation", mode), () -> "child-" + ProcessHandle.current().pid());
        Allocation device = backend.allocate(BYTES, MemoryKind.DEVICE, 0);
        Allocation host = backend.allocate(BYTES, MemoryKind.HOST, 0);
        Allocation scratch = backend.allocate(BYTES, MemoryKind.HOST, 0);
        MemorySegment hostMemory = MemorySegment.ofAddress(host.address()).reinterpret(BYTES);
        MemorySegment scratchMemory = MemorySegment.ofAddress(scratch.address()).reinterpret(BYTES);
        for (long o = 0; o < BYTES; o += 8) {
            scratchMemory.set(ValueLayout.JAVA_LONG, o, pattern(2, o));
            hostMemory.set(ValueLayout.JAVA_LONG, o, pattern(3, o));
        }
        Peer self = backend.connect(backend.localMetadata());
        selfCopy(backend, self, MemoryKind.HOST, scratch.address(), MemoryKind.DEVICE, device.address());
        System.out.println("META " + HexFormat.of().formatHex(backend.localMetadata()));
        System.out.println("ADDR " + device.address() + " " + host.address());
        System.out.flush();
        Thread.ofPlatform().daemon().start(() -> {
            while (true) {
                backend.drainNotifications((sender, message) -> {
                    System.out.println("NOTIFIED " + sender + " " + new String(message, StandardCharsets.UTF_8));
                    System.out.flush();
                });
                try {
                    Thread.sleep(5);
                }
                catch (InterruptedException e) {
                    return;
                }
            }
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        java.util.List<java.io.FileInputStream> exhausting = new java.util.ArrayList<>();
        java.util.List<Long> grants = new java.util.ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ");
            switch (words[0]) {
                case "GRANT" -> {
                    byte[] key = words[1].getBytes(StandardCharsets.UTF_8);
                    for (var list : new PreparedList[] {backend.prepareLocal(blocks(MemoryKind.DEVICE, device.address(), 0, BLOCKS)),
                            backend.prepareLocal(blocks(MemoryKind.HOST, host.address(), 0, BLOCKS))}) {
                        grants.add(backend.grant(key, TransferOp.READ, list, range(0, BLOCKS), BLOCKS));
                        grants.add(backend.grant(key, TransferOp.WRITE, list, range(0, BLOCKS), BLOCKS));
                        backend.releasePrepared(list);
                    }
                    System.out.println("GRANTED");
                }
                case "REVOKE" -> {
                    for (long grant : grants) {
                        backend.revoke(grant);
                    }
                    grants.clear();
                    // once revoke returned, no peer's copy may change the memory any more
                    byte[] atRevoke = hostMemory.toArray(ValueLayout.JAVA_BYTE);
                    Thread.sleep(2000);
                    long changed = MemorySegment.mismatch(hostMemory, 0, BYTES, MemorySegment.ofArray(atRevoke), 0, BYTES) < 0 ? 0 : 1;
                    System.out.println("REVOKED " + changed);
                }
                case "HEALTH" -> System.out.println("HEALTH " + backend.problem().orElse("ok"));
                case "EXHAUST" -> {
                    while (true) {
                        try {
                            exhausting.add(new java.io.FileInputStream("/dev/null"));
                        }
                        catch (java.io.IOException e) {
                            break;
                        }
                    }
                    System.out.println("EXHAUSTED " + exhausting.size());
                }
                case "RELEASE" -> {
                    for (java.io.FileInputStream stream : exhausting) {
                        stream.close();
                    }
                    exhausting.clear();
                    System.out.println("RELEASED");
                }
                case "PEER" -> {
                    backend.connect(HexFormat.of().parseHex(words[1]));
                    System.out.println("CONNECTED");
                }
                case "CHECK" -> {
                    boolean onDevice = words[1].equals("device");
                    int seed = Integer.parseInt(words[2]);
                    int first = Integer.parseInt(words[3]);
                    int count = Integer.parseInt(words[4]);
                    int sourceFirst = Integer.parseInt(words[5]);
                    int sourceStep = words.length > 6 ? Integer.parseInt(words[6]) : 1;
                    MemorySegment view = hostMemory;
                    if (onDevice) {
                        selfCopy(backend, self, MemoryKind.DEVICE, device.address(), MemoryKind.HOST, scratch.address());
                        view = scratchMemory;
                    }
                    long wrong = 0;
                    for (int b = 0; b < count; b++) {
                        for (long o = 0; o < BLOCK_BYTES; o += 8) {
                            long expected = pattern(seed, (long) (sourceFirst + b * sourceStep) * BLOCK_BYTES + o);
                            wrong += view.get(ValueLayout.JAVA_LONG, (long) (first + b) * BLOCK_BYTES + o) == expected ? 0 : 1;
                        }
                    }
                    System.out.println("CHECKED " + wrong);
                }
                case "EXIT" -> {
                    backend.close();
                    System.out.println("BYE");
                    return;
                }
                default -> System.out.println("UNKNOWN " + line);
            }
            System.out.flush();
        }
        backend.close();
    }
}
