package io.kvbridge.core.sidechannel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.config.TlsFiles;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.tls.SideChannelTls.ClientAuth;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The side channel over TLS 1.3 on real loopback TCP, with certificates the test makes. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
final class SideChannelTlsTest
{
    private static final String ENGINE = "prefill-tls-engine";
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] OTHER_SECRET = "fedcba9876543210fedcba9876543210".getBytes(StandardCharsets.US_ASCII);

    private final TestCertificates certificates = TestCertificates.get();
    private final RankMetadata rank = SideChannelFixtures.engine(ENGINE, 1, 1).getFirst();

    private SideChannelServer start(SideChannelTls tls, byte[] secret)
    {
        return SideChannelServer.start(ENGINE, List.of(rank), SideChannelFixtures.fast().tls(tls).secret(secret).build(), SideChannelClock.system());
    }

    private byte[] fetch(InetSocketAddress address, SideChannelTls tls, byte[] secret)
    {
        SideChannelClient client = new SideChannelClient(SideChannelFixtures.fast().tls(tls).secret(secret).build(), SideChannelClock.system());
        // by IP address, as peers advertise them: the server's certificate names 127.0.0.1 in an IP SAN
        InetSocketAddress literal = new InetSocketAddress(address.getAddress().getHostAddress(), address.getPort());
        return client.fetch(literal, List.of(RankKey.of(rank.rank()))).getFirst().payload();
    }

    private SideChannelTls serverPem(ClientAuth clientAuth)
    {
        return TestCertificates.load(withClientAuth(certificates.server.pem(certificates.caPem), clientAuth));
    }

    private SideChannelTls clientCaOnly()
    {
        return TestCertificates.load(new TlsFiles(null, null, null, null, certificates.caPem, null, null, null, null));
    }

    private static TlsFiles withClientAuth(TlsFiles files, ClientAuth clientAuth)
    {
        return files.overriddenBy(new TlsFiles(null, null, null, null, null, null, null, clientAuth, null));
    }

    @Test
    void aHandshakeRunsOverTlsFromPemFiles()
    {
        try (SideChannelServer server = start(serverPem(ClientAuth.NONE), new byte[0])) {
            assertArrayEquals(HandshakePayload.of(rank).encode(), fetch(server.address(), clientCaOnly(), new byte[0]));
            assertEquals(1, server.requestsServed());
        }
    }

    @Test
    void aHandshakeRunsOverTlsFromPkcs12Keystores()
    {
        TestCertificates.Identity identity = certificates.server;
        SideChannelTls serverTls = TestCertificates.load(new TlsFiles(null, null, identity.keystore(), identity.passwordFile(), null,
                identity.keystore(), identity.passwordFile(), null, null));
        try (SideChannelServer server = start(serverTls, new byte[0])) {
            assertArrayEquals(HandshakePayload.of(rank).encode(), fetch(server.address(), clientCaOnly(), new byte[0]));
        }
    }

    @Test
    void mutualTlsRefusesAClientWithoutACertificateAndServesOneWithIt()
    {
        try (SideChannelServer server = start(serverPem(ClientAuth.REQUIRE), new byte[0])) {
            KvBridgeException refused = assertThrows(KvBridgeException.class, () -> fetch(server.address(), clientCaOnly(), new byte[0]));
            assertEquals(ErrorCode.HANDSHAKE_FAILED, refused.code(), refused.getMessage());
            assertTrue(refused.getMessage().contains("TLS"), refused.getMessage());
            assertEquals(0, server.requestsServed());
            SideChannelTls clientTls = TestCertificates.load(certificates.client.pem(certificates.caPem));
            assertArrayEquals(HandshakePayload.of(rank).encode(), fetch(server.address(), clientTls, new byte[0]));
            assertEquals(1, server.requestsServed());
        }
    }

    @Test
    void aServerCertificateForAnotherHostIsRefusedUnlessVerificationIsOff()
    {
        SideChannelTls otherHost = TestCertificates.load(certificates.otherHost.pem(certificates.caPem));
        try (SideChannelServer server = start(otherHost, new byte[0])) {
            KvBridgeException refused = assertThrows(KvBridgeException.class, () -> fetch(server.address(), clientCaOnly(), new byte[0]));
            assertEquals(ErrorCode.HANDSHAKE_FAILED, refused.code(), refused.getMessage());
            assertTrue(refused.getMessage().contains("127.0.0.1"), refused.getMessage());
            SideChannelTls unverified = TestCertificates.load(new TlsFiles(null, null, null, null, certificates.caPem, null, null, null, false));
            assertArrayEquals(HandshakePayload.of(rank).encode(), fetch(server.address(), unverified, new byte[0]));
        }
    }

    @Test
    void aPlainClientAgainstATlsServerAndATlsClientAgainstAPlainServerFailFastNamingTls()
    {
        try (SideChannelServer tlsServer = start(serverPem(ClientAuth.NONE), new byte[0]);
                SideChannelServer plainServer = start(null, new byte[0])) {
            long started = System.nanoTime();
            KvBridgeException plainClient = assertThrows(KvBridgeException.class, () -> fetch(tlsServer.address(), null, new byte[0]));
            assertEquals(ErrorCode.HANDSHAKE_FAILED, plainClient.code(), plainClient.getMessage());
            assertTrue(plainClient.getMessage().contains("TLS"), plainClient.getMessage());
            KvBridgeException tlsClient = assertThrows(KvBridgeException.class, () -> fetch(plainServer.address(), clientCaOnly(), new byte[0]));
            assertEquals(ErrorCode.HANDSHAKE_FAILED, tlsClient.code(), tlsClient.getMessage());
            assertTrue(tlsClient.getMessage().contains("TLS"), tlsClient.getMessage());
            // well within the first request's and the read's timeouts: neither side waits for the other
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertTrue(tookMillis < 1_000, "took " + tookMillis + " ms");
        }
    }

    @Test
    void theWireCarriesNoPlaintextMetadataUnderTls()
            throws IOException
    {
        byte[] engineId = ENGINE.getBytes(StandardCharsets.UTF_8);
        byte[] layer = rank.geometry().regions().getFirst().name().getBytes(StandardCharsets.UTF_8);
        try (SideChannelServer plain = start(null, new byte[0]); RecordingProxy proxy = new RecordingProxy(plain.address())) {
            fetch(proxy.address(), null, new byte[0]);
            // the recording sees what a plain side channel leaks, so its absence below means something
            byte[] seen = proxy.recorded();
            assertTrue(contains(seen, engineId) && contains(seen, layer), "plain traffic carries the engine id and layer names");
        }
        try (SideChannelServer server = start(serverPem(ClientAuth.NONE), new byte[0]); RecordingProxy proxy = new RecordingProxy(server.address())) {
            // the certificate is issued for 127.0.0.1, which the proxy listens on too
            assertArrayEquals(HandshakePayload.of(rank).encode(), fetch(proxy.address(), clientCaOnly(), new byte[0]));
            byte[] seen = proxy.recorded();
            assertTrue(seen.length > HandshakePayload.of(rank).encode().length, "the proxy relayed the whole exchange: " + seen.length + " bytes");
            assertTrue(!contains(seen, engineId), "the engine id is readable on the wire");
            assertTrue(!contains(seen, layer), "a layer name is readable on the wire");
        }
    }

    @Test
    void aSharedSecretStillAuthenticatesMessagesInsideTls()
    {
        try (SideChannelServer server = start(serverPem(ClientAuth.NONE), SECRET)) {
            assertArrayEquals(HandshakePayload.of(rank).encode(), fetch(server.address(), clientCaOnly(), SECRET));
            KvBridgeException wrongSecret = assertThrows(KvBridgeException.class, () -> fetch(server.address(), clientCaOnly(), OTHER_SECRET));
            assertEquals(ErrorCode.AUTHENTICATION_FAILED, wrongSecret.code(), wrongSecret.getMessage());
        }
    }

    @Test
    void aClientThatNeverFinishesTheTlsHandshakeIsDroppedWithinTheFirstRequestBound()
            throws IOException
    {
        SideChannelSettings settings = SideChannelFixtures.fast().tls(serverPem(ClientAuth.NONE)).firstRequestTimeout(Duration.ofMillis(300)).build();
        try (SideChannelServer server = SideChannelServer.start(ENGINE, List.of(rank), settings, SideChannelClock.system());
                Socket silent = new Socket()) {
            silent.connect(server.address(), 2_000);
            // the first bytes of a ClientHello, and then nothing: the server must not wait on it
            silent.getOutputStream().write(new byte[] {0x16, 0x03, 0x01, 0x00, (byte) 0xf0, 0x01});
            silent.getOutputStream().flush();
            silent.setSoTimeout(5_000);
            long started = System.nanoTime();
            int read;
            try {
                read = silent.getInputStream().read();
                while (read >= 0) {
                    read = silent.getInputStream().read();
                }
            }
            catch (java.net.SocketException reset) {
                read = -1;
            }
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertEquals(-1, read);
            assertTrue(tookMillis < 2_000, "the server held the connection " + tookMillis + " ms");
            // counted by the connection's thread just after it closed the socket
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            while (server.connectionsDisplaced() == 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(1, server.connectionsDisplaced());
        }
    }

    private static boolean contains(byte[] haystack, byte[] needle)
    {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    /** Relays loopback connections to a target and records every byte either way, as a host on the path could. */
    private static final class RecordingProxy
            implements AutoCloseable
    {
        private final ServerSocket listener;
        private final InetSocketAddress target;
        private final ByteArrayOutputStream recorded = new ByteArrayOutputStream();
        private final Thread acceptor;

        RecordingProxy(InetSocketAddress target)
                throws IOException
        {
            this.target = target;
            this.listener = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
            this.acceptor = Thread.ofVirtual().start(this::accept);
        }

        InetSocketAddress address()
        {
            return new InetSocketAddress(listener.getInetAddress(), listener.getLocalPort());
        }

        byte[] recorded()
        {
            synchronized (recorded) {
                return recorded.toByteArray();
            }
        }

        private void accept()
        {
            while (!listener.isClosed()) {
                try {
                    Socket client = listener.accept();
                    Socket server = new Socket();
                    server.connect(target, 2_000);
                    Thread.ofVirtual().start(() -> pump(client, server));
                    Thread.ofVirtual().start(() -> pump(server, client));
                }
                catch (IOException e) {
                    return;
                }
            }
        }

        private void pump(Socket from, Socket to)
        {
            byte[] buffer = new byte[8192];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                for (int read = in.read(buffer); read >= 0; read = in.read(buffer)) {
                    synchronized (recorded) {
                        recorded.write(buffer, 0, read);
                    }
                    out.write(buffer, 0, read);
                }
            }
            catch (IOException e) {
                // one side closed: the relay of this connection ends
            }
            finally {
                try {
                    from.close();
                    to.close();
                }
                catch (IOException ignored) {
                    // closing only
                }
            }
        }

        @Override
        public void close()
                throws IOException
        {
            listener.close();
            try {
                acceptor.join(1_000);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
