package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.ControlChannel.ACCEPT;
import static io.kvbridge.backend.cudaipc.ControlChannel.CHALLENGE;
import static io.kvbridge.backend.cudaipc.ControlChannel.FDS;
import static io.kvbridge.backend.cudaipc.ControlChannel.HELLO;
import static io.kvbridge.backend.cudaipc.ControlChannel.HELLO_BYTES;
import static io.kvbridge.backend.cudaipc.ControlChannel.INT;
import static io.kvbridge.backend.cudaipc.ControlChannel.PROOF;
import static io.kvbridge.backend.cudaipc.ControlChannel.SHORT;
import static io.kvbridge.backend.cudaipc.ControlChannel.VERSION;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.kvbridge.backend.cudaipc.ControlAdmission.Pending;
import io.kvbridge.spi.transfer.TransferBackend;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The listening side of the control protocol: the handshake ({@link ControlClient} shows the messages): a hello
 * is checked against the kernel's credentials and answered with a nonce only; a proof is checked
 * and answered with the server's own; a descriptor request is answered under the peer's grants. A refusal is returned as text for the instance's counts and
 * log; the peer is told nothing, its connection is closed.
 *
 * <p>Threads: the control channel's thread.
 */
final class ServerHandshake
{
    private static final long SEND_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(2);

    private ServerHandshake()
    {
    }

    /** @return why the hello is refused, or null when the challenge went out. */
    static String hello(Wire wire, Pending connection, int length, ControlAuth auth, ControlEvents events)
    {
        MemorySegment data = wire.data;
        if (length < HELLO_BYTES || data.get(JAVA_BYTE, 0) != HELLO || data.get(JAVA_BYTE, 1) != VERSION) {
            return "its first message (" + length + " bytes, type " + data.get(JAVA_BYTE, 0) + ") is not a version " + VERSION + " hello";
        }
        int pid = data.get(INT, 3);
        int nameLength = Short.toUnsignedInt(data.get(SHORT, 39));
        if (nameLength == 0 || nameLength > CudaIpcMetadata.MAX_NAME_BYTES || HELLO_BYTES + nameLength != length) {
            return "its hello names an agent of " + nameLength + " bytes in a message of " + length;
        }
        String credentialProblem = auth.checkCredentials(connection.uid, connection.pid, pid);
        if (credentialProblem != null) {
            return credentialProblem;
        }
        byte[] name = new byte[nameLength];
        MemorySegment.copy(data, JAVA_BYTE, HELLO_BYTES, name, 0, nameLength);
        String agent = new String(name, StandardCharsets.UTF_8);
        int known = events.knownPid(agent);
        if (known != -1 && known != pid) {
            return "it says it is agent '" + agent + "', whose metadata names pid " + known + ", but it is pid " + pid;
        }
        connection.clientNonce = new byte[ControlAuth.NONCE_BYTES];
        MemorySegment.copy(data, JAVA_BYTE, 7, connection.clientNonce, 0, ControlAuth.NONCE_BYTES);
        connection.serverNonce = ControlAuth.nonce();
        connection.primary = data.get(JAVA_BYTE, 2) == 1;
        connection.agent = agent;
        data.set(JAVA_BYTE, 0, CHALLENGE);
        MemorySegment.copy(connection.serverNonce, 0, data, JAVA_BYTE, 1, ControlAuth.NONCE_BYTES);
        String problem = wire.send(connection.fd, 1 + ControlAuth.NONCE_BYTES, null, 0, System.nanoTime() + SEND_DEADLINE_NANOS);
        return problem == null ? null : "sending its challenge failed: " + problem;
    }

    /** @return why the proof is refused, or null when the connection is established. */
    static String proof(Wire wire, Pending connection, int length, ControlAuth auth, String agentName)
    {
        MemorySegment data = wire.data;
        if (length != 1 + ControlAuth.MAC_BYTES || data.get(JAVA_BYTE, 0) != PROOF) {
            return "it answered the challenge with " + length + " bytes of type " + data.get(JAVA_BYTE, 0);
        }
        byte[] received = new byte[ControlAuth.MAC_BYTES];
        MemorySegment.copy(data, JAVA_BYTE, 1, received, 0, received.length);
        if (!auth.verify(received, false, connection.clientNonce, connection.serverNonce, connection.agent, agentName)) {
            return "agent '" + connection.agent + "' did not prove that it holds the connection key (a different or no shared secret)";
        }
        byte[] answer = auth.proof(true, connection.clientNonce, connection.serverNonce, connection.agent, agentName);
        data.set(JAVA_BYTE, 0, ACCEPT);
        MemorySegment.copy(answer, 0, data, JAVA_BYTE, 1, answer.length);
        String problem = wire.send(connection.fd, 1 + ControlAuth.MAC_BYTES, null, 0, System.nanoTime() + SEND_DEADLINE_NANOS);
        if (problem != null) {
            return "sending its acceptance failed: " + problem;
        }
        return null;
    }

    /**
     * Answers an authenticated peer's descriptor request: a descriptor for each region a live grant
     * under the presented key lies in, none for the others.
     *
     * @return why the connection must go, or null.
     */
    static String answerFdRequest(Wire wire, int fd, String peer, int length, byte[] keyScratch, ControlEvents events)
    {
        MemorySegment data = wire.data;
        int count = length >= 4 ? Short.toUnsignedInt(data.get(SHORT, 1)) : -1;
        int keyLength = length >= 4 ? Byte.toUnsignedInt(data.get(JAVA_BYTE, 3)) : -1;
        if (count < 0 || count > Wire.MAX_FDS || keyLength > TransferBackend.MAX_GRANT_KEY_BYTES || length != 4 + keyLength + 4 * count) {
            return "a descriptor request of " + length + " bytes asks for " + count + " regions under a key of " + keyLength + " bytes (at most "
                    + Wire.MAX_FDS + " regions, " + TransferBackend.MAX_GRANT_KEY_BYTES + " key bytes)";
        }
        MemorySegment.copy(data, JAVA_BYTE, 4, keyScratch, 0, keyLength);
        int[] ids = new int[count];
        int[] granted = new int[count];
        int grantedCount = 0;
        for (int i = 0; i < count; i++) {
            ids[i] = data.get(INT, 4L + keyLength + 4L * i);
        }
        for (int i = 0; i < count; i++) {
            int exported = events.exportedFd(ids[i], keyScratch, keyLength, peer);
            data.set(INT, 3 + 5L * i, ids[i]);
            data.set(JAVA_BYTE, 7 + 5L * i, (byte) (exported >= 0 ? 1 : 0));
            if (exported >= 0) {
                granted[grantedCount++] = exported;
            }
        }
        data.set(JAVA_BYTE, 0, FDS);
        data.set(SHORT, 1, (short) count);
        String problem = wire.send(fd, 3 + 5 * count, granted, grantedCount, System.nanoTime() + SEND_DEADLINE_NANOS);
        return problem == null ? null : "answering its descriptor request failed: " + problem;
    }
}
