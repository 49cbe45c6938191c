package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpEndpoint;
import io.kvbridge.backend.ucx.ffm.UcpStatus;
import io.kvbridge.backend.ucx.ffm.UcpWorker;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.Inbox;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tagged messages between kvbridge instances: notifications (sent alone or after a transfer's data)
 * and the goodbye a closing instance sends. Each message starts with the sender's instance id and
 * agent name; received bytes are untrusted. Messages are received one at a time, so notifications
 * keep their arrival order.
 *
 * <p>Threads: owner thread only, except the constructor.
 */
final class UcxMessaging
{
    private static final Logger LOG = LoggerFactory.getLogger(UcxMessaging.class);

    /** Largest notification a transfer or {@code notify()} may carry. */
    static final int MAX_NOTIFICATION_BYTES = 64 * 1024;

    // tagged messages between kvbridge instances: "KVBR" in the high half, the kind in the low half
    private static final long TAG_PREFIX = 0x4B56425200000000L;
    private static final long TAG_PREFIX_MASK = 0xFFFFFFFF00000000L;
    static final long TAG_NOTIFY = TAG_PREFIX | 1;
    static final long TAG_BYE = TAG_PREFIX | 2;
    private static final ValueLayout.OfLong WIRE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort WIRE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final int HEADER_BYTES = 10;
    private static final long RECEIVE_LIMIT_BYTES = 16L << 20;
    private static final int PROBES_PER_ROUND = 64;

    private final String agentName;
    private final byte[] senderHeader;
    private final UcxWorker worker;
    private final UcxEndpoints endpoints;
    private final Inbox inbox;

    // owner thread only
    private final List<PendingSend> pendingSends = new ArrayList<>();
    private long receiveRequest;
    private MemorySegment receiveBuffer;
    private Arena receiveArena;
    private long receiveTag;
    private long receiveLength;

    private record PendingSend(long request, MemorySegment buffer, UcxPeer peer, String what)
    {
    }

    UcxMessaging(String agentName, long instanceId, UcxWorker worker, UcxEndpoints endpoints, Inbox inbox)
    {
        this.agentName = agentName;
        this.worker = worker;
        this.endpoints = endpoints;
        this.inbox = inbox;
        byte[] name = agentName.getBytes(StandardCharsets.UTF_8);
        if (name.length == 0 || name.length > UcxMetadata.MAX_NAME_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "agent name '" + agentName + "' is " + name.length
                    + " UTF-8 bytes long (expected: 1 to " + UcxMetadata.MAX_NAME_BYTES + ")");
        }
        this.senderHeader = new byte[HEADER_BYTES + name.length];
        MemorySegment header = MemorySegment.ofArray(senderHeader);
        header.set(WIRE_LONG, 0, instanceId);
        header.set(WIRE_SHORT, 8, (short) name.length);
        MemorySegment.copy(name, 0, header, ValueLayout.JAVA_BYTE, HEADER_BYTES, name.length);
    }

    /**
     * Fills a buffer with a message: this instance's header, then the payload.
     *
     * @return the buffer, to give back with {@link #give} once the send completed.
     */
    MemorySegment message(byte[] payload, int payloadLength)
    {
        MemorySegment buffer = worker.buffers().take(senderHeader.length + payloadLength);
        MemorySegment.copy(senderHeader, 0, buffer, ValueLayout.JAVA_BYTE, 0, senderHeader.length);
        MemorySegment.copy(payload, 0, buffer, ValueLayout.JAVA_BYTE, senderHeader.length, payloadLength);
        return buffer;
    }

    /** @return the bytes of a message with a payload of {@code payloadLength} bytes. */
    int messageLength(int payloadLength)
    {
        return senderHeader.length + payloadLength;
    }

    void give(MemorySegment buffer)
    {
        worker.buffers().give(buffer);
    }

    /** Sends a message whose completion nobody waits for, such as a notification or goodbye. */
    void send(UcxPeer peer, long tag, byte[] payload, int payloadLength, String what)
    {
        if (peer.endpoint == 0) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, what + " to peer '" + peer.name() + "' not sent: its endpoint is closed");
        }
        MemorySegment buffer = message(payload, payloadLength);
        long request = UcpEndpoint.tagSendNbx(peer.endpoint, buffer, messageLength(payloadLength), tag, worker.emptyParam());
        if (request == 0) {
            give(buffer);
        }
        else if (UcpStatus.isError(request)) {
            give(buffer);
            byte status = UcpStatus.statusOf(request);
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, what + " to peer '" + peer.name() + "' failed: "
                    + UcpStatus.describeFailure("ucp_tag_send_nbx", status), UcpStatus.error("ucp_tag_send_nbx", status));
        }
        else {
            peer.pendingSends++;
            pendingSends.add(new PendingSend(request, buffer, peer, what));
        }
    }

    /** Ends the sends UCX has completed; each round. */
    boolean advanceSends()
    {
        boolean progressed = false;
        for (int i = pendingSends.size() - 1; i >= 0; i--) {
            PendingSend send = pendingSends.get(i);
            byte status = UcpWorker.requestStatus(send.request());
            if (status == UcpStatus.IN_PROGRESS) {
                continue;
            }
            UcpWorker.requestFree(send.request());
            give(send.buffer());
            send.peer().pendingSends--;
            pendingSends.remove(i);
            progressed = true;
            if (status != UcpStatus.OK && status != UcpStatus.ERR_CANCELED) {
                LOG.debug("{} to peer '{}' failed: {}", send.what(), send.peer().name(), UcpStatus.statusString(status));
            }
        }
        return progressed;
    }

    /** @return true while sends are in flight. */
    boolean sending()
    {
        return !pendingSends.isEmpty();
    }

    /** @return true while sends or a receive are in flight. */
    boolean busy()
    {
        return !pendingSends.isEmpty() || receiveRequest != 0;
    }

    /** Receives what arrived, one message at a time; each round. */
    boolean receive()
    {
        boolean received = false;
        if (receiveRequest != 0) {
            byte status = UcpWorker.requestStatus(receiveRequest);
            if (status == UcpStatus.IN_PROGRESS) {
                return false;
            }
            UcpWorker.requestFree(receiveRequest);
            receiveRequest = 0;
            if (status == UcpStatus.OK) {
                deliver(receiveTag, receiveBuffer, receiveLength);
            }
            releaseReceiveBuffer();
            received = true;
        }
        MemorySegment tagInfo = worker.tagInfo();
        for (int n = 0; n < PROBES_PER_ROUND; n++) {
            long message = UcpWorker.tagProbe(worker.worker(), TAG_PREFIX, TAG_PREFIX_MASK, tagInfo);
            if (message == 0) {
                break;
            }
            received = true;
            receiveTag = UcpWorker.tagInfoSenderTag(tagInfo);
            receiveLength = UcpWorker.tagInfoLength(tagInfo);
            if (receiveLength <= NativeBuffers.MAX_BYTES) {
                receiveBuffer = worker.buffers().take(receiveLength);
            }
            else {
                // larger than any message kvbridge sends: receive it to drain UCX, then drop it
                receiveArena = Arena.ofConfined();
                receiveBuffer = receiveArena.allocate(Math.min(receiveLength, RECEIVE_LIMIT_BYTES));
            }
            long request = UcpWorker.tagMsgRecvNbx(worker.worker(), receiveBuffer, Math.min(receiveLength, receiveBuffer.byteSize()), message,
                    worker.emptyParam());
            if (request != 0 && !UcpStatus.isError(request)) {
                // finish this message before probing the next: notifications keep their arrival order
                receiveRequest = request;
                break;
            }
            if (request == 0) {
                deliver(receiveTag, receiveBuffer, receiveLength);
            }
            else {
                LOG.warn("receiving a message on '{}' failed: {}", agentName, UcpStatus.statusString(UcpStatus.statusOf(request)));
            }
            releaseReceiveBuffer();
        }
        return received;
    }

    private void releaseReceiveBuffer()
    {
        if (receiveArena != null) {
            receiveArena.close();
            receiveArena = null;
        }
        else if (receiveBuffer != null) {
            give(receiveBuffer);
        }
        receiveBuffer = null;
    }

    /** Handles a message from a peer; its bytes are untrusted. */
    private void deliver(long tag, MemorySegment buffer, long length)
    {
        if (length < HEADER_BYTES || length > NativeBuffers.MAX_BYTES) {
            LOG.warn("'{}' dropped a malformed message: length={}", agentName, length);
            return;
        }
        long sender = buffer.get(WIRE_LONG, 0);
        int nameLength = Short.toUnsignedInt(buffer.get(WIRE_SHORT, 8));
        if (nameLength == 0 || HEADER_BYTES + nameLength > length) {
            LOG.warn("'{}' dropped a malformed message: name length={} in {} bytes", agentName, nameLength, length);
            return;
        }
        String name = new String(buffer.asSlice(HEADER_BYTES, nameLength).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        if (tag == TAG_NOTIFY) {
            inbox.add(name, buffer.asSlice(HEADER_BYTES + nameLength, length - HEADER_BYTES - nameLength).toArray(ValueLayout.JAVA_BYTE));
        }
        else if (tag == TAG_BYE) {
            endpoints.peerClosed(sender);
        }
        else {
            LOG.warn("'{}' dropped a message with unknown tag 0x{}", agentName, Long.toHexString(tag));
        }
    }

    /** Tells every peer that can still be reached that this instance is going, so its transfers to it fail instead of hanging. */
    void sayGoodbye()
    {
        for (UcxPeer peer : endpoints.endpointPeers()) {
            if (!peer.failed && peer.endpoint != 0) {
                try {
                    send(peer, TAG_BYE, new byte[0], 0, "goodbye");
                }
                catch (KvBridgeException e) {
                    LOG.debug("goodbye to '{}' failed: {}", peer.name(), e.getMessage());
                }
            }
            endpoints.retire(peer);
        }
    }

    /** Abandons the sends and the receive UCX did not finish in time at shutdown. */
    void cutOff()
    {
        for (PendingSend send : pendingSends) {
            UcpWorker.requestFree(send.request());
        }
        pendingSends.clear();
        if (receiveRequest != 0) {
            UcpWorker.requestFree(receiveRequest);
            receiveRequest = 0;
        }
        if (receiveArena != null) {
            receiveArena.close();
            receiveArena = null;
        }
    }
}
