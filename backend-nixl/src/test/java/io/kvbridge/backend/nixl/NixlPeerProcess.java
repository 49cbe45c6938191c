package io.kvbridge.backend.nixl;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.Peer;
import io.kvbridge.spi.transfer.TransferBackend;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * The peer JVM of the two-process tests. It registers one allocation filled with its seed's
 * pattern and answers line commands on stdin:
 *
 * <pre>
 *   (on start)                    -> READY base64(metadata) address
 *   CONNECT base64(metadata)      -> CONNECTED peerName
 *   AWAIT message seed blocks|-   -> RECEIVED sender intact|mismatch-at-N   (blocks: 3,0,17 written with seed's pattern)
 *   NOTIFY message                -> NOTIFIED
 *   EXIT                          -> CLOSED
 * </pre>
 *
 * Arguments: library (empty to search), allow-fake, agent name, blocks, block bytes, seed.
 */
final class NixlPeerProcess
{
    private static final long AWAIT_NANOS = 30_000_000_000L;

    private NixlPeerProcess()
    {
    }

    public static void main(String[] args) throws Exception
    {
        String library = args[0].isEmpty() ? null : args[0];
        boolean allowFake = Boolean.parseBoolean(args[1]);
        String name = args[2];
        int blocks = Integer.parseInt(args[3]);
        int blockBytes = Integer.parseInt(args[4]);
        int seed = Integer.parseInt(args[5]);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Arena arena = Arena.ofShared();
                TransferBackend backend = new NixlBackendFactory(library, allowFake).create(Map.of(NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE, "true"), () -> name)) {
            MemorySegment memory = arena.allocate((long) blocks * blockBytes, 4096);
            Patterns.fill(memory, seed);
            MemorySegment expected = arena.allocate(memory.byteSize(), 8).copyFrom(memory);
            backend.register(Allocation.host(memory));
            out.println("READY " + Base64.getEncoder().encodeToString(backend.localMetadata()) + " " + memory.address());
            Peer peer = null;
            String line;
            while ((line = in.readLine()) != null && !line.equals("EXIT")) {
                String[] words = line.split(" ");
                switch (words[0]) {
                    case "CONNECT" -> {
                        peer = backend.connect(Base64.getDecoder().decode(words[1]));
                        out.println("CONNECTED " + peer.name());
                    }
                    case "AWAIT" -> {
                        String sender = await(backend, words[1]);
                        int writerSeed = Integer.parseInt(words[2]);
                        if (!words[3].equals("-")) {
                            for (String block : words[3].split(",")) {
                                long offset = Long.parseLong(block) * blockBytes;
                                Patterns.fill(expected, offset, offset + blockBytes, writerSeed);
                            }
                        }
                        long mismatch = memory.mismatch(expected);
                        out.println("RECEIVED " + sender + " " + (mismatch == -1 ? "intact" : "mismatch-at-" + mismatch));
                    }
                    case "NOTIFY" -> {
                        backend.notify(peer, words[1].getBytes(StandardCharsets.UTF_8));
                        out.println("NOTIFIED");
                    }
                    default -> out.println("UNKNOWN " + line);
                }
            }
        }
        out.println("CLOSED");
    }

    /** Drains until a notification with this message arrives; returns its sender. */
    private static String await(TransferBackend backend, String message) throws InterruptedException
    {
        long deadline = System.nanoTime() + AWAIT_NANOS;
        List<String> senders = new ArrayList<>();
        while (System.nanoTime() < deadline) {
            backend.drainNotifications((sender, bytes) -> {
                if (new String(bytes, StandardCharsets.UTF_8).equals(message)) {
                    senders.add(sender);
                }
            });
            if (!senders.isEmpty()) {
                return senders.getFirst();
            }
            Thread.sleep(1);
        }
        return "nobody-within-30s";
    }
}
