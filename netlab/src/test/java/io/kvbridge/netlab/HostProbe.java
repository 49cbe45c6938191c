package io.kvbridge.netlab;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A small network probe that runs inside a virtual host ({@code ip netns exec NAMESPACE java ...
 * HostProbe MODE ...}), so that a test measures what crosses a cable: TCP round trips, a TCP stream
 * each way, and UDP datagrams echoed back. Every socket operation has a timeout and every mode a
 * deadline; each mode prints one {@code host_probe ...} line, and a failure exits 1 saying why.
 *
 * <pre>
 * serve ADDRESS                  TCP and UDP on ADDRESS:7400 until killed; prints "host_probe listening"
 * ping ADDRESS ROUNDS            64-byte TCP round trips: host_probe ping rounds=N min_ms=.. median_ms=.. max_ms=..
 * send ADDRESS MILLIS            streams to the server: host_probe send bytes=N seconds=S megabytes_per_second=X
 * receive ADDRESS MILLIS         the server streams to it: host_probe receive bytes=N seconds=S megabytes_per_second=X
 * datagrams ADDRESS COUNT        64-byte UDP datagrams the server echoes: host_probe datagrams sent=N echoed=M
 * </pre>
 */
final class HostProbe
{
    static final int PORT = 7400;
    private static final int SOCKET_TIMEOUT_MILLIS = 15_000;
    private static final int MESSAGE = 64;
    private static final byte PING = 'p';
    private static final byte SINK = 's';
    private static final byte SOURCE = 'r';

    private HostProbe()
    {
    }

    public static void main(String[] args) throws Exception
    {
        if (args.length < 2 || (!args[0].equals("serve") && args.length != 3)) {
            fail("usage: serve ADDRESS | ping ADDRESS ROUNDS | send ADDRESS MILLIS | receive ADDRESS MILLIS | datagrams ADDRESS COUNT, not " + Arrays.toString(args));
        }
        InetAddress address = InetAddress.getByName(args[1]);
        switch (args[0]) {
            case "serve" -> serve(address);
            case "ping" -> ping(address, positive(args[2], 10_000));
            case "send" -> send(address, positive(args[2], 30_000));
            case "receive" -> receive(address, positive(args[2], 30_000));
            case "datagrams" -> datagrams(address, positive(args[2], 1_000_000));
            default -> fail("unknown mode " + args[0]);
        }
    }

    private static int positive(String text, int most)
    {
        try {
            int value = Integer.parseInt(text);
            if (value >= 1 && value <= most) {
                return value;
            }
        }
        catch (NumberFormatException e) {
            // said below
        }
        fail(text + " is not a whole number from 1 to " + most);
        return 0;
    }

    private static void fail(String why)
    {
        System.err.println("host_probe: " + why);
        System.exit(1);
    }

    private static void serve(InetAddress address) throws IOException
    {
        ServerSocket server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(new InetSocketAddress(address, PORT));
        DatagramSocket datagrams = new DatagramSocket(new InetSocketAddress(address, PORT));
        Thread.ofPlatform().daemon().start(() -> echoDatagrams(datagrams));
        System.out.println("host_probe listening " + address.getHostAddress() + ":" + PORT);
        System.out.flush();
        while (true) {
            Socket socket = server.accept();
            Thread.ofVirtual().start(() -> {
                try (socket) {
                    socket.setSoTimeout(SOCKET_TIMEOUT_MILLIS);
                    socket.setTcpNoDelay(true);
                    serveConnection(socket);
                }
                catch (IOException e) {
                    System.err.println("host_probe: a connection failed: " + e);
                }
            });
        }
    }

    private static void serveConnection(Socket socket) throws IOException
    {
        DataInputStream in = new DataInputStream(socket.getInputStream());
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        byte mode = in.readByte();
        if (mode == PING) {
            byte[] message = new byte[MESSAGE];
            while (in.read(message, 0, 1) == 1) {
                in.readFully(message, 1, MESSAGE - 1);
                out.write(message);
                out.flush();
            }
        }
        else if (mode == SINK) {
            byte[] buffer = new byte[1 << 20];
            long total = 0;
            for (int got; (got = in.read(buffer)) > 0;) {
                total += got;
            }
            out.writeLong(total);
            out.flush();
        }
        else if (mode == SOURCE) {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(in.readInt());
            byte[] buffer = new byte[1 << 20];
            while (System.nanoTime() - end < 0) {
                out.write(buffer);
            }
            out.flush();
        }
    }

    private static void echoDatagrams(DatagramSocket socket)
    {
        byte[] buffer = new byte[2048];
        while (true) {
            try {
                DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
                socket.receive(packet);
                socket.send(packet);
            }
            catch (IOException e) {
                System.err.println("host_probe: a datagram failed: " + e);
            }
        }
    }

    private static Socket connect(InetAddress address, byte mode) throws IOException
    {
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress(address, PORT), SOCKET_TIMEOUT_MILLIS);
        socket.setSoTimeout(SOCKET_TIMEOUT_MILLIS);
        socket.setTcpNoDelay(true);
        socket.getOutputStream().write(mode);
        return socket;
    }

    private static void ping(InetAddress address, int rounds) throws IOException
    {
        try (Socket socket = connect(address, PING)) {
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            byte[] message = new byte[MESSAGE];
            double[] millis = new double[rounds];
            // the first rounds warm the JIT and the neighbour entries; they are not counted
            for (int round = -5; round < rounds; round++) {
                long start = System.nanoTime();
                out.write(message);
                out.flush();
                if (in.readNBytes(message, 0, MESSAGE) != MESSAGE) {
                    fail("the server closed the connection in round " + round);
                }
                if (round >= 0) {
                    millis[round] = (System.nanoTime() - start) / 1e6;
                }
            }
            Arrays.sort(millis);
            System.out.printf(Locale.ROOT, "host_probe ping rounds=%d min_ms=%.3f median_ms=%.3f max_ms=%.3f%n", rounds, millis[0], millis[rounds / 2],
                    millis[rounds - 1]);
        }
    }

    private static void send(InetAddress address, int millis) throws IOException
    {
        try (Socket socket = connect(address, SINK)) {
            byte[] buffer = new byte[1 << 20];
            long sent = 0;
            long start = System.nanoTime();
            long end = start + TimeUnit.MILLISECONDS.toNanos(millis);
            OutputStream out = socket.getOutputStream();
            while (System.nanoTime() - end < 0) {
                out.write(buffer);
                sent += buffer.length;
            }
            socket.shutdownOutput();
            long received = new DataInputStream(socket.getInputStream()).readLong();
            double seconds = (System.nanoTime() - start) / 1e9;
            if (received != sent) {
                fail("sent " + sent + " bytes, the server received " + received);
            }
            System.out.printf(Locale.ROOT, "host_probe send bytes=%d seconds=%.3f megabytes_per_second=%.1f%n", sent, seconds, sent / seconds / 1e6);
        }
    }

    private static void receive(InetAddress address, int millis) throws IOException
    {
        try (Socket socket = connect(address, SOURCE)) {
            new DataOutputStream(socket.getOutputStream()).writeInt(millis);
            byte[] buffer = new byte[1 << 20];
            long received = 0;
            long start = System.nanoTime();
            InputStream in = socket.getInputStream();
            for (int got; (got = in.read(buffer)) > 0;) {
                received += got;
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf(Locale.ROOT, "host_probe receive bytes=%d seconds=%.3f megabytes_per_second=%.1f%n", received, seconds, received / seconds / 1e6);
        }
    }

    private static void datagrams(InetAddress address, int count) throws IOException, InterruptedException
    {
        try (DatagramSocket socket = new DatagramSocket()) {
            socket.connect(address, PORT);
            socket.setSoTimeout(200);
            BitSet echoed = new BitSet(count);
            Thread receiver = Thread.ofPlatform().start(() -> {
                byte[] buffer = new byte[MESSAGE];
                long quietSince = System.nanoTime();
                // ends once nothing arrived for 2 s: the last echoes are in, or lost
                while (System.nanoTime() - quietSince < TimeUnit.SECONDS.toNanos(2) && echoed.cardinality() < count) {
                    try {
                        DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
                        socket.receive(packet);
                        int sequence = ByteBuffer.wrap(buffer).getInt();
                        if (sequence >= 0 && sequence < count) {
                            echoed.set(sequence);
                        }
                        quietSince = System.nanoTime();
                    }
                    catch (IOException e) {
                        // a timeout: look at the clock again
                    }
                }
            });
            byte[] message = new byte[MESSAGE];
            for (int sequence = 0; sequence < count; sequence++) {
                ByteBuffer.wrap(message).putInt(sequence);
                socket.send(new DatagramPacket(message, MESSAGE));
                // paced, so that no socket buffer on the way overflows and every loss is the cable's
                if (sequence % 10 == 9) {
                    LockSupport.parkNanos(1_000_000L);
                }
            }
            receiver.join(TimeUnit.SECONDS.toMillis(30));
            System.out.printf(Locale.ROOT, "host_probe datagrams sent=%d echoed=%d%n", count, echoed.cardinality());
        }
    }

    /** Runs probes in hosts, as their own JVMs, from a test. */
    static final class Launcher
    {
        private static final Duration CLIENT_DEADLINE = Duration.ofSeconds(60);

        private Launcher()
        {
        }

        private static List<String> command(VirtualHosts.Host host, String... arguments)
        {
            List<String> command = new ArrayList<>(host.launcher());
            command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                    "-Xmx64m", "-cp", classes(), HostProbe.class.getName()));
            command.addAll(List.of(arguments));
            return command;
        }

        private static String classes()
        {
            try {
                return Path.of(HostProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
            }
            catch (java.net.URISyntaxException e) {
                throw new IllegalStateException("cannot find the test classes of " + HostProbe.class.getName(), e);
            }
        }

        /**
         * Runs a client mode in a host and reads its line.
         *
         * @return the line's {@code key=value} numbers, matched by {@code pattern}.
         */
        static Matcher client(VirtualHosts.Host host, Pattern pattern, String... arguments)
        {
            String output = HostCommands.run(CLIENT_DEADLINE, command(host, arguments));
            Matcher matcher = pattern.matcher(output);
            if (!matcher.find()) {
                throw new IllegalStateException("host_probe " + String.join(" ", arguments) + " printed no line matching " + pattern + ": " + output);
            }
            return matcher;
        }

        /** Starts the server in a host and waits until it listens; close the process. */
        static Process serve(VirtualHosts.Host host, Path log) throws IOException
        {
            Process process = new ProcessBuilder(command(host, "serve", host.address())).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!Files.readString(log, StandardCharsets.UTF_8).contains("host_probe listening")) {
                if (!process.isAlive() || System.nanoTime() - end > 0) {
                    process.destroyForcibly();
                    throw new IllegalStateException("the probe server in " + host.name() + " did not listen within 30 s: " + Files.readString(log));
                }
                LockSupport.parkNanos(20_000_000L);
            }
            return process;
        }
    }
}
