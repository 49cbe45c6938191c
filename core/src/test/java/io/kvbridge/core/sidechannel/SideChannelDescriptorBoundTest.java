package io.kvbridge.core.sidechannel;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The side channel's descriptors stay within its admission's bounds when the virtual threads that
 * close displaced connections cannot run (every carrier busy, as on a loaded machine): the accept
 * thread waits rather than taking connections it cannot release.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class SideChannelDescriptorBoundTest
{
    private static final int MAX_PENDING = 8;
    private static final int MAX_CONNECTIONS = 4;
    private static final int FLOOD = 300;
    // the admission's pending and served connections, as many again being closed, and room for the listener
    private static final int MOST_SERVER_SOCKETS = MAX_PENDING + MAX_CONNECTIONS + MAX_PENDING + 4;

    @Test
    void aFloodWhileEveryCarrierIsBusyHoldsNoMoreDescriptorsThanTheBounds() throws Exception
    {
        SideChannelSettings settings = SideChannelFixtures.fast().maxPendingConnections(MAX_PENDING).maxPendingPerAddress(MAX_PENDING)
                .maxConnections(MAX_CONNECTIONS).build();
        AtomicBoolean busy = new AtomicBoolean(true);
        List<Thread> hogs = new ArrayList<>();
        List<Socket> flood = new ArrayList<>();
        try (SideChannelServer server = SideChannelServer.start("prefill-0", SideChannelFixtures.engine("prefill-0", 1, 1), settings,
                SideChannelClock.system())) {
            InetSocketAddress address = server.address();
            long before = openDescriptors();
            // virtual threads that never yield: no other virtual thread of this JVM runs until they stop
            int carriers = Integer.getInteger("jdk.virtualThreadScheduler.parallelism", Runtime.getRuntime().availableProcessors());
            for (int i = 0; i < carriers; i++) {
                hogs.add(Thread.ofVirtual().start(() -> {
                    while (busy.get()) {
                        Thread.onSpinWait();
                    }
                }));
            }
            for (int i = 0; i < FLOOD; i++) {
                Socket socket = new Socket();
                flood.add(socket);
                socket.connect(address, 2_000);
            }
            // time for the accept thread to take what it will
            Thread.sleep(1_000);
            long serverSockets = openDescriptors() - before - FLOOD;
            busy.set(false);
            assertTrue(serverSockets <= MOST_SERVER_SOCKETS, "the side channel held " + serverSockets + " sockets for a flood of " + FLOOD
                    + " while its closing threads could not run; its bounds allow " + MOST_SERVER_SOCKETS);
        }
        finally {
            busy.set(false);
            for (Thread hog : hogs) {
                hog.join();
            }
            for (Socket socket : flood) {
                socket.close();
            }
        }
    }

    private static long openDescriptors() throws IOException
    {
        try (var open = Files.list(Path.of("/proc/self/fd"))) {
            return open.count();
        }
    }
}
