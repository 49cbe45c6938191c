package io.kvbridge.examples.demo;

import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcSockets;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One attacker of {@link EngineFloodTest}, run in a JVM of its own so that the flood's descriptors
 * count against its own limit on open files, not the test's: opens connections to the sockets it is
 * given and holds them until its standard input closes, then resets them and exits.
 *
 * <p>Arguments: {@code THREADS SOURCES TARGET=COUNT...}, a target being {@code tcp:PORT} (on
 * 127.0.0.1, from {@code 127.0.0.(1 + i % SOURCES)}) or {@code unix:NAME} (an abstract
 * {@code SOCK_SEQPACKET} socket, as cuda-ipc's control socket is). The i-th connection of a target
 * from each thread's share: two thirds stay silent, every third sends the start of a frame (for a
 * Unix socket, the start of a hello) and goes quiet. Prints {@code TARGET index connected failed
 * shed} per target once all are open ({@code shed}: the write of its garbage failed, as the engine
 * had already closed it), then {@code OPENED}; each line read from standard input asks for a census
 * of the connections held, answered {@code CLOSED index count} per target (those the engine closed
 * since), then {@code CENSUS}.
 */
public final class FloodProcess
{
    private static final int CONNECT_TIMEOUT_MILLIS = 3_000;
    // a frame's start: a length, a magic-like word and a type, then nothing more
    private static final byte[] TCP_GARBAGE = {0, 0, 0, 64, 'K', 'V', 'B', 'T', 1, 7, 0, 0};
    // a hello's start: its type, a version and a flag, a pid, then nothing of the nonce it promises
    private static final byte[] HELLO_GARBAGE = {1, 2, 0, 1, 0, 0, 0, 9, 9, 9};

    private final List<String> targets = new ArrayList<>();
    private final int[] counts;
    private final int sources;
    private final AtomicLongArray connected;
    private final AtomicLongArray failed;
    private final AtomicLongArray shed;
    // per thread: the TCP sockets and Unix descriptors it holds
    private final List<List<SocketChannel>> sockets = new ArrayList<>();
    private final List<List<Integer>> descriptors = new ArrayList<>();
    private final List<List<Integer>> targetOfSocket = new ArrayList<>();
    private final List<List<Integer>> targetOfDescriptor = new ArrayList<>();

    private FloodProcess(List<String> specs, int sources)
    {
        this.counts = new int[specs.size()];
        for (int t = 0; t < specs.size(); t++) {
            String spec = specs.get(t);
            int at = spec.lastIndexOf('=');
            targets.add(spec.substring(0, at));
            counts[t] = Integer.parseInt(spec.substring(at + 1));
        }
        this.sources = sources;
        this.connected = new AtomicLongArray(counts.length);
        this.failed = new AtomicLongArray(counts.length);
        this.shed = new AtomicLongArray(counts.length);
    }

    /**
     * Runs one attacker.
     *
     * @param args {@code THREADS SOURCES TARGET=COUNT...}.
     * @throws Exception when the flood cannot start.
     */
    public static void main(String[] args) throws Exception
    {
        int threads = Integer.parseInt(args[0]);
        FloodProcess flood = new FloodProcess(List.of(args).subList(2, args.length), Integer.parseInt(args[1]));
        List<Thread> running = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            flood.sockets.add(new ArrayList<>());
            flood.descriptors.add(new ArrayList<>());
            flood.targetOfSocket.add(new ArrayList<>());
            flood.targetOfDescriptor.add(new ArrayList<>());
            int thread = t;
            running.add(Thread.ofPlatform().name("flood-" + t).start(() -> flood.open(thread, threads)));
        }
        for (Thread thread : running) {
            thread.join();
        }
        PrintStream out = System.out;
        for (int t = 0; t < flood.counts.length; t++) {
            out.printf(Locale.ROOT, "TARGET %d %d %d %d%n", t, flood.connected.get(t), flood.failed.get(t), flood.shed.get(t));
        }
        out.println("OPENED");
        out.flush();
        // held until the test closes this process's standard input; each line asks for a census
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (commands.readLine() != null) {
            long[] closed = flood.census();
            for (int t = 0; t < closed.length; t++) {
                out.printf(Locale.ROOT, "CLOSED %d %d%n", t, closed[t]);
            }
            out.println("CENSUS");
            out.flush();
        }
        flood.close();
    }

    /** {@return per target, how many of the connections it held the engine has closed: refused, shed or timed out} */
    private long[] census() throws IOException
    {
        long[] closed = new long[counts.length];
        ByteBuffer sink = ByteBuffer.allocate(4096);
        for (int t = 0; t < sockets.size(); t++) {
            for (int s = 0; s < sockets.get(t).size(); s++) {
                SocketChannel channel = sockets.get(t).get(s);
                boolean gone;
                try {
                    // what the engine sent first (a challenge) is read past: only an end or a reset says it closed
                    long read;
                    do {
                        sink.clear();
                        read = channel.read(sink);
                    } while (read > 0);
                    gone = read < 0;
                }
                catch (IOException e) {
                    // reset by the engine
                    gone = true;
                }
                if (gone) {
                    closed[targetOfSocket.get(t).get(s)]++;
                }
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            MemorySegment poll = arena.allocate(Libc.POLLFD_BYTES);
            for (int t = 0; t < descriptors.size(); t++) {
                for (int d = 0; d < descriptors.get(t).size(); d++) {
                    poll.set(ValueLayout.JAVA_INT, 0, descriptors.get(t).get(d));
                    poll.set(ValueLayout.JAVA_SHORT, Libc.POLLFD_EVENTS, Libc.POLLIN);
                    poll.set(ValueLayout.JAVA_SHORT, Libc.POLLFD_REVENTS, (short) 0);
                    if (Libc.poll(poll.address(), 1, 0, errno) > 0
                            && (poll.get(ValueLayout.JAVA_SHORT, Libc.POLLFD_REVENTS) & (Libc.POLLHUP | Libc.POLLERR)) != 0) {
                        closed[targetOfDescriptor.get(t).get(d)]++;
                    }
                }
            }
        }
        return closed;
    }

    private void open(int thread, int threads)
    {
        List<SocketChannel> own = sockets.get(thread);
        List<Integer> fds = descriptors.get(thread);
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            MemorySegment address = arena.allocate(LibcSockets.SOCKADDR_UN_BYTES);
            MemorySegment garbage = arena.allocate(HELLO_GARBAGE.length);
            MemorySegment.copy(HELLO_GARBAGE, 0, garbage, ValueLayout.JAVA_BYTE, 0, HELLO_GARBAGE.length);
            // the targets interleaved, so that every socket is under the flood from its start
            int most = 0;
            for (int count : counts) {
                most = Math.max(most, count);
            }
            for (int i = thread; i < most; i += threads) {
                for (int t = 0; t < counts.length; t++) {
                    if (i >= counts[t]) {
                        continue;
                    }
                    String target = targets.get(t);
                    if (target.startsWith("tcp:")) {
                        if (openTcp(t, Integer.parseInt(target.substring(4)), i, own)) {
                            targetOfSocket.get(thread).add(t);
                        }
                    }
                    else if (openUnix(t, target.substring(5), i, fds, errno, address, garbage)) {
                        targetOfDescriptor.get(thread).add(t);
                    }
                }
            }
        }
    }

    /** {@return whether it connected; then it is held, non-blocking, for the census} */
    private boolean openTcp(int target, int port, int i, List<SocketChannel> own)
    {
        SocketChannel channel = null;
        try {
            channel = SocketChannel.open();
            channel.socket().setSoLinger(true, 0);
            channel.bind(new InetSocketAddress("127.0.0." + (1 + i % sources), 0));
            // the adaptor's connect is the one with a timeout: a full backlog drops the SYN rather than refusing it
            channel.socket().connect(new InetSocketAddress("127.0.0.1", port), CONNECT_TIMEOUT_MILLIS);
            connected.incrementAndGet(target);
            if (i % 3 == 2) {
                try {
                    channel.write(ByteBuffer.wrap(TCP_GARBAGE));
                }
                catch (IOException e) {
                    // the engine already shed it: what admission is for
                    shed.incrementAndGet(target);
                }
            }
            channel.configureBlocking(false);
            own.add(channel);
            return true;
        }
        catch (IOException e) {
            failed.incrementAndGet(target);
            if (channel != null) {
                try {
                    channel.close();
                }
                catch (IOException ignored) {
                    // nothing held
                }
            }
            return false;
        }
    }

    /** {@return whether it connected; then it is held for the census} */
    private boolean openUnix(int target, String name, int i, List<Integer> fds, Errno errno, MemorySegment address, MemorySegment garbage)
    {
        int fd = LibcSockets.socket(LibcSockets.AF_UNIX, LibcSockets.SOCK_SEQPACKET | LibcSockets.SOCK_CLOEXEC | LibcSockets.SOCK_NONBLOCK, 0, errno);
        if (fd < 0) {
            failed.incrementAndGet(target);
            return false;
        }
        int length = LibcSockets.abstractAddress(address, name.getBytes(StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CONNECT_TIMEOUT_MILLIS);
        // a full backlog answers EAGAIN to a non-blocking connect: try again until the deadline
        while (LibcSockets.connect(fd, address, length, errno) < 0) {
            if (errno.last() != Errno.EAGAIN || System.nanoTime() > deadline) {
                Libc.close(fd, errno);
                failed.incrementAndGet(target);
                return false;
            }
            try {
                Thread.sleep(1);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                Libc.close(fd, errno);
                failed.incrementAndGet(target);
                return false;
            }
        }
        fds.add(fd);
        connected.incrementAndGet(target);
        if (i % 3 == 2 && Libc.write(fd, garbage.address(), garbage.byteSize(), errno) < 0) {
            shed.incrementAndGet(target);
        }
        return true;
    }

    private void close()
    {
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            for (List<Integer> fds : descriptors) {
                for (int fd : fds) {
                    Libc.close(fd, errno);
                }
            }
        }
        for (List<SocketChannel> own : sockets) {
            for (SocketChannel channel : own) {
                try {
                    channel.close();
                }
                catch (IOException e) {
                    // a reset of a socket the engine closed already: nothing to check
                }
            }
        }
    }
}
