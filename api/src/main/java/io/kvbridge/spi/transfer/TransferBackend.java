package io.kvbridge.spi.transfer;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * A transport instance: the prepared-descriptor model every fast transport uses.
 *
 * <ol>
 *   <li>{@link #register} each physical allocation once;</li>
 *   <li>exchange {@link #localMetadata()} with peers over a side channel and {@link #connect} to them;</li>
 *   <li>{@link #prepareLocal} and {@link #prepareRemote} descriptor lists once;</li>
 *   <li>{@link #post} READs and WRITEs that pair descriptors by index, then poll {@link #status} and
 *       {@link #release} the handle;</li>
 *   <li>{@link #drainNotifications} to receive what peers attached to their transfers.</li>
 * </ol>
 *
 * <p><b>Threading.</b> Every method may be called from any thread. Implementations serialise their
 * native work (on an owner thread, or under a lock); {@link #post} returns once the transfer has
 * started and never waits for a peer. A library may move the bytes inside the post itself (NIXL's
 * UCX backend does for a write within one host), and then the post returns after them.
 *
 * <p><b>Checking.</b> Every descriptor of a prepared list lies inside an allocation registered on
 * the side that owns it, checked before any byte moves; otherwise {@code DESCRIPTOR_OUT_OF_RANGE}
 * and nothing is copied. Index arrays are checked against their lists at {@link #post}.
 *
 * <p><b>Notifications.</b> A notification attached to a transfer reaches the peer only after every
 * byte of the transfer is in place; a failed transfer delivers no notification.
 *
 * <p><b>Closing.</b> {@link #close()} releases every handle, prepared list, peer and registration;
 * it is idempotent. Other methods then throw {@code CLOSED}.
 */
public interface TransferBackend extends AutoCloseable
{
    /** What {@link #grant} returns from a transport that does not check peer accesses against grants. */
    long NO_GRANT = 0;

    /** The longest key a grant may have. */
    int MAX_GRANT_KEY_BYTES = 64;

    /**
     * Returns the transport's name (its factory's).
     *
     * @return the name, such as {@code local}.
     */
    String name();

    /**
     * Returns this instance's agent name, as peers see it.
     *
     * @return the agent name.
     */
    String agentName();

    /**
     * Registers an allocation so its bytes can be moved. Each physical range is registered once.
     *
     * @param allocation memory the caller owns and keeps alive until {@link #deregister}.
     * @throws KvBridgeException {@code ALREADY_REGISTERED} when it overlaps a registered one,
     *     {@code MEMORY_KIND_UNSUPPORTED} when the transport cannot move that kind of memory.
     */
    void register(Allocation allocation);

    /**
     * Removes a registration. Prepared lists that reference it become unusable.
     *
     * @param allocation exactly as registered.
     * @throws KvBridgeException {@code NOT_REGISTERED} when it is not registered.
     */
    void deregister(Allocation allocation);

    /**
     * Allocates memory in the form this transport moves fastest and registers it.
     *
     * @param bytes size.
     * @param kind memory kind.
     * @param device device index (0 for host).
     * @return the registered allocation, owned by the transport and freed by {@link #close()}.
     * @throws KvBridgeException {@code UNSUPPORTED} unless the transport reports
     *     {@link Capability#TRANSPORT_ALLOCATION}.
     */
    default Allocation allocate(long bytes, MemoryKind kind, int device)
    {
        throw new KvBridgeException(ErrorCode.UNSUPPORTED, name() + " does not allocate memory itself; allocate it and call register()");
    }

    /**
     * Copies host bytes into memory registered with this instance (device memory included) and
     * returns once they are in place. For an engine that fills or inspects its cache from the CPU
     * (a test, a demo, a warm-up), not for moving blocks between peers: a transport may run these
     * copies one at a time on the thread that does its native work.
     *
     * <p>The default refuses: a transport that moves only host memory leaves the engine to write
     * the memory itself.
     *
     * @param source host memory off the Java heap; all of it is copied.
     * @param destination an allocation registered with this instance, or returned by {@link #allocate}.
     * @param offset where in {@code destination} the first byte goes.
     * @throws KvBridgeException {@code UNSUPPORTED} when the transport does not copy for the engine;
     *     {@code NOT_REGISTERED} when the range lies in no registration of this instance;
     *     {@code DESCRIPTOR_OUT_OF_RANGE} when it runs past the end of {@code destination};
     *     {@code INVALID_ARGUMENT} for a heap segment or a negative offset; {@code TRANSFER_FAILED}
     *     or {@code DEADLINE_EXCEEDED} when the copy failed or did not end in time.
     */
    default void copyFromHost(MemorySegment source, Allocation destination, long offset)
    {
        throw new KvBridgeException(ErrorCode.UNSUPPORTED, name() + " does not copy between host memory and its registrations; write host memory directly");
    }

    /**
     * Copies bytes of memory registered with this instance (device memory included) into host
     * memory and returns once they are there; the counterpart of {@link #copyFromHost}.
     *
     * @param source an allocation registered with this instance, or returned by {@link #allocate}.
     * @param offset where in {@code source} the first byte is read.
     * @param destination host memory off the Java heap; all of it is written.
     * @throws KvBridgeException as {@link #copyFromHost} does.
     */
    default void copyToHost(Allocation source, long offset, MemorySegment destination)
    {
        throw new KvBridgeException(ErrorCode.UNSUPPORTED, name() + " does not copy between host memory and its registrations; read host memory directly");
    }

    /**
     * Returns what a peer needs to connect to this instance and address its registered memory.
     * Call again after registering more memory.
     *
     * @return opaque bytes, owned by the caller.
     */
    byte[] localMetadata();

    /**
     * Connects to a peer, or refreshes a connected peer's metadata.
     *
     * @param peerMetadata bytes the peer's {@link #localMetadata()} returned; untrusted.
     * @return the peer.
     * @throws KvBridgeException {@code PROTOCOL_ERROR} for malformed metadata, {@code PEER_UNKNOWN}
     *     when the peer cannot be reached.
     */
    Peer connect(byte[] peerMetadata);

    /**
     * Forgets a peer: its prepared lists become unusable. In-flight transfers to it fail or finish.
     *
     * @param peer a peer of this instance.
     */
    void disconnect(Peer peer);

    /**
     * Prepares a list of local descriptors.
     *
     * @param descriptors each inside a registered allocation of the list's kind and device.
     * @return the prepared list.
     */
    PreparedList prepareLocal(DescriptorList descriptors);

    /**
     * Prepares a list of a peer's descriptors.
     *
     * @param peer a connected peer.
     * @param descriptors each inside memory the peer registered.
     * @return the prepared list.
     */
    PreparedList prepareRemote(Peer peer, DescriptorList descriptors);

    /**
     * Releases a prepared list. Transfers already posted with it are not affected.
     *
     * @param list a list this instance prepared.
     */
    void releasePrepared(PreparedList list);

    /**
     * Lets peers that present {@code key} with their transfers touch descriptors of a local list
     * until {@link #revoke}: with {@code READ} they may read {@code local[indices[i]]} for
     * {@code i < count}, with {@code WRITE} write it. Several grants may share one key (one per
     * region a request's blocks lie in). A {@link Capability#GRANTED_ACCESS} transport refuses every
     * peer access that no live grant covers. The grant keeps the descriptors' ranges: releasing the
     * list does not end it, and neither does deregistering the memory, so revoke first.
     *
     * <p>The default grants nothing and returns {@link #NO_GRANT}: a transport without
     * {@code GRANTED_ACCESS} lets a connected peer reach whatever this instance registered.
     *
     * @param key what the peer presents; 1 to {@value #MAX_GRANT_KEY_BYTES} bytes, copied. Whoever
     *     holds it reaches the granted memory, so it travels only to the peer meant to.
     * @param access the operation peers may post against these descriptors.
     * @param local a list this instance prepared with {@link #prepareLocal}.
     * @param indices indices into {@code local}.
     * @param count how many indices are granted.
     * @return a handle for {@link #revoke}, never reused by this instance; {@link #NO_GRANT} when the
     *     transport does not check grants.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for a bad key, {@code INDEX_OUT_OF_RANGE}
     *     for an index outside the list, {@code FOREIGN_HANDLE} for another instance's list.
     */
    default long grant(byte[] key, TransferOp access, PreparedList local, int[] indices, int count)
    {
        return NO_GRANT;
    }

    /**
     * Ends a grant. When it returns no peer access starts under it any more; on a transport whose
     * {@link #writeStopOnRevoke()} is {@link WriteStop#ON_RETURN}, accesses it admitted have finished
     * or their peer was cut off too, so the memory may be reused at once. Idempotent;
     * {@link #NO_GRANT} is ignored.
     *
     * @param grant a handle from {@link #grant}.
     * @throws KvBridgeException {@code DEADLINE_EXCEEDED} from an {@code ON_RETURN} transport when an
     *     admitted access still runs and could not be cut off in time: the memory must not be reused
     *     until the peer proves it stopped.
     */
    default void revoke(long grant)
    {
    }

    /**
     * Tells what a returning {@link #revoke} proves about peers' writes into the granted memory.
     * The default, for a transport that does not check grants or cannot stop an admitted write, is
     * {@link WriteStop#AFTER_PROOF}.
     *
     * @return {@link WriteStop#ON_RETURN} when no write admitted under a revoked grant lands after
     *     the revoke returned.
     */
    default WriteStop writeStopOnRevoke()
    {
        return WriteStop.AFTER_PROOF;
    }

    /**
     * Proof that a peer can no longer write this instance's memory because its process ended: what
     * releases the blocks a consumer quarantined for that peer's writes when the peer never answers
     * (see {@link WriteStop#AFTER_PROOF}). Only a transport that knows a peer's process for certain
     * can answer, one whose peers run on this host and whose pid the kernel vouched for (through
     * {@code SO_PEERCRED}); a pid a peer merely claims proves nothing. Called rarely, from the
     * engine's worker thread; must not block.
     *
     * <p>The default proves nothing and returns null.
     *
     * @param peerAgent the peer's agent name, as in its metadata and its notifications.
     * @return the proof, in words naming the process and how its end is known, or null when there is none.
     */
    default String writerExited(String peerAgent)
    {
        return null;
    }

    /**
     * Tells what a returning {@link #release} of a transfer still in progress proves about bytes
     * it would land in this instance's memory (a READ's destination). The default is
     * {@link WriteStop#AFTER_PROOF}: the caller then keeps the handle and the memory until the
     * transfer's status ends, and releases it after.
     *
     * @return {@link WriteStop#ON_RETURN} when a released transfer lands no byte after the release returned.
     */
    default WriteStop writeStopOnRelease()
    {
        return WriteStop.AFTER_PROOF;
    }

    /**
     * Starts a transfer that pairs {@code local[localIndices[i]]} with {@code remote[remoteIndices[i]]}
     * for {@code i < count}, as the request names them, presenting its grant key (if any) to the
     * peer. Returns at once; the request and its arrays may be refilled when it returns. A
     * {@link Capability#COALESCING} transport moves a run of pairs contiguous on both sides as one
     * operation ({@link #operations}). A {@link Capability#GRANTED_ACCESS} peer checks every
     * descriptor of the remote list the transfer touches against its grants under the key; when one
     * is not covered the transfer fails with {@code NOT_GRANTED} and the peer's memory is untouched.
     * A transport whose peers do not check ignores the key.
     *
     * @param request what to move, filled by the caller ({@link TransferRequest#start} first); read
     *     during the call only.
     * @return a handle, never reused by this instance.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for a request missing a part or with swapped
     *     lists, {@code INDEX_OUT_OF_RANGE}, {@code LENGTH_MISMATCH}, {@code FOREIGN_HANDLE},
     *     {@code NOT_REGISTERED}: nothing was started.
     */
    long post(TransferRequest request);

    /**
     * Returns how many operations (puts, gets or copies) a posted transfer issues: one per pair, less
     * every pair a {@link Capability#COALESCING} transport merged into the one before it. Decided by
     * the time {@link #post} returns and valid until {@link #release}; allocation-free, so an engine
     * may ask for every transfer.
     *
     * <p>The default reports nothing, for transports that hand the pairs to a library that decides
     * for itself how many operations to issue.
     *
     * @param handle from {@link #post}.
     * @return the number of operations, or {@code -1} when the transport does not report it.
     * @throws KvBridgeException {@code HANDLE_UNKNOWN} for a released or foreign handle.
     */
    default int operations(long handle)
    {
        // checks the handle, so a released one is refused whether or not the transport reports
        status(handle);
        return -1;
    }

    /**
     * Returns a transfer's state.
     *
     * @param handle from {@link #post}.
     * @return the state.
     * @throws KvBridgeException {@code HANDLE_UNKNOWN} for a released or foreign handle.
     */
    TransferStatus status(long handle);

    /**
     * Returns why a transfer failed.
     *
     * @param handle from {@link #post}.
     * @return the failure, or empty unless the status is {@link TransferStatus#FAILED}.
     */
    Optional<KvBridgeException> failure(long handle);

    /**
     * Releases a handle. Releasing a transfer still in progress cancels it: its destination bytes
     * are then undefined and its notification is not delivered. Whether a byte may still land after
     * this returns, {@link #writeStopOnRelease()} tells.
     *
     * @param handle from {@link #post}.
     */
    void release(long handle);

    /**
     * Sends a notification without data.
     *
     * @param peer a connected peer.
     * @param message bytes to deliver.
     */
    void notify(Peer peer, byte[] message);

    /**
     * Hands every notification received since the last call to a sink, in arrival order.
     *
     * @param sink receives each notification.
     * @return the number of notifications drained.
     */
    int drainNotifications(NotificationSink sink);

    /**
     * Asks the instance to wake a thread, with {@link java.util.concurrent.locks.LockSupport#unpark},
     * whenever one of its transfers ends (done or failed) and whenever a notification arrives, so
     * that the thread can park between polls of {@link #status} and {@link #drainNotifications}
     * instead of waking on a short timer. A wake-up only says that something may have changed; the
     * thread still polls. One thread per instance: a later call replaces it, {@code null} stops the
     * wake-ups. The instance never runs caller code for this, so the thread may call it freely.
     *
     * <p>The default wakes nobody and returns {@code false}: callers of such a transport keep polling
     * on a timer.
     *
     * @param waiter the thread to wake, or {@code null}.
     * @return whether the instance wakes the thread; {@code false} means poll on a timer.
     */
    default boolean wakeOnProgress(Thread waiter)
    {
        return false;
    }

    /**
     * Counts what the instance holds; after {@link #close()} every count is zero.
     *
     * @return the current counts.
     */
    BackendResources resources();

    /**
     * Tells why this instance can no longer do its work, for health checks: closed, or an owner or
     * copy thread that stopped, or a native worker that failed for good. Transient trouble a later
     * call may overcome (a failed transfer, an unreachable peer) is not a problem here. Callable from
     * any thread at any time, including after {@link #close()}; it neither blocks nor throws.
     *
     * <p>The default reports nothing, for a transport that cannot tell; the conformance suite expects
     * a problem once the instance is closed.
     *
     * @return empty while the instance works; otherwise what failed, with the values involved, and what to do.
     */
    default Optional<String> problem()
    {
        return Optional.empty();
    }

    /**
     * Releases everything and stops the owner thread. Idempotent.
     */
    @Override
    void close();
}
