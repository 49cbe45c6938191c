package io.kvbridge.backend.cudaipc;

import io.kvbridge.transport.libc.Libc;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Who may talk on a control socket. With the connection key the engine derives from its shared
 * secret, both ends prove they hold it: HMAC-SHA256 over a fresh nonce from each side and both
 * agent names, the client's proof first, so nothing is answered to a peer that has not proved it.
 * Without a key only what the kernel vouches for is left: a peer must run as the same user.
 * Either way the peer's pid ({@code SO_PEERCRED}) must be the one its hello or its metadata names.
 */
final class ControlAuth
{
    static final int NONCE_BYTES = 32;
    static final int MAC_BYTES = 32;
    private static final byte[] CLIENT_LABEL = "kvbridge cuda-ipc client proof\0".getBytes(StandardCharsets.UTF_8);
    private static final byte[] SERVER_LABEL = "kvbridge cuda-ipc server proof\0".getBytes(StandardCharsets.UTF_8);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final byte[] key;
    private final int uid;

    /** @param key the connection key, or empty to rely on the peer's user id. */
    ControlAuth(Optional<byte[]> key)
    {
        this.key = key.map(byte[]::clone).filter(k -> k.length > 0).orElse(null);
        this.uid = Libc.geteuid();
    }

    /** @return whether peers must prove the connection key. */
    boolean keyed()
    {
        return key != null;
    }

    /** @return this process's effective user id. */
    int uid()
    {
        return uid;
    }

    static byte[] nonce()
    {
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        return nonce;
    }

    /**
     * Computes one side's proof; all zeros without a key (then nobody checks it).
     *
     * @param server whether the server's proof (else the client's).
     */
    byte[] proof(boolean server, byte[] clientNonce, byte[] serverNonce, String client, String serverName)
    {
        if (key == null) {
            return new byte[MAC_BYTES];
        }
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(server ? SERVER_LABEL : CLIENT_LABEL);
            mac.update(clientNonce);
            mac.update(serverNonce);
            for (String name : new String[] {client, serverName}) {
                byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
                mac.update((byte) (bytes.length >>> 8));
                mac.update((byte) bytes.length);
                mac.update(bytes);
            }
            return mac.doFinal();
        }
        catch (GeneralSecurityException e) {
            throw new IllegalStateException("every JDK has HmacSHA256", e);
        }
    }

    /** @return whether a received proof is right; always true without a key. */
    boolean verify(byte[] received, boolean server, byte[] clientNonce, byte[] serverNonce, String client, String serverName)
    {
        if (key == null) {
            return true;
        }
        byte[] expected = proof(server, clientNonce, serverNonce, client, serverName);
        boolean equal = MessageDigest.isEqual(expected, received);
        Arrays.fill(expected, (byte) 0);
        return equal;
    }

    /**
     * Checks what the kernel says of a peer.
     *
     * @param peerUid its uid from {@code SO_PEERCRED}.
     * @param peerPid its pid from {@code SO_PEERCRED}.
     * @param expectedPid the pid it claims or its metadata names.
     * @return null when it passes, else why not.
     */
    String checkCredentials(int peerUid, int peerPid, int expectedPid)
    {
        if (peerPid <= 0 || peerPid != expectedPid) {
            return "the kernel says pid=" + peerPid + " where pid=" + expectedPid + " was claimed";
        }
        if (key == null && peerUid != uid) {
            return "it runs as uid=" + peerUid + ", not this process's uid=" + uid + ", and no shared secret is configured; run both engines as one "
                    + "user or give both the same shared secret";
        }
        return null;
    }
}
