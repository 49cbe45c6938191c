package io.kvbridge.backend.ucx;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.testkit.SideChannelContext;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.StringJoiner;

/**
 * The victim of {@link UcxHostilePeerTwoProcessTest}, in a JVM of its own: twelve blocks of which
 * it registers the first eight, blocks 0 and 1 granted for WRITE and blocks 2 and 3 (filled with
 * {@code 0x42}) for READ, every other byte {@code 0x5A}. It prints its metadata and base address,
 * then answers {@code BLOCKS} with each block's byte ({@code mixed} when a block holds several),
 * {@code PROBLEM} with its health problem, and ends on {@code EXIT}.
 *
 * <pre>
 *   java ... HostileVictimProcess NAME TLS|loopback-defaults
 * </pre>
 */
public final class HostileVictimProcess
{
    static final int BLOCK = 64 * 1024;
    static final int REGISTERED_BLOCKS = 8;
    static final int ALL_BLOCKS = 12;
    static final byte SENTINEL = (byte) 0x5A;
    static final byte READABLE = (byte) 0x42;
    static final byte[] WRITE_KEY = "victim-write-key".getBytes(StandardCharsets.UTF_8);
    static final byte[] READ_KEY = "victim-read-key".getBytes(StandardCharsets.UTF_8);
    /** In place of TLS: no transports chosen, and a side channel on 127.0.0.1, as an engine on one host opens it. */
    static final String LOOPBACK_DEFAULTS = "loopback-defaults";

    private HostileVictimProcess()
    {
    }

    public static void main(String[] args) throws Exception
    {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, String> config = new HashMap<>(Map.of("keepalive-interval-ms", "500"));
        BackendContext context = () -> args[0];
        if (args[1].equals(LOOPBACK_DEFAULTS)) {
            context = new SideChannelContext(args[0], "127.0.0.1");
        }
        else {
            config.put("tls", args[1]);
        }
        if (args[1].equals("tcp")) {
            config.put("net-devices", "lo");
            config.put(UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true");
        }
        try (Arena arena = Arena.ofShared(); TransferBackend victim = new UcxBackendFactory().create(config, context)) {
            MemorySegment memory = arena.allocate((long) ALL_BLOCKS * BLOCK, 4096);
            memory.fill(SENTINEL);
            memory.asSlice(2L * BLOCK, 2L * BLOCK).fill(READABLE);
            victim.register(Allocation.host(memory.asSlice(0, (long) REGISTERED_BLOCKS * BLOCK)));
            DescriptorList.Builder blocks = DescriptorList.builder(MemoryKind.HOST, 0, REGISTERED_BLOCKS);
            for (int block = 0; block < REGISTERED_BLOCKS; block++) {
                blocks.add(memory.address() + (long) block * BLOCK, BLOCK);
            }
            var local = victim.prepareLocal(blocks.build());
            victim.grant(WRITE_KEY, TransferOp.WRITE, local, new int[] {0, 1}, 2);
            victim.grant(READ_KEY, TransferOp.READ, local, new int[] {2, 3}, 2);
            out.println(TransferProcess.PREFIX + "METADATA " + Base64.getEncoder().encodeToString(victim.localMetadata()));
            out.println(TransferProcess.PREFIX + "REGION " + memory.address());
            for (String line; (line = in.readLine()) != null; ) {
                String command = line.startsWith(TransferProcess.PREFIX) ? line.substring(TransferProcess.PREFIX.length()).trim() : "";
                switch (command) {
                    case "BLOCKS" -> out.println(TransferProcess.PREFIX + "BLOCKS " + describe(memory));
                    case "PROBLEM" -> out.println(TransferProcess.PREFIX + "PROBLEM health=" + victim.problem().orElse("none").replace('\n', ' ')
                            + " report=" + ((UcxTransferBackend) victim).peerReport().orElse("none").replace('\n', ' '));
                    case "EXIT" -> {
                        return;
                    }
                    default -> out.println(TransferProcess.PREFIX + "ERROR unknown command '" + command + "'");
                }
            }
        }
    }

    private static String describe(MemorySegment memory)
    {
        StringJoiner blocks = new StringJoiner(",");
        for (int block = 0; block < ALL_BLOCKS; block++) {
            byte first = memory.get(ValueLayout.JAVA_BYTE, (long) block * BLOCK);
            boolean uniform = true;
            for (long i = 1; i < BLOCK && uniform; i++) {
                uniform = memory.get(ValueLayout.JAVA_BYTE, (long) block * BLOCK + i) == first;
            }
            blocks.add(uniform ? String.format("%02x", first & 0xff) : "mixed");
        }
        return blocks.toString();
    }
}
