package io.kvbridge.backend.nixl.ffm;

import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.NotificationSink;
import io.kvbridge.spi.transfer.TransferOp;

/**
 * One NIXL agent with its UCX backend, reached only from the thread that opened it. Native handles
 * travel as {@code long} addresses; every failing status arrives as a
 * {@link io.kvbridge.spi.KvBridgeException} naming the C function, the status and the values involved.
 */
public interface NixlAgent extends AutoCloseable
{
    /**
     * Returns the agent's name, as peers and notifications know it.
     *
     * @return the name.
     */
    String name();

    /**
     * Registers one contiguous allocation with every backend that accepts its memory kind.
     *
     * @param kind host or device memory.
     * @param device device index (0 for host).
     * @param address first byte.
     * @param bytes length.
     */
    void registerMemory(MemoryKind kind, int device, long address, long bytes);

    /**
     * Deregisters an allocation exactly as registered.
     *
     * @param kind as registered.
     * @param device as registered.
     * @param address as registered.
     * @param bytes as registered.
     */
    void deregisterMemory(MemoryKind kind, int device, long address, long bytes);

    /**
     * Returns the agent's metadata blob: connection info and every registration made so far.
     *
     * @return opaque bytes.
     */
    byte[] localMetadata();

    /**
     * Loads a peer's blob (or merges it into what is known of that peer).
     *
     * @param blob the peer's {@link #localMetadata()}.
     * @return the peer's agent name.
     */
    String loadRemoteMetadata(byte[] blob);

    /**
     * Tells whether any metadata of a peer is loaded.
     *
     * @param peer the peer's agent name.
     * @return true when loaded.
     */
    boolean remoteMetadataLoaded(String peer);

    /**
     * Forgets a peer and disconnects from it; release its prepared lists first.
     *
     * @param peer the peer's agent name.
     * @return false when NIXL did not know the peer (already dropped).
     */
    boolean invalidateRemoteMetadata(String peer);

    /**
     * Prepares a list of local descriptors.
     *
     * @param kind memory kind.
     * @param device device index.
     * @param addresses descriptor addresses.
     * @param lengths descriptor lengths.
     * @param count descriptors to use.
     * @return the prepared-list handle.
     */
    long prepareLocal(MemoryKind kind, int device, long[] addresses, long[] lengths, int count);

    /**
     * Prepares a list of a peer's descriptors.
     *
     * @param peer the peer's agent name.
     * @param kind memory kind.
     * @param device device index.
     * @param addresses descriptor addresses.
     * @param lengths descriptor lengths.
     * @param count descriptors to use.
     * @return the prepared-list handle.
     */
    long prepareRemote(String peer, MemoryKind kind, int device, long[] addresses, long[] lengths, int count);

    /**
     * Releases a prepared list; requests already made from it stay valid.
     *
     * @param preparedList from a prepare call.
     */
    void releasePrepared(long preparedList);

    /**
     * Makes a transfer request pairing descriptors by index, with an optional notification.
     *
     * @param op READ or WRITE.
     * @param local local prepared list.
     * @param localIndices indices into it.
     * @param remote remote prepared list.
     * @param remoteIndices indices into it.
     * @param count pairs.
     * @param notification sent after the data, or null.
     * @return the request handle.
     */
    long makeRequest(TransferOp op, long local, int[] localIndices, long remote, int[] remoteIndices, int count, byte[] notification);

    /**
     * Posts a request, keeping the notification given when it was made.
     *
     * @param request handle.
     * @return true when it finished inside the call.
     */
    boolean postRequest(long request);

    /**
     * Polls a posted request; the call that first sees the data in place sends its notification.
     *
     * @param request handle.
     * @return true when done.
     */
    boolean pollRequest(long request);

    /**
     * Releases (cancelling if still running) and destroys a request.
     *
     * @param request handle.
     * @return false when NIXL could not cancel it yet; the handle stays valid, retry later.
     */
    boolean releaseRequest(long request);

    /**
     * Sends a notification without data.
     *
     * @param peer the peer's agent name.
     * @param message bytes.
     */
    void sendNotification(String peer, byte[] message);

    /**
     * Moves every notification received so far into a sink.
     *
     * @param sink receives sender and message copies.
     * @return the number moved.
     */
    int drainNotifications(NotificationSink sink);

    /** Destroys the backend and the agent; idempotent. Release requests and lists first. */
    @Override
    void close();
}
