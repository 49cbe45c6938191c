package io.kvbridge.core.sidechannel;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.MessageAuthenticator;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.net.InetAddress;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.Objects;

/**
 * How a side channel server listens and a client connects.
 *
 * @param bindAddress address the server binds to; loopback unless peers on other hosts must reach it.
 * @param port port the server binds to; 0 picks a free one.
 * @param connectTimeout longest wait for a TCP connection to a peer.
 * @param readTimeout longest wait for any single read from a peer.
 * @param handshakeTimeout deadline of a whole handshake with one engine, all its ranks included.
 * @param idleConnectionTimeout how long the server keeps a connection that sends nothing.
 * @param maxConnections connections the server serves at once; more are closed at once.
 * @param engineTtl how long a remote engine stays cached without activity (never while in use).
 * @param limits bounds every decoder enforces.
 * @param compatibility how a compatibility hash mismatch is handled.
 * @param secret shared secret for HMAC authentication; empty for none.
 * @param authenticationWindow largest accepted clock difference of an authenticated message.
 * @param maxRememberedNonces bound of the replay cache within one window.
 * @param maxHandshakeBytes bound of everything one handshake reads from a peer, all its replies together.
 * @param firstRequestTimeout how long the server waits for the whole first request of a new connection.
 * @param maxPendingConnections connections the server holds at once that have not yet sent a valid
 *     first request; a newer one displaces the oldest.
 * @param maxPendingPerAddress of those, how many one source address of another host may hold; its newer
 *     one displaces its oldest, so one address cannot crowd out the others. Connections from this host
 *     (loopback, or the address they connect to) are all its processes together and count only toward
 *     {@code maxPendingConnections}.
 * @param tls TLS 1.3 below the framing, for the server and the client; null for plain TCP.
 * @param allowUnauthenticated whether an engine may serve its side channel on an address other
 *     hosts reach although it proves nothing about its peers (no secret, no TLS requiring client
 *     certificates); without it such an engine refuses to start ({@link #authenticatesPeers}).
 */
public record SideChannelSettings(
        InetAddress bindAddress,
        int port,
        Duration connectTimeout,
        Duration readTimeout,
        Duration handshakeTimeout,
        Duration idleConnectionTimeout,
        int maxConnections,
        Duration engineTtl,
        WireLimits limits,
        CompatibilityMode compatibility,
        byte[] secret,
        Duration authenticationWindow,
        int maxRememberedNonces,
        long maxHandshakeBytes,
        Duration firstRequestTimeout,
        int maxPendingConnections,
        int maxPendingPerAddress,
        SideChannelTls tls,
        boolean allowUnauthenticated)
{
    /** Default of {@code maxHandshakeBytes}: 64 MiB, several times what 64 ranks of a large model advertise. */
    public static final long DEFAULT_MAX_HANDSHAKE_BYTES = 64L << 20;

    /** Validates the values and copies the secret. */
    public SideChannelSettings
    {
        requireNonNull(bindAddress, "bindAddress is null");
        requireNonNull(limits, "limits is null");
        requireNonNull(compatibility, "compatibility is null");
        secret = requireNonNull(secret, "secret is null").clone();
        check(port >= 0 && port <= 65_535, "port=%d is outside [0, 65535]", port);
        positive("connectTimeout", connectTimeout);
        positive("readTimeout", readTimeout);
        positive("handshakeTimeout", handshakeTimeout);
        positive("idleConnectionTimeout", idleConnectionTimeout);
        positive("engineTtl", engineTtl);
        positive("authenticationWindow", authenticationWindow);
        positive("firstRequestTimeout", firstRequestTimeout);
        check(maxConnections > 0, "maxConnections=%d is not positive", maxConnections);
        check(maxHandshakeBytes > 0, "maxHandshakeBytes=%d is not positive", maxHandshakeBytes);
        check(maxPendingConnections > 0, "maxPendingConnections=%d is not positive", maxPendingConnections);
        check(maxPendingPerAddress > 0 && maxPendingPerAddress <= maxPendingConnections,
                "maxPendingPerAddress=%d is outside [1, maxPendingConnections=%d]", maxPendingPerAddress, maxPendingConnections);
        check(maxRememberedNonces > 0, "maxRememberedNonces=%d is not positive", maxRememberedNonces);
        check(secret.length == 0 || secret.length >= MessageAuthenticator.MIN_SECRET_BYTES,
                "side channel secret of %d bytes is too short (expected: at least %d random bytes, or none)",
                secret.length, MessageAuthenticator.MIN_SECRET_BYTES);
    }

    /**
     * Tells whether the side channel proves who its peers are: a shared secret authenticates every
     * message, or TLS requires a certificate of every client. Without either, whoever reaches the port
     * reads the geometry, opens notification sessions and sends completions that free held requests.
     *
     * @return whether it does.
     */
    public boolean authenticatesPeers()
    {
        return secret.length > 0 || (tls != null && tls.clientAuth() == SideChannelTls.ClientAuth.REQUIRE);
    }

    private static void positive(String name, Duration value)
    {
        requireNonNull(value, name + " is null");
        check(!value.isNegative() && !value.isZero(), "%s=%s is not positive", name, value);
    }

    private static void check(boolean condition, String format, Object... args)
    {
        KvBridgeException.check(condition, ErrorCode.CONFIG_INVALID, format, args);
    }

    /**
     * Returns the shared secret.
     *
     * @return a copy; empty when messages are not authenticated.
     */
    @Override
    public byte[] secret()
    {
        return secret.clone();
    }

    /**
     * Creates the authenticator these settings describe. Each server and client gets its own, so
     * their replay caches and counters stay apart.
     *
     * @param clock wall clock for timestamps.
     * @return an authenticator with the secret, or one that accepts everything when there is none.
     */
    public MessageAuthenticator newAuthenticator(InstantSource clock)
    {
        return secret.length == 0 ? MessageAuthenticator.unauthenticated(limits)
                : MessageAuthenticator.withSecret(secret, authenticationWindow, maxRememberedNonces, clock, limits);
    }

    /**
     * Returns the defaults: loopback, a free port, 2 s to connect, 5 s per read, 10 s per handshake,
     * 30 s idle connections, 64 connections, a 10 minute engine TTL, strict compatibility, no secret,
     * 64 MiB per handshake, 1 s for a new connection's first request, 256 connections waiting for
     * it, 32 of them per source address, no TLS.
     *
     * @return a builder holding the defaults.
     */
    public static Builder builder()
    {
        return new Builder();
    }

    /**
     * Returns a builder starting from these settings.
     *
     * @return the builder.
     */
    public Builder toBuilder()
    {
        Builder builder = new Builder();
        builder.bindAddress = bindAddress;
        builder.port = port;
        builder.connectTimeout = connectTimeout;
        builder.readTimeout = readTimeout;
        builder.handshakeTimeout = handshakeTimeout;
        builder.idleConnectionTimeout = idleConnectionTimeout;
        builder.maxConnections = maxConnections;
        builder.engineTtl = engineTtl;
        builder.limits = limits;
        builder.compatibility = compatibility;
        builder.secret = secret.clone();
        builder.authenticationWindow = authenticationWindow;
        builder.maxRememberedNonces = maxRememberedNonces;
        builder.maxHandshakeBytes = maxHandshakeBytes;
        builder.firstRequestTimeout = firstRequestTimeout;
        builder.maxPendingConnections = maxPendingConnections;
        builder.maxPendingPerAddress = maxPendingPerAddress;
        builder.tls = tls;
        builder.allowUnauthenticated = allowUnauthenticated;
        return builder;
    }

    @Override
    public boolean equals(Object o)
    {
        return o instanceof SideChannelSettings other && bindAddress.equals(other.bindAddress) && port == other.port
                && connectTimeout.equals(other.connectTimeout) && readTimeout.equals(other.readTimeout)
                && handshakeTimeout.equals(other.handshakeTimeout) && idleConnectionTimeout.equals(other.idleConnectionTimeout)
                && maxConnections == other.maxConnections && engineTtl.equals(other.engineTtl) && limits.equals(other.limits)
                && compatibility == other.compatibility && Arrays.equals(secret, other.secret)
                && authenticationWindow.equals(other.authenticationWindow) && maxRememberedNonces == other.maxRememberedNonces
                && maxHandshakeBytes == other.maxHandshakeBytes && firstRequestTimeout.equals(other.firstRequestTimeout)
                && maxPendingConnections == other.maxPendingConnections && maxPendingPerAddress == other.maxPendingPerAddress
                && Objects.equals(tls, other.tls) && allowUnauthenticated == other.allowUnauthenticated;
    }

    @Override
    public int hashCode()
    {
        return Objects.hash(bindAddress, port, connectTimeout, readTimeout, handshakeTimeout, idleConnectionTimeout, maxConnections,
                engineTtl, limits, compatibility, Arrays.hashCode(secret), authenticationWindow, maxRememberedNonces, maxHandshakeBytes,
                firstRequestTimeout, maxPendingConnections, maxPendingPerAddress, tls, allowUnauthenticated);
    }

    @Override
    public String toString()
    {
        // the secret itself never appears in logs
        return "SideChannelSettings[bindAddress=" + bindAddress.getHostAddress() + ", port=" + port + ", connectTimeout=" + connectTimeout
                + ", readTimeout=" + readTimeout + ", handshakeTimeout=" + handshakeTimeout + ", idleConnectionTimeout=" + idleConnectionTimeout
                + ", maxConnections=" + maxConnections + ", engineTtl=" + engineTtl + ", limits=" + limits + ", compatibility=" + compatibility
                + ", authenticated=" + (secret.length > 0) + ", authenticationWindow=" + authenticationWindow
                + ", maxRememberedNonces=" + maxRememberedNonces + ", maxHandshakeBytes=" + maxHandshakeBytes + ", firstRequestTimeout="
                + firstRequestTimeout + ", maxPendingConnections=" + maxPendingConnections + ", maxPendingPerAddress=" + maxPendingPerAddress
                + ", tls=" + (tls == null ? "off" : "TLSv1.3 clientAuth=" + tls.clientAuth() + " verifyHostname=" + tls.verifyHostname())
                + ", allowUnauthenticated=" + allowUnauthenticated + "]";
    }

    /** Collects settings; every value starts at its default. */
    public static final class Builder
    {
        private InetAddress bindAddress = InetAddress.getLoopbackAddress();
        private int port;
        private Duration connectTimeout = Duration.ofSeconds(2);
        private Duration readTimeout = Duration.ofSeconds(5);
        private Duration handshakeTimeout = Duration.ofSeconds(10);
        private Duration idleConnectionTimeout = Duration.ofSeconds(30);
        private int maxConnections = 64;
        private Duration engineTtl = Duration.ofMinutes(10);
        private WireLimits limits = WireLimits.DEFAULT;
        private CompatibilityMode compatibility = CompatibilityMode.STRICT;
        private byte[] secret = new byte[0];
        private Duration authenticationWindow = Duration.ofSeconds(30);
        private int maxRememberedNonces = 65_536;
        private long maxHandshakeBytes = DEFAULT_MAX_HANDSHAKE_BYTES;
        private Duration firstRequestTimeout = Duration.ofSeconds(1);
        private int maxPendingConnections = 256;
        private int maxPendingPerAddress = 32;
        private SideChannelTls tls;
        private boolean allowUnauthenticated;

        private Builder()
        {
        }

        /**
         * Sets the address the server binds to.
         *
         * @param bindAddress the address.
         * @return this builder.
         */
        public Builder bindAddress(InetAddress bindAddress)
        {
            this.bindAddress = bindAddress;
            return this;
        }

        /**
         * Sets the port the server binds to.
         *
         * @param port the port, or 0 for a free one.
         * @return this builder.
         */
        public Builder port(int port)
        {
            this.port = port;
            return this;
        }

        /**
         * Sets the connect timeout.
         *
         * @param connectTimeout the timeout.
         * @return this builder.
         */
        public Builder connectTimeout(Duration connectTimeout)
        {
            this.connectTimeout = connectTimeout;
            return this;
        }

        /**
         * Sets the timeout of a single read.
         *
         * @param readTimeout the timeout.
         * @return this builder.
         */
        public Builder readTimeout(Duration readTimeout)
        {
            this.readTimeout = readTimeout;
            return this;
        }

        /**
         * Sets the deadline of a whole handshake.
         *
         * @param handshakeTimeout the deadline.
         * @return this builder.
         */
        public Builder handshakeTimeout(Duration handshakeTimeout)
        {
            this.handshakeTimeout = handshakeTimeout;
            return this;
        }

        /**
         * Sets how long the server keeps a silent connection.
         *
         * @param idleConnectionTimeout the timeout.
         * @return this builder.
         */
        public Builder idleConnectionTimeout(Duration idleConnectionTimeout)
        {
            this.idleConnectionTimeout = idleConnectionTimeout;
            return this;
        }

        /**
         * Sets how many connections the server serves at once.
         *
         * @param maxConnections the bound.
         * @return this builder.
         */
        public Builder maxConnections(int maxConnections)
        {
            this.maxConnections = maxConnections;
            return this;
        }

        /**
         * Sets how long an idle remote engine stays cached.
         *
         * @param engineTtl the time to live.
         * @return this builder.
         */
        public Builder engineTtl(Duration engineTtl)
        {
            this.engineTtl = engineTtl;
            return this;
        }

        /**
         * Sets the decoder bounds.
         *
         * @param limits the bounds.
         * @return this builder.
         */
        public Builder limits(WireLimits limits)
        {
            this.limits = limits;
            return this;
        }

        /**
         * Sets how a compatibility hash mismatch is handled.
         *
         * @param compatibility the mode.
         * @return this builder.
         */
        public Builder compatibility(CompatibilityMode compatibility)
        {
            this.compatibility = compatibility;
            return this;
        }

        /**
         * Sets the shared secret that turns on authentication.
         *
         * @param secret at least 16 random bytes, or empty for none.
         * @return this builder.
         */
        public Builder secret(byte[] secret)
        {
            this.secret = requireNonNull(secret, "secret is null").clone();
            return this;
        }

        /**
         * Sets the largest accepted clock difference of an authenticated message.
         *
         * @param authenticationWindow the window.
         * @return this builder.
         */
        public Builder authenticationWindow(Duration authenticationWindow)
        {
            this.authenticationWindow = authenticationWindow;
            return this;
        }

        /**
         * Sets the bound of the replay cache.
         *
         * @param maxRememberedNonces the bound.
         * @return this builder.
         */
        public Builder maxRememberedNonces(int maxRememberedNonces)
        {
            this.maxRememberedNonces = maxRememberedNonces;
            return this;
        }

        /**
         * Sets the bound of everything one handshake reads from a peer.
         *
         * @param maxHandshakeBytes the bound in bytes, all replies of one handshake together.
         * @return this builder.
         */
        public Builder maxHandshakeBytes(long maxHandshakeBytes)
        {
            this.maxHandshakeBytes = maxHandshakeBytes;
            return this;
        }

        /**
         * Sets how long the server waits for a new connection's whole first request.
         *
         * @param firstRequestTimeout the timeout.
         * @return this builder.
         */
        public Builder firstRequestTimeout(Duration firstRequestTimeout)
        {
            this.firstRequestTimeout = firstRequestTimeout;
            return this;
        }

        /**
         * Sets how many connections without a valid first request the server holds at once.
         *
         * @param maxPendingConnections the bound.
         * @return this builder.
         */
        public Builder maxPendingConnections(int maxPendingConnections)
        {
            this.maxPendingConnections = maxPendingConnections;
            return this;
        }

        /**
         * Sets how many of those one source address of another host may hold (this host's processes
         * share only {@code maxPendingConnections}).
         *
         * @param maxPendingPerAddress the bound.
         * @return this builder.
         */
        public Builder maxPendingPerAddress(int maxPendingPerAddress)
        {
            this.maxPendingPerAddress = maxPendingPerAddress;
            return this;
        }

        /**
         * Turns on TLS 1.3 for the server and the client; the shared secret, if any, still
         * authenticates every message inside it.
         *
         * @param tls the TLS settings, or null for plain TCP.
         * @return this builder.
         */
        public Builder tls(SideChannelTls tls)
        {
            this.tls = tls;
            return this;
        }

        /**
         * Lets an engine serve its side channel on an address other hosts reach without a secret or
         * TLS requiring client certificates; by default it refuses to start so. For networks where
         * every process that can reach the port is trusted.
         *
         * @param allow whether to allow it.
         * @return this builder.
         */
        public Builder allowUnauthenticated(boolean allow)
        {
            this.allowUnauthenticated = allow;
            return this;
        }

        /**
         * Builds the validated settings.
         *
         * @return the settings.
         * @throws KvBridgeException with {@link ErrorCode#CONFIG_INVALID} for an invalid value.
         */
        public SideChannelSettings build()
        {
            return new SideChannelSettings(bindAddress, port, connectTimeout, readTimeout, handshakeTimeout, idleConnectionTimeout,
                    maxConnections, engineTtl, limits, compatibility, secret, authenticationWindow, maxRememberedNonces, maxHandshakeBytes,
                    firstRequestTimeout, maxPendingConnections, maxPendingPerAddress, tls, allowUnauthenticated);
        }
    }
}
