package io.kvbridge.backend.ucx;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One side of a two-process test, run in its own JVM. It talks to the test over stdin/stdout in
 * lines starting with {@code KVB}: it prints its metadata and block range, reads the other side's,
 * then plays its part. Lines without the prefix (UCX's own output) are ignored by the test.
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp ... TransferProcess ROLE ACTION TLS MEMORY BLOCKS BLOCK_BYTES [OPTIONS]
 *   ROLE    name of this side (agent name)
 *   ACTION  push     : WRITE every block into the other side once, with a notification
 *           await    : wait for one notification, verify the blocks, report
 *           pull     : READ every block from the other side once, with a notification, verify
 *           serve    : stay connected, report notifications, until stdin says EXIT
 *           push-loop / pull-loop : transfer repeatedly until a transfer fails, report how
 *           push-loop-serve : push-loop, then serve: the instance stays open after its peer failed
 *   TLS     sm or tcp (tcp runs on loopback)
 *   MEMORY  ucx (allocate()) or own (an arena segment, register()ed)
 *   OPTIONS more transport options, KEY=VALUE,KEY=VALUE, e.g. access=registered,transfer-timeout-ms=1000
 * </pre>
 */
public final class TransferProcess
{
    static final String PREFIX = ChildJvm.PREFIX;
    private static final long DEADLINE_NANOS = 60_000_000_000L;
    // each side grants its whole range both ways under this key, and presents it
    private static final byte[] KEY = "two-process-test".getBytes(StandardCharsets.UTF_8);

    private final PrintStream out;
    private final BufferedReader in;
    private final String role;

    private TransferProcess(String role)
    {
        this.role = role;
        this.out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        this.in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    }

    public static void main(String[] args) throws Exception
    {
        if (args.length != 6 && args.length != 7) {
            System.err.println("usage: TransferProcess ROLE ACTION TLS MEMORY BLOCKS BLOCK_BYTES [OPTIONS]");
            System.exit(2);
        }
        TransferProcess process = new TransferProcess(args[0]);
        try {
            process.run(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]), args.length == 7 ? args[6] : "");
        }
        catch (Throwable e) {
            process.say("ERROR " + e.toString().replace('\n', ' '));
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    private void run(String action, String tls, String memoryMode, int blocks, int blockBytes, String options) throws IOException
    {
        Map<String, String> config = new HashMap<>();
        config.put("tls", tls);
        if (tls.equals("tcp")) {
            config.put("net-devices", "lo");
            config.put(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true");
        }
        config.put("keepalive-interval-ms", "500");
        for (String option : options.split(",")) {
            if (!option.isEmpty()) {
                config.put(option.substring(0, option.indexOf('=')), option.substring(option.indexOf('=') + 1));
            }
        }
        long bytes = (long) blocks * blockBytes;
        try (Arena arena = Arena.ofShared(); TransferBackend backend = new UcxBackendFactory().create(config, () -> role)) {
            MemorySegment memory;
            if (memoryMode.equals("ucx")) {
                Allocation allocation = backend.allocate(bytes, MemoryKind.HOST, 0);
                memory = MemorySegment.ofAddress(allocation.address()).reinterpret(bytes);
            }
            else {
                memory = arena.allocate(bytes, 4096);
                backend.register(Allocation.host(memory));
            }
            boolean source = action.startsWith("push") || action.equals("serve");
            fill(memory, source ? 1 : 0);
            PreparedList local = backend.prepareLocal(blocksOf(memory.address(), blocks, blockBytes));
            int[] all = new int[blocks];
            for (int i = 0; i < blocks; i++) {
                all[i] = i;
            }
            // granted before the metadata goes out: the other side may post as soon as it has it
            backend.grant(KEY, TransferOp.READ, local, all, blocks);
            backend.grant(KEY, TransferOp.WRITE, local, all, blocks);
            say("METADATA " + Base64.getEncoder().encodeToString(backend.localMetadata()));
            say("REGION " + memory.address() + " " + bytes);
            Peer peer = backend.connect(Base64.getDecoder().decode(expect("METADATA")));
            long peerAddress = Long.parseLong(expect("REGION").split(" ")[0]);
            PreparedList remote = backend.prepareRemote(peer, blocksOf(peerAddress, blocks, blockBytes));
            say("READY");
            switch (action) {
                case "push" -> {
                    TransferStatus status = transfer(backend, TransferOp.WRITE, local, all, remote, "pushed:" + bytes);
                    say("TRANSFER " + status);
                    expect("EXIT");
                }
                case "await" -> {
                    String message = awaitNotification(backend);
                    say("NOTIFIED " + message);
                    say(verify(memory) ? "VERIFIED " + bytes : "MISMATCH");
                    expect("EXIT");
                }
                case "pull" -> {
                    TransferStatus status = transfer(backend, TransferOp.READ, local, all, remote, "pulled:" + bytes);
                    say("TRANSFER " + status);
                    say(verify(memory) ? "VERIFIED " + bytes : "MISMATCH");
                    expect("EXIT");
                }
                case "serve" -> {
                    serve(backend);
                }
                case "push-loop" -> loop(backend, TransferOp.WRITE, local, all, remote);
                case "pull-loop" -> loop(backend, TransferOp.READ, local, all, remote);
                case "push-loop-serve" -> {
                    loop(backend, TransferOp.WRITE, local, all, remote);
                    serve(backend);
                }
                default -> throw new IllegalArgumentException("unknown action " + action);
            }
        }
        say("CLOSED");
    }

    /** Reports notifications until the test says EXIT (or stdin closes). */
    private void serve(TransferBackend backend) throws IOException
    {
        AtomicReference<String> line = new AtomicReference<>();
        Thread reader = Thread.ofPlatform().daemon().start(() -> {
            try {
                line.set(in.readLine());
            }
            catch (IOException e) {
                line.set("EOF");
            }
        });
        while (reader.isAlive()) {
            backend.drainNotifications((sender, message) -> say("NOTIFIED " + new String(message, StandardCharsets.UTF_8) + " from " + sender));
            sleepMillis(1);
        }
        backend.drainNotifications((sender, message) -> say("NOTIFIED " + new String(message, StandardCharsets.UTF_8) + " from " + sender));
    }

    /** Moves all blocks again and again until a transfer fails or is refused; reports each step. */
    private void loop(TransferBackend backend, TransferOp op, PreparedList local, int[] all, PreparedList remote)
    {
        for (int round = 0; ; round++) {
            long started = System.nanoTime();
            long handle;
            try {
                handle = backend.post(new TransferRequest().start(op).local(local, all).remote(remote, all).count(all.length).grantKey(KEY));
            }
            catch (KvBridgeException refused) {
                say("FAILED refused " + refused.code() + " " + oneLine(refused.getMessage()));
                return;
            }
            TransferStatus status = await(backend, handle);
            if (status == TransferStatus.FAILED) {
                say("FAILED " + backend.failure(handle).map(e -> e.code() + " " + oneLine(e.getMessage())).orElse("?")
                        + " after " + (System.nanoTime() - started) / 1_000_000 + " ms");
                backend.release(handle);
                return;
            }
            backend.release(handle);
            if (status == TransferStatus.IN_PROGRESS) {
                say("HUNG round " + round);
                System.exit(3);
            }
            say("ROUND " + round);
        }
    }

    private TransferStatus transfer(TransferBackend backend, TransferOp op, PreparedList local, int[] all, PreparedList remote, String notification)
    {
        long handle = backend.post(new TransferRequest().start(op).local(local, all).remote(remote, all).count(all.length)
                .notification(notification.getBytes(StandardCharsets.UTF_8)).grantKey(KEY));
        TransferStatus status = await(backend, handle);
        if (status == TransferStatus.FAILED) {
            say("FAILURE " + backend.failure(handle).map(Throwable::getMessage).orElse("?"));
        }
        backend.release(handle);
        return status;
    }

    private static TransferStatus await(TransferBackend backend, long handle)
    {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        TransferStatus status = backend.status(handle);
        while (!status.terminal() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            status = backend.status(handle);
        }
        return status;
    }

    private String awaitNotification(TransferBackend backend)
    {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        List<String> received = new ArrayList<>();
        while (received.isEmpty() && System.nanoTime() < deadline) {
            backend.drainNotifications((sender, message) -> received.add(new String(message, StandardCharsets.UTF_8) + " from " + sender));
            sleepMillis(1);
        }
        return received.isEmpty() ? "nothing" : received.getFirst();
    }

    private String expect(String keyword) throws IOException
    {
        String line = in.readLine();
        if (line == null || !line.startsWith(PREFIX + keyword)) {
            throw new IllegalStateException("expected '" + PREFIX + keyword + "' on stdin, got '" + line + "'");
        }
        return line.substring(PREFIX.length() + keyword.length()).trim();
    }

    private synchronized void say(String line)
    {
        out.println(PREFIX + line);
    }

    static DescriptorList blocksOf(long address, int blocks, int blockBytes)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, blocks);
        for (int b = 0; b < blocks; b++) {
            builder.add(address + (long) b * blockBytes, blockBytes);
        }
        return builder.build();
    }

    static void fill(MemorySegment memory, int seed)
    {
        for (long i = 0; i < memory.byteSize(); i += 8) {
            memory.set(ValueLayout.JAVA_LONG_UNALIGNED, i, seed == 0 ? 0 : pattern(i));
        }
    }

    private static boolean verify(MemorySegment memory)
    {
        for (long i = 0; i < memory.byteSize(); i += 8) {
            if (memory.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != pattern(i)) {
                return false;
            }
        }
        return true;
    }

    private static long pattern(long offset)
    {
        long x = 0x9E3779B97F4A7C15L + offset;
        x ^= x >>> 31;
        x *= 0xBF58476D1CE4E5B9L;
        return x ^ (x >>> 29);
    }

    private static String oneLine(String text)
    {
        return text.replace('\n', ' ');
    }

    private static void sleepMillis(long millis)
    {
        try {
            Thread.sleep(millis);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
