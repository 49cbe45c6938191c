package io.kvbridge.backend.tcp;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.testkit.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The target side of a two-process test, in its own JVM: it registers a block range, grants it for
 * READ and WRITE under {@link #KEY}, prints its metadata, then reports every notification it
 * receives and answers the test's commands, in lines starting with {@code KVB}.
 *
 * <pre>
 *   java -cp ... TcpPeerProcess NAME BLOCKS BLOCK_BYTES FILL [OPTIONS]
 *   FILL     zero, or a seed: the blocks start as {@link #fill pattern} of that seed
 *   OPTIONS  more transport options, KEY=VALUE,KEY=VALUE
 *   prints   METADATA base64, REGION address bytes, then NOTIFIED message from sender as they come
 *   commands VERIFY seed  : CHECKED n bytes match, or CHECKED mismatch at byte n
 *            PING         : PONG and the transport's problem (every notification received before it was reported before it)
 *            EXIT         : closes the transport, prints CLOSED, exits 0 (also on end of stdin)
 * </pre>
 */
public final class TcpPeerProcess
{
    static final String PREFIX = ChildJvm.PREFIX;
    /** The key the target grants its range under; the test presents it. */
    static final byte[] KEY = "tcp-two-process-test".getBytes(StandardCharsets.UTF_8);

    private final PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    private TcpPeerProcess()
    {
    }

    public static void main(String[] args)
    {
        TcpPeerProcess process = new TcpPeerProcess();
        if (args.length != 4 && args.length != 5) {
            System.err.println("usage: TcpPeerProcess NAME BLOCKS BLOCK_BYTES FILL [OPTIONS]");
            System.exit(2);
        }
        // a child whose test JVM died must not outlive it; a test that takes the child's descriptors
        // away turns the watch off, since it reads /proc and takes a failed read for the parent's exit
        if (!Boolean.getBoolean("kvbridge.test.noParentWatch")) {
            ProcessHandle.current().parent().ifPresent(parent -> parent.onExit().thenRun(() -> Runtime.getRuntime().halt(4)));
        }
        try {
            process.run(args[0], Integer.parseInt(args[1]), Integer.parseInt(args[2]), args[3], args.length == 5 ? args[4] : "");
        }
        catch (Throwable e) {
            process.say("ERROR " + e.toString().replace('\n', ' '));
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    private void run(String name, int blocks, int blockBytes, String fill, String options) throws InterruptedException
    {
        Map<String, String> config = new HashMap<>(Map.of("host", "127.0.0.1"));
        for (String option : options.split(",")) {
            if (!option.isEmpty()) {
                config.put(option.substring(0, option.indexOf('=')), option.substring(option.indexOf('=') + 1));
            }
        }
        long bytes = (long) blocks * blockBytes;
        BlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread.ofPlatform().daemon().name("stdin").start(() -> readCommands(commands));
        try (Arena arena = Arena.ofShared(); TransferBackend backend = new TcpBackendFactory().create(config, () -> name)) {
            MemorySegment memory = arena.allocate(bytes, 4096);
            backend.register(Allocation.host(memory));
            if (fill.equals("zero")) {
                memory.fill((byte) 0);
            }
            else {
                fill(memory, blockBytes, Long.parseLong(fill));
            }
            PreparedList local = backend.prepareLocal(blocksOf(memory.address(), blocks, blockBytes));
            int[] all = all(blocks);
            // granted before the metadata goes out: the test may post as soon as it has it
            backend.grant(KEY, TransferOp.READ, local, all, blocks);
            backend.grant(KEY, TransferOp.WRITE, local, all, blocks);
            say("METADATA " + Base64.getEncoder().encodeToString(backend.localMetadata()));
            say("REGION " + memory.address() + " " + bytes);
            while (true) {
                String command = commands.poll(20, TimeUnit.MILLISECONDS);
                // drained before each command, so a PONG follows every notification that came before the PING
                backend.drainNotifications((sender, message) -> say("NOTIFIED " + new String(message, StandardCharsets.UTF_8) + " from " + sender));
                if (command == null) {
                    continue;
                }
                if (command.equals("EXIT")) {
                    break;
                }
                if (command.equals("PING")) {
                    say("PONG " + backend.problem().orElse("no problem").replace('\n', ' '));
                }
                else if (command.startsWith("VERIFY ")) {
                    long mismatch = firstMismatch(memory, blockBytes, Long.parseLong(command.substring("VERIFY ".length())));
                    say(mismatch < 0 ? "CHECKED " + bytes + " bytes match" : "CHECKED mismatch at byte " + mismatch + " (block " + mismatch / blockBytes + ")");
                }
                else {
                    throw new IllegalStateException("unknown command '" + command + "'");
                }
            }
        }
        say("CLOSED");
    }

    private static void readCommands(BlockingQueue<String> commands)
    {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith(PREFIX)) {
                    commands.add(line.substring(PREFIX.length()));
                }
            }
        }
        catch (IOException e) {
            // the test is gone: exit as on end of input
        }
        commands.add("EXIT");
    }

    private synchronized void say(String line)
    {
        out.println(PREFIX + line);
    }

    static int[] all(int blocks)
    {
        int[] indices = new int[blocks];
        for (int i = 0; i < blocks; i++) {
            indices[i] = i;
        }
        return indices;
    }

    static DescriptorList blocksOf(long address, int blocks, int blockBytes)
    {
        DescriptorList.Builder builder = DescriptorList.builder(MemoryKind.HOST, 0, blocks);
        for (int b = 0; b < blocks; b++) {
            builder.add(address + (long) b * blockBytes, blockBytes);
        }
        return builder.build();
    }

    /** Fills every block with words derived from the seed, the block's index and the word's place in it. */
    static void fill(MemorySegment memory, int blockBytes, long seed)
    {
        for (long at = 0; at < memory.byteSize(); at += 8) {
            memory.set(ValueLayout.JAVA_LONG_UNALIGNED, at, pattern(seed, at / blockBytes, at % blockBytes));
        }
    }

    /** {@return the offset of the first word that differs from {@link #fill}'s, or -1 when every byte matches} */
    static long firstMismatch(MemorySegment memory, int blockBytes, long seed)
    {
        for (long at = 0; at < memory.byteSize(); at += 8) {
            if (memory.get(ValueLayout.JAVA_LONG_UNALIGNED, at) != pattern(seed, at / blockBytes, at % blockBytes)) {
                return at;
            }
        }
        return -1;
    }

    private static long pattern(long seed, long block, long offset)
    {
        long x = seed * 0x9E3779B97F4A7C15L + (block << 32) + offset;
        x ^= x >>> 31;
        x *= 0xBF58476D1CE4E5B9L;
        x ^= x >>> 29;
        x *= 0x94D049BB133111EBL;
        return x ^ (x >>> 32);
    }
}
