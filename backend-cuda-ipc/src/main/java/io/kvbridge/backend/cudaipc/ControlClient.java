package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.ControlChannel.INT;
import static io.kvbridge.backend.cudaipc.ControlChannel.SHORT;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcSockets;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.locks.LockSupport;

/**
 * The connecting side of the control protocol, on the caller's thread and within its deadline:
 * connect to a peer's socket, check the kernel's word on who serves it, authenticate both ways
 * ({@link ControlAuth}), and ask for descriptors under a grant key.
 *
 * <pre>
 * client: HELLO     type | version | primary u8 | pid i32 | client nonce[32] | name (u16 length)
 * server: CHALLENGE type | server nonce[32]                      (nothing else before the proof)
 * client: PROOF     type | HMAC(key, client label, nonces, client name, server name)
 * server: ACCEPT    type | HMAC(key, server label, nonces, client name, server name)
 * client: FD_REQUEST type | count u16 | grant key (u8 length) | region ids i32...
 * server: FDS       type | count u16 | (region id i32 | granted u8)... with SCM_RIGHTS
 * </pre>
 */
final class ControlClient
{
    private static final long CONNECT_RETRY_NANOS = 2_000_000;

    private ControlClient()
    {
    }

    /**
     * Connects and authenticates.
     *
     * @return the connected, authenticated socket, owned by the caller.
     * @throws KvBridgeException {@code PEER_UNKNOWN} naming what failed and the fix.
     */
    static int open(Wire wire, ControlAuth auth, String ownName, String peerSocket, int peerPid, String peerAgent, boolean primary, long deadlineNanos)
    {
        int fd = LibcSockets.socket(LibcSockets.AF_UNIX, LibcSockets.SOCK_SEQPACKET | LibcSockets.SOCK_NONBLOCK | LibcSockets.SOCK_CLOEXEC, 0, wire.errno);
        if (fd < 0) {
            throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "socket(AF_UNIX, SOCK_SEQPACKET) failed: errno " + wire.errno.last() + " ("
                    + Libc.strerror(wire.errno.last()) + ")");
        }
        boolean done = false;
        try {
            connect(wire, fd, peerSocket, peerAgent, deadlineNanos);
            int[] credentials = new int[2];
            LibcSockets.peerCredentials(fd, credentials, wire.scratch, wire.errno);
            String wrong = auth.checkCredentials(credentials[1], credentials[0], peerPid);
            if (wrong != null) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "refusing the control socket @" + peerSocket + " of peer '" + peerAgent + "' (pid "
                        + peerPid + " in its metadata): " + wrong);
            }
            handshake(wire, auth, fd, ownName, peerAgent, primary, deadlineNanos);
            done = true;
            return fd;
        }
        finally {
            if (!done) {
                Libc.close(fd, wire.errno);
            }
        }
    }

    private static void connect(Wire wire, int fd, String peerSocket, String peerAgent, long deadlineNanos)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = arena.allocate(LibcSockets.SOCKADDR_UN_BYTES);
            int length = LibcSockets.abstractAddress(address, peerSocket.getBytes(StandardCharsets.UTF_8));
            // a full backlog answers EAGAIN on a non-blocking Unix socket: retry until the deadline
            while (LibcSockets.connect(fd, address, length, wire.errno) < 0) {
                int errno = wire.errno.last();
                if ((errno != Errno.EAGAIN && errno != Errno.EINTR) || deadlineNanos - System.nanoTime() <= 0) {
                    throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "cannot reach peer '" + peerAgent + "' at @" + peerSocket + ": errno " + errno
                            + " (" + Libc.strerror(errno) + "); the peer must run on this node, in this network namespace, and be open");
                }
                LockSupport.parkNanos(CONNECT_RETRY_NANOS);
            }
        }
    }

    private static void handshake(Wire wire, ControlAuth auth, int fd, String ownName, String peerAgent, boolean primary, long deadlineNanos)
    {
        byte[] name = ownName.getBytes(StandardCharsets.UTF_8);
        byte[] clientNonce = ControlAuth.nonce();
        MemorySegment data = wire.data;
        data.set(JAVA_BYTE, 0, ControlChannel.HELLO);
        data.set(JAVA_BYTE, 1, ControlChannel.VERSION);
        data.set(JAVA_BYTE, 2, (byte) (primary ? 1 : 0));
        data.set(INT, 3, Libc.getpid());
        MemorySegment.copy(clientNonce, 0, data, JAVA_BYTE, 7, ControlAuth.NONCE_BYTES);
        data.set(SHORT, 39, (short) name.length);
        MemorySegment.copy(name, 0, data, JAVA_BYTE, ControlChannel.HELLO_BYTES, name.length);
        send(wire, fd, ControlChannel.HELLO_BYTES + name.length, peerAgent, "saying hello", deadlineNanos);
        receive(wire, fd, ControlChannel.CHALLENGE, 1 + ControlAuth.NONCE_BYTES, peerAgent, "its challenge", deadlineNanos);
        byte[] serverNonce = new byte[ControlAuth.NONCE_BYTES];
        MemorySegment.copy(data, JAVA_BYTE, 1, serverNonce, 0, serverNonce.length);
        byte[] proof = auth.proof(false, clientNonce, serverNonce, ownName, peerAgent);
        data.set(JAVA_BYTE, 0, ControlChannel.PROOF);
        MemorySegment.copy(proof, 0, data, JAVA_BYTE, 1, proof.length);
        send(wire, fd, 1 + ControlAuth.MAC_BYTES, peerAgent, "sending its proof", deadlineNanos);
        receive(wire, fd, ControlChannel.ACCEPT, 1 + ControlAuth.MAC_BYTES, peerAgent, "its acceptance", deadlineNanos);
        byte[] serverProof = new byte[ControlAuth.MAC_BYTES];
        MemorySegment.copy(data, JAVA_BYTE, 1, serverProof, 0, serverProof.length);
        if (!auth.verify(serverProof, true, clientNonce, serverNonce, ownName, peerAgent)) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peerAgent + "' did not prove that it holds the connection key; both engines "
                    + "must run with the same shared secret");
        }
    }

    private static void send(Wire wire, int fd, int length, String peerAgent, String what, long deadlineNanos)
    {
        String problem = wire.send(fd, length, null, 0, deadlineNanos);
        if (problem != null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, what + " to cuda-ipc peer '" + peerAgent + "' failed: " + problem);
        }
    }

    /** Waits for one message of a type and exact length; the caller reads it from {@code wire.data}. */
    private static void receive(Wire wire, int fd, byte type, int length, String peerAgent, String what, long deadlineNanos)
    {
        while (true) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peerAgent + "' did not send " + what + " in time; it may be stuck or closing");
            }
            wire.await(fd, Libc.POLLIN, left);
            long received = wire.receive(fd);
            wire.closeReceived();
            if (received == -1) {
                continue;
            }
            if (received <= 0) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peerAgent + "' closed the control connection instead of sending " + what
                        + ": it refused this process; both engines must run with the same shared secret (without one, as the same user)");
            }
            if (received != length || wire.data.get(JAVA_BYTE, 0) != type) {
                throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + peerAgent + "' sent " + received + " bytes of type "
                        + wire.data.get(JAVA_BYTE, 0) + " where " + what + " (type " + type + ", " + length + " bytes) was expected");
            }
            return;
        }
    }

    /**
     * Asks for the descriptors of some regions under a grant key, on an authenticated socket.
     *
     * @param grantKey what the peer's grants must be under; empty asks without one.
     * @param fdsOut receives each region's descriptor, owned by the caller, or -1 where not granted.
     */
    static void fetchFds(Wire wire, int fd, String peerAgent, byte[] grantKey, int[] ids, int from, int to, int[] fdsOut, long deadlineNanos)
    {
        int count = to - from;
        if (grantKey.length > io.kvbridge.spi.transfer.TransferBackend.MAX_GRANT_KEY_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "grant key of " + grantKey.length + " bytes exceeds "
                    + io.kvbridge.spi.transfer.TransferBackend.MAX_GRANT_KEY_BYTES);
        }
        MemorySegment data = wire.data;
        data.set(JAVA_BYTE, 0, ControlChannel.FD_REQUEST);
        data.set(SHORT, 1, (short) count);
        data.set(JAVA_BYTE, 3, (byte) grantKey.length);
        MemorySegment.copy(grantKey, 0, data, JAVA_BYTE, 4, grantKey.length);
        long idsAt = 4 + grantKey.length;
        for (int i = 0; i < count; i++) {
            data.set(INT, idsAt + 4L * i, ids[from + i]);
        }
        send(wire, fd, (int) idsAt + 4 * count, peerAgent, "asking for descriptors", deadlineNanos);
        while (true) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peerAgent + "' did not send the descriptors of " + count
                        + " regions in time; it may be stuck or closing");
            }
            wire.await(fd, Libc.POLLIN, left);
            long length = wire.receive(fd);
            if (length == -1) {
                continue;
            }
            if (length <= 0) {
                throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + peerAgent + "' closed the connection instead of sending descriptors");
            }
            try {
                takeFds(wire, peerAgent, ids, from, count, fdsOut, length);
                return;
            }
            finally {
                wire.closeReceived();
            }
        }
    }

    private static void takeFds(Wire wire, String peerAgent, int[] ids, int from, int count, int[] fdsOut, long length)
    {
        MemorySegment data = wire.data;
        if (length != 3 + 5L * count || data.get(JAVA_BYTE, 0) != ControlChannel.FDS || Short.toUnsignedInt(data.get(SHORT, 1)) != count) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + peerAgent + "' answered a descriptor request for " + count
                    + " regions with " + length + " bytes of another shape");
        }
        int granted = 0;
        for (int i = 0; i < count; i++) {
            if (data.get(INT, 3 + 5L * i) != ids[from + i]) {
                throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + peerAgent + "' answered for region " + data.get(INT, 3 + 5L * i)
                        + " where region " + ids[from + i] + " was asked");
            }
            granted += data.get(JAVA_BYTE, 7 + 5L * i) == 1 ? 1 : 0;
        }
        if (granted != wire.receivedFdCount) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "peer '" + peerAgent + "' granted " + granted + " descriptors but passed "
                    + wire.receivedFdCount);
        }
        int next = 0;
        for (int i = 0; i < count; i++) {
            if (data.get(JAVA_BYTE, 7 + 5L * i) == 1) {
                fdsOut[from + i] = wire.receivedFds[next];
                wire.receivedFds[next++] = -1;
            }
            else {
                fdsOut[from + i] = -1;
            }
        }
        wire.receivedFdCount = 0;
    }
}
