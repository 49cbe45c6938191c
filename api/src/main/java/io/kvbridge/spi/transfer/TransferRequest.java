package io.kvbridge.spi.transfer;

/**
 * What one {@link TransferBackend#post} moves, named field by field so that no caller or transport
 * can swap two arrays or two counts. The caller owns the request and refills it for every post:
 * {@link #start} clears it and sets the operation, the other setters fill the rest, and after
 * {@code post} returns the request (and every array it names) may be refilled at once, so a hot
 * loop posts with one request and allocates nothing.
 *
 * <pre>{@code
 * request.start(TransferOp.WRITE)
 *         .local(myList, myIndices)
 *         .remote(theirList, theirIndices)
 *         .count(pairs)
 *         .notification(done)
 *         .grantKey(key);
 * long handle = backend.post(request);
 * }</pre>
 *
 * <p>The setters only store: every check (lists of the posting instance on the right sides, indices
 * in range, count fitting both index arrays, notification and key sizes) is the transport's, at
 * {@code post}, and a request missing a part is refused there. A transport reads the request during
 * {@code post} and keeps no reference to it or its arrays afterwards.
 *
 * <p>Not thread-safe: one request per posting thread.
 */
public final class TransferRequest
{
    /** The count of a request whose {@link #count(int)} was not called since {@link #start}. */
    public static final int NO_COUNT = -1;

    private TransferOp op;
    private PreparedList local;
    private int[] localIndices;
    private PreparedList remote;
    private int[] remoteIndices;
    private int count = NO_COUNT;
    private byte[] notification;
    private byte[] grantKey;

    /** Creates an empty request; fill it from {@link #start}. */
    public TransferRequest()
    {
    }

    /**
     * Starts a new request: sets the operation and clears every other part (no lists, no indices,
     * {@link #NO_COUNT}, no notification, no grant key), so nothing of the previous post carries over.
     *
     * @param op READ (remote to local) or WRITE (local to remote).
     * @return this request.
     */
    public TransferRequest start(TransferOp op)
    {
        this.op = op;
        this.local = null;
        this.localIndices = null;
        this.remote = null;
        this.remoteIndices = null;
        this.count = NO_COUNT;
        this.notification = null;
        this.grantKey = null;
        return this;
    }

    /**
     * Sets this instance's side: pair {@code i} uses descriptor {@code indices[i]} of {@code list}.
     *
     * @param list a list the posting instance prepared with {@link TransferBackend#prepareLocal}.
     * @param indices indices into {@code list}; read during the post only.
     * @return this request.
     */
    public TransferRequest local(PreparedList list, int[] indices)
    {
        this.local = list;
        this.localIndices = indices;
        return this;
    }

    /**
     * Sets the peer's side: pair {@code i} uses descriptor {@code indices[i]} of {@code list}.
     *
     * @param list a list the posting instance prepared with {@link TransferBackend#prepareRemote}.
     * @param indices indices into {@code list}; read during the post only.
     * @return this request.
     */
    public TransferRequest remote(PreparedList list, int[] indices)
    {
        this.remote = list;
        this.remoteIndices = indices;
        return this;
    }

    /**
     * Sets how many pairs move: the first {@code count} entries of both index arrays.
     *
     * @param count number of pairs; paired descriptors have equal lengths.
     * @return this request.
     */
    public TransferRequest count(int count)
    {
        this.count = count;
        return this;
    }

    /**
     * Sets bytes delivered to the peer after every byte of the transfer is in place.
     *
     * @param notification the bytes, or {@code null} for none (what {@link #start} leaves).
     * @return this request.
     */
    public TransferRequest notification(byte[] notification)
    {
        this.notification = notification;
        return this;
    }

    /**
     * Sets the key of the peer's grant ({@link TransferBackend#grant}) presented with the transfer.
     * A {@link Capability#GRANTED_ACCESS} peer checks every remote descriptor the transfer touches
     * against its grants under that key; a transport whose peers do not check ignores it.
     *
     * @param grantKey the key, or {@code null} for none (what {@link #start} leaves).
     * @return this request.
     */
    public TransferRequest grantKey(byte[] grantKey)
    {
        this.grantKey = grantKey;
        return this;
    }

    /** {@return the operation, or null before {@link #start}} */
    public TransferOp op()
    {
        return op;
    }

    /** {@return the local list, or null when not set} */
    public PreparedList local()
    {
        return local;
    }

    /** {@return the indices into the local list, or null when not set} */
    public int[] localIndices()
    {
        return localIndices;
    }

    /** {@return the peer's list, or null when not set} */
    public PreparedList remote()
    {
        return remote;
    }

    /** {@return the indices into the peer's list, or null when not set} */
    public int[] remoteIndices()
    {
        return remoteIndices;
    }

    /** {@return the number of pairs, or {@link #NO_COUNT} when not set} */
    public int count()
    {
        return count;
    }

    /** {@return the notification, or null for none} */
    public byte[] notification()
    {
        return notification;
    }

    /** {@return the grant key, or null for none} */
    public byte[] grantKey()
    {
        return grantKey;
    }

    @Override
    public String toString()
    {
        return "TransferRequest[op=" + op + ", local=" + local + ", remote=" + remote + ", count=" + count + ", notification="
                + (notification == null ? "none" : notification.length + " bytes") + ", grantKey=" + (grantKey == null ? "none" : grantKey.length + " bytes") + "]";
    }
}
