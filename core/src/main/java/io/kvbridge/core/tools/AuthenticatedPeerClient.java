package io.kvbridge.core.tools;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.wire.ConnectionKeys;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.spi.KvBridgeException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * A peer that holds an engine's shared secret, for tools and tests that play such a peer (a flood
 * that proves a transport's connection key, a probe of what an engine publishes); engines never use
 * it. It asks the engine's side channel for one rank's published transport metadata with the same
 * authenticated handshake an engine's consumer runs: every reply is authenticated with the secret
 * and decoded under the default wire limits, and the engine checks this client exactly as it checks
 * an engine. It derives a transport's connection key from the secret as an engine does. It opens no
 * notification session, so it cannot seal notifications an engine would accept.
 */
public final class AuthenticatedPeerClient
{
    /**
     * What one rank of an engine publishes about its transport.
     *
     * @param engineId the engine's id.
     * @param transport the transport's name, e.g. {@code tcp}.
     * @param metadata the transport's metadata, as its {@code connect} takes it.
     */
    public record PublishedTransport(String engineId, String transport, byte[] metadata)
    {
        /** Checks and copies the values. */
        public PublishedTransport
        {
            requireNonNull(engineId, "engineId is null");
            requireNonNull(transport, "transport is null");
            metadata = requireNonNull(metadata, "metadata is null").clone();
        }

        /** {@return a copy of the transport's metadata} */
        @Override
        public byte[] metadata()
        {
            return metadata.clone();
        }
    }

    private final byte[] secret;
    private final SideChannelClient client;

    /**
     * Creates a client.
     *
     * @param secret the engines' shared side-channel secret; not empty.
     * @param timeout the deadline of connecting, of each read and of the whole handshake.
     * @throws KvBridgeException with {@code INVALID_ARGUMENT} when the secret is empty.
     */
    public AuthenticatedPeerClient(byte[] secret, Duration timeout)
    {
        requireNonNull(secret, "secret is null");
        requireNonNull(timeout, "timeout is null");
        KvBridgeException.checkArgument(secret.length > 0, "the secret is empty: an authenticated peer needs the engines' shared secret");
        this.secret = secret.clone();
        SideChannelSettings settings = SideChannelSettings.builder().secret(this.secret).handshakeTimeout(timeout).readTimeout(timeout)
                .connectTimeout(timeout).build();
        this.client = new SideChannelClient(settings, SideChannelClock.system());
    }

    /**
     * Fetches what one rank of an engine publishes about its transport.
     *
     * @param sideChannel the engine's side-channel address.
     * @param ppRank the rank's pipeline stage.
     * @param tpRank the rank's tensor-parallel index.
     * @return the rank's transport and its metadata.
     * @throws KvBridgeException when the engine cannot be reached, refuses this client, or sends what
     *     does not authenticate or decode (the message names which).
     */
    public PublishedTransport transport(InetSocketAddress sideChannel, int ppRank, int tpRank)
    {
        requireNonNull(sideChannel, "sideChannel is null");
        SideChannelClient.Fetched fetched = client.fetch(sideChannel, List.of(new RankKey(ppRank, tpRank))).getFirst();
        SideChannelSettings settings = client.settings();
        RankMetadata rank = MetadataCodec.decode(HandshakePayload.decode(fetched.payload(), settings.limits()).metadata(), settings.limits());
        return new PublishedTransport(rank.engineId(), rank.transport(), rank.transportMetadata());
    }

    /**
     * Derives the connection key a transport authenticates its connections with, as an engine
     * holding the same secret hands it to that transport.
     *
     * @param transport the transport's name, e.g. {@code tcp}.
     * @return the key, {@value ConnectionKeys#KEY_BYTES} bytes.
     */
    public byte[] connectionKey(String transport)
    {
        requireNonNull(transport, "transport is null");
        // the secret is never empty here, so a key is always derived
        return ConnectionKeys.derive(secret, transport).orElseThrow();
    }
}
