package io.kvbridge.backend.cudaipc;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcMemory;
import io.kvbridge.transport.libc.LibcSockets;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;

/**
 * A process that attacks a control socket it found (as any local user finds abstract sockets in
 * {@code /proc/net/unix}), run by the tests in a child JVM, as another user or as the same one. It
 * uses nothing but libc through {@link LibcSockets} and the message buffers of {@link Wire}, and needs no
 * driver, no key and no file of the victim.
 *
 * <ul>
 *   <li>{@code steal <socket> <regions>}: says hello as a version 1 peer did and asks for the
 *       descriptors of regions 1..n; then speaks version 2 with a made-up proof and asks again, under
 *       a guessed grant key. Maps and writes into every descriptor it gets. Prints
 *       {@code FDS <received>} and {@code ANSWERED <messages answered before its proof was checked>}.</li>
 *   <li>{@code flood <socket> <count> <seconds>}: opens up to {@code count} connections within the
 *       time and holds them, silent; prints {@code HELD <n>}, then waits for its standard input to
 *       close.</li>
 * </ul>
 */
public final class HostileControlClient
{
    private HostileControlClient()
    {
    }

    public static void main(String[] args) throws Exception
    {
        switch (args[0]) {
            case "steal" -> steal(args[1], Integer.parseInt(args[2]));
            case "flood" -> flood(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    private static int open(Wire wire, String socket, boolean blocking)
    {
        int fd = LibcSockets.socket(LibcSockets.AF_UNIX, LibcSockets.SOCK_SEQPACKET | LibcSockets.SOCK_CLOEXEC | (blocking ? 0 : LibcSockets.SOCK_NONBLOCK), 0, wire.errno);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = arena.allocate(LibcSockets.SOCKADDR_UN_BYTES);
            int length = LibcSockets.abstractAddress(address, socket.getBytes(StandardCharsets.UTF_8));
            if (LibcSockets.connect(fd, address, length, wire.errno) < 0) {
                Libc.close(fd, wire.errno);
                return -1;
            }
        }
        return fd;
    }

    /** @return the length of the answer, 0 on hang-up or silence. */
    private static long answer(Wire wire, int fd)
    {
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (System.nanoTime() < deadline) {
            wire.await(fd, Libc.POLLIN, deadline - System.nanoTime());
            long length;
            try {
                length = wire.receive(fd);
            }
            catch (RuntimeException e) {
                return 0;
            }
            if (length != -1) {
                return Math.max(0, length);
            }
        }
        return 0;
    }

    private static void steal(String socket, int regions)
    {
        Wire wire = new Wire();
        List<Integer> stolen = new ArrayList<>();
        int answered = 0;
        byte[] name = "intruder".getBytes(StandardCharsets.UTF_8);
        // version 1: hello, then a descriptor request
        int fd = open(wire, socket, true);
        if (fd >= 0) {
            wire.data.set(JAVA_BYTE, 0, (byte) 1);
            wire.data.set(JAVA_BYTE, 1, (byte) 1);
            wire.data.set(JAVA_INT.withByteAlignment(1), 2, Libc.getpid());
            wire.data.set(JAVA_SHORT.withByteAlignment(1), 6, (short) name.length);
            MemorySegment.copy(name, 0, wire.data, JAVA_BYTE, 8, name.length);
            wire.send(fd, 8 + name.length, null, 0, System.nanoTime() + 1_000_000_000L);
            wire.data.set(JAVA_BYTE, 0, (byte) 2);
            wire.data.set(JAVA_SHORT.withByteAlignment(1), 1, (short) regions);
            for (int i = 0; i < regions; i++) {
                wire.data.set(JAVA_INT.withByteAlignment(1), 3 + 4L * i, i + 1);
            }
            wire.send(fd, 3 + 4 * regions, null, 0, System.nanoTime() + 1_000_000_000L);
            if (answer(wire, fd) > 0) {
                answered++;
                take(wire, stolen);
            }
            Libc.close(fd, wire.errno);
        }
        // version 2: hello with a nonce, a made-up proof, then a request under a guessed key
        fd = open(wire, socket, true);
        if (fd >= 0) {
            byte[] nonce = new byte[32];
            new SecureRandom().nextBytes(nonce);
            wire.data.set(JAVA_BYTE, 0, (byte) 1);
            wire.data.set(JAVA_BYTE, 1, (byte) 2);
            wire.data.set(JAVA_BYTE, 2, (byte) 0);
            wire.data.set(JAVA_INT.withByteAlignment(1), 3, Libc.getpid());
            MemorySegment.copy(nonce, 0, wire.data, JAVA_BYTE, 7, 32);
            wire.data.set(JAVA_SHORT.withByteAlignment(1), 39, (short) name.length);
            MemorySegment.copy(name, 0, wire.data, JAVA_BYTE, 41, name.length);
            wire.send(fd, 41 + name.length, null, 0, System.nanoTime() + 1_000_000_000L);
            long challenge = answer(wire, fd);
            take(wire, stolen);
            if (challenge > 0) {
                wire.data.set(JAVA_BYTE, 0, (byte) 6);
                MemorySegment.copy(nonce, 0, wire.data, JAVA_BYTE, 1, 32);
                wire.send(fd, 33, null, 0, System.nanoTime() + 1_000_000_000L);
                if (answer(wire, fd) > 0) {
                    answered++;
                    take(wire, stolen);
                }
                byte[] key = "conformance".getBytes(StandardCharsets.UTF_8);
                wire.data.set(JAVA_BYTE, 0, (byte) 2);
                wire.data.set(JAVA_SHORT.withByteAlignment(1), 1, (short) regions);
                wire.data.set(JAVA_BYTE, 3, (byte) key.length);
                MemorySegment.copy(key, 0, wire.data, JAVA_BYTE, 4, key.length);
                for (int i = 0; i < regions; i++) {
                    wire.data.set(JAVA_INT.withByteAlignment(1), 4L + key.length + 4L * i, i + 1);
                }
                wire.send(fd, 4 + key.length + 4 * regions, null, 0, System.nanoTime() + 1_000_000_000L);
                if (answer(wire, fd) > 0) {
                    answered++;
                    take(wire, stolen);
                }
            }
            Libc.close(fd, wire.errno);
        }
        // what it got, it uses: every descriptor is mapped and its first page overwritten
        for (int stolenFd : stolen) {
            long address = LibcMemory.mmapShared(stolenFd, 4096, wire.errno);
            if (address != LibcMemory.MAP_FAILED) {
                MemorySegment.ofAddress(address).reinterpret(4096).fill((byte) 0x5A);
                LibcMemory.munmap(address, 4096, wire.errno);
            }
        }
        System.out.println("FDS " + stolen.size());
        System.out.println("ANSWERED " + answered);
        System.out.flush();
    }

    private static void take(Wire wire, List<Integer> stolen)
    {
        for (int i = 0; i < wire.receivedFdCount; i++) {
            stolen.add(wire.receivedFds[i]);
            wire.receivedFds[i] = -1;
        }
        wire.receivedFdCount = 0;
    }

    private static void flood(String socket, int count, int seconds) throws Exception
    {
        Wire wire = new Wire();
        List<Integer> held = new ArrayList<>();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (held.size() < count && System.nanoTime() < deadline) {
            int fd = open(wire, socket, false);
            if (fd >= 0) {
                held.add(fd);
            }
            else {
                Thread.onSpinWait();
            }
        }
        System.out.println("HELD " + held.size());
        System.out.flush();
        while (System.in.read() >= 0) {
            // holds its connections until the test lets go
        }
    }
}
