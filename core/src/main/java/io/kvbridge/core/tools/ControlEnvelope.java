package io.kvbridge.core.tools;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.wire.MessageAuthenticator;
import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.time.Duration;
import java.time.InstantSource;

/**
 * The side channel's message envelope, for a tool's own request-reply connection (the two-host
 * bench's control link): with a shared secret each message carries an HMAC-SHA256 over a nonce and
 * a timestamp within a window, nonces are not accepted twice, and each reply is bound to its
 * request's nonce; without one, the envelope only wraps the message. What is opened is untrusted
 * bytes the caller decodes ({@link ControlMessage#decode}). Thread-safe.
 */
public final class ControlEnvelope
{
    private static final Duration WINDOW = Duration.ofMinutes(2);
    private static final int MAX_REMEMBERED_NONCES = 100_000;
    private static final byte[] NO_NONCE = new byte[0];

    /**
     * A message in or out of its envelope.
     *
     * @param bytes the envelope when sealed, the message inside when opened.
     * @param nonce the sender's nonce (empty without a secret): a reply names its request's.
     */
    public record Message(byte[] bytes, byte[] nonce)
    {
        /**
         * Creates a message.
         *
         * @param bytes the bytes.
         * @param nonce the nonce.
         */
        public Message
        {
            requireNonNull(bytes, "bytes is null");
            requireNonNull(nonce, "nonce is null");
        }
    }

    private final MessageAuthenticator authenticator;

    private ControlEnvelope(MessageAuthenticator authenticator)
    {
        this.authenticator = authenticator;
    }

    /**
     * {@return envelopes without a MAC: for a connection without a secret, and for the one reply a
     *     receiver can send to a request it could not authenticate, its refusal}
     */
    public static ControlEnvelope plain()
    {
        return new ControlEnvelope(MessageAuthenticator.unauthenticated(WireLimits.DEFAULT));
    }

    /**
     * Creates authenticated envelopes.
     *
     * @param secret the secret both ends hold, as a side channel secret file holds it.
     * @return the envelopes.
     * @throws KvBridgeException with {@link ErrorCode#CONFIG_INVALID} for a secret that is too short.
     */
    public static ControlEnvelope withSecret(byte[] secret)
    {
        return new ControlEnvelope(MessageAuthenticator.withSecret(secret, WINDOW, MAX_REMEMBERED_NONCES, InstantSource.system(), WireLimits.DEFAULT));
    }

    /** {@return whether messages are authenticated} */
    public boolean authenticated()
    {
        return authenticator.authenticated();
    }

    /**
     * Seals a request.
     *
     * @param content the request.
     * @return the envelope, and the nonce its reply must name.
     */
    public Message sealRequest(byte[] content)
    {
        MessageAuthenticator.Opened sealed = authenticator.seal(Direction.REQUEST, content, NO_NONCE);
        return new Message(sealed.content(), sealed.nonce());
    }

    /**
     * Opens a request.
     *
     * @param envelope the bytes received.
     * @return the request inside, and its nonce for the reply.
     * @throws KvBridgeException with {@link ErrorCode#AUTHENTICATION_FAILED} when its MAC, timestamp
     *     or nonce is refused, {@link ErrorCode#PROTOCOL_ERROR} when it is not an envelope.
     */
    public Message openRequest(byte[] envelope)
    {
        MessageAuthenticator.Opened opened = authenticator.open(Direction.REQUEST, envelope, NO_NONCE);
        return new Message(opened.content(), opened.nonce());
    }

    /**
     * Seals a reply.
     *
     * @param content the reply.
     * @param requestNonce the nonce of the request it answers.
     * @return the envelope.
     */
    public byte[] sealReply(byte[] content, byte[] requestNonce)
    {
        return authenticator.seal(Direction.REPLY, content, requestNonce).content();
    }

    /**
     * Opens a reply.
     *
     * @param envelope the bytes received.
     * @param requestNonce the nonce of the request it must answer.
     * @return the reply inside.
     * @throws KvBridgeException as {@link #openRequest} does, and when it answers another request.
     */
    public byte[] openReply(byte[] envelope, byte[] requestNonce)
    {
        return authenticator.open(Direction.REPLY, envelope, requestNonce).content();
    }
}
