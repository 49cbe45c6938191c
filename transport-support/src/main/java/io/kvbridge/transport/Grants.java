package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The grants of one {@code GRANTED_ACCESS} transport instance: which of its memory a peer that
 * presents a key may read or write, and the accesses refused. A key's grants are found without
 * allocating ({@link #admit}); each grant keeps its ranges sorted and merged, so checking one
 * access is a binary search. An admitted access holds its key's entry until {@link Entry#done},
 * and {@link #revoke} waits for those, so memory is never read or written under a grant that has
 * ended.
 *
 * <p>Threads: any. Granting, revoking and finding a key take the instance's lock; checking ranges
 * of an admitted entry does not.
 */
public final class Grants
{
    private static final Logger LOG = LoggerFactory.getLogger(Grants.class);
    private static final int MAX_PEERS_REPORTED = 8;
    // keys revoked lately: an access under one is a peer that came late (a lease expired under a
    // slow consumer), not a probe, and is counted without being reported as a problem
    private static final int REMEMBERED_REVOKED_KEYS = 4096;

    private final String description;
    private final Map<Long, Grant> byHandle = new HashMap<>();
    // open addressing by the key's hash; the table holds at most half its slots
    private Entry[] table = new Entry[64];
    private int entries;
    private long nextHandle = 1;
    private long refusals;
    private long lateRefusals;
    private int admittedAccesses;
    private final Map<java.nio.ByteBuffer, Boolean> revokedKeys = new LinkedHashMap<>(16, 0.75f, false)
    {
        @Override
        protected boolean removeEldestEntry(Map.Entry<java.nio.ByteBuffer, Boolean> eldest)
        {
            return size() > REMEMBERED_REVOKED_KEYS;
        }
    };
    private final Map<String, String> lastRefusalByPeer = new LinkedHashMap<>();
    private final LogInterval refusalLog = new LogInterval(LogInterval.TEN_SECONDS_NANOS);
    private long loggedRefusals;

    /**
     * Creates an empty set.
     *
     * @param description the instance, as its errors name it.
     */
    public Grants(String description)
    {
        this.description = requireNonNull(description, "description is null");
    }

    /**
     * Grants peers that present {@code key} one access to descriptors of a local list.
     *
     * @param key 1 to {@link TransferBackend#MAX_GRANT_KEY_BYTES} bytes, copied.
     * @param access what peers may do with the descriptors.
     * @param list the local list.
     * @param indices indices into the list.
     * @param count how many indices.
     * @return the grant's handle, never {@link TransferBackend#NO_GRANT}.
     */
    public long grant(byte[] key, TransferOp access, OwnedPreparedList list, int[] indices, int count)
    {
        requireNonNull(key, "key is null");
        requireNonNull(access, "access is null");
        requireNonNull(list, "list is null");
        requireNonNull(indices, "indices is null");
        if (key.length == 0 || key.length > TransferBackend.MAX_GRANT_KEY_BYTES) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "grant key of " + key.length + " bytes (expected: 1 to "
                    + TransferBackend.MAX_GRANT_KEY_BYTES + ")");
        }
        if (count < 0 || count > indices.length) {
            throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, "count=" + count + " with " + indices.length + " indices");
        }
        long[] starts = new long[count];
        long[] ends = new long[count];
        for (int i = 0; i < count; i++) {
            int index = indices[i];
            if (index < 0 || index >= list.size()) {
                throw new KvBridgeException(ErrorCode.INDEX_OUT_OF_RANGE, "grant index " + index + " at position " + i + " lies outside a list of "
                        + list.size() + " descriptors");
            }
            starts[i] = list.address(index);
            ends[i] = list.address(index) + list.length(index);
        }
        int merged = merge(starts, ends, count);
        synchronized (this) {
            long handle = nextHandle++;
            Entry entry = find(key, key.length);
            if (entry == null) {
                entry = insert(key.clone());
            }
            Grant grant = new Grant(handle, entry, access, Arrays.copyOf(starts, merged), Arrays.copyOf(ends, merged));
            entry.add(grant);
            byHandle.put(handle, grant);
            return handle;
        }
    }

    /** Sorts ranges by start and merges the overlapping and touching ones; returns how many are left. */
    private static int merge(long[] starts, long[] ends, int count)
    {
        if (count == 0) {
            return 0;
        }
        // sort the pairs by start: indices of one request's blocks are usually ascending already
        boolean sorted = true;
        for (int i = 1; i < count && sorted; i++) {
            sorted = starts[i - 1] <= starts[i];
        }
        if (!sorted) {
            long[][] pairs = new long[count][];
            for (int i = 0; i < count; i++) {
                pairs[i] = new long[] {starts[i], ends[i]};
            }
            Arrays.sort(pairs, (a, b) -> Long.compare(a[0], b[0]));
            for (int i = 0; i < count; i++) {
                starts[i] = pairs[i][0];
                ends[i] = pairs[i][1];
            }
        }
        int out = 0;
        for (int i = 1; i < count; i++) {
            if (starts[i] <= ends[out]) {
                ends[out] = Math.max(ends[out], ends[i]);
            }
            else {
                out++;
                starts[out] = starts[i];
                ends[out] = ends[i];
            }
        }
        return out + 1;
    }

    /**
     * Ends a grant: no access is admitted under it from now on; waits for the accesses its key
     * admitted to finish.
     *
     * @param handle from {@link #grant}; unknown and {@link TransferBackend#NO_GRANT} handles are ignored.
     * @param timeoutNanos how long to wait for admitted accesses.
     * @return false when admitted accesses were still running at the deadline: the caller must cut
     *     their peers off before the memory is reused.
     */
    public boolean revoke(long handle, long timeoutNanos)
    {
        Entry entry = end(handle);
        return entry == null || entry.awaitIdle(timeoutNanos);
    }

    /**
     * Ends a grant as {@link #revoke(long, long)} does and, when accesses its key admitted still
     * run at the deadline, hands the key to {@code cutOff}, which must end those peers' accesses
     * (close their connections) before it returns, so the memory can be reused.
     *
     * @param handle from {@link #grant}; unknown and {@link TransferBackend#NO_GRANT} handles are ignored.
     * @param timeoutNanos how long to wait for admitted accesses.
     * @param cutOff receives a copy of the grant's key, on the calling thread; called at most once.
     */
    public void revoke(long handle, long timeoutNanos, Consumer<byte[]> cutOff)
    {
        requireNonNull(cutOff, "cutOff is null");
        Entry entry = end(handle);
        if (entry != null && !entry.awaitIdle(timeoutNanos)) {
            cutOff.accept(entry.key.clone());
        }
    }

    /** Removes a grant so no access is admitted under it; returns its key's entry, or null for an unknown handle. */
    private Entry end(long handle)
    {
        synchronized (this) {
            Grant grant = byHandle.remove(handle);
            if (grant == null) {
                return null;
            }
            Entry entry = grant.entry;
            entry.remove(grant);
            // remembered from the first of a key's grants revoked: a request's grants go one by one,
            // and an access that finds some gone came late as much as one that finds none
            revokedKeys.put(java.nio.ByteBuffer.wrap(entry.key), Boolean.TRUE);
            if (entry.grants.length == 0) {
                delete(entry);
            }
            return entry;
        }
    }

    /**
     * Finds the grants under a key and holds them for one access: until {@link Entry#done}, a
     * revoke of any of them waits. Allocates nothing.
     *
     * @param key a buffer holding the key the peer presented.
     * @param keyLength how many bytes of it are the key.
     * @return the held entry, or null when no live grant has that key.
     */
    public synchronized Entry admit(byte[] key, int keyLength)
    {
        if (keyLength <= 0 || keyLength > TransferBackend.MAX_GRANT_KEY_BYTES || keyLength > key.length) {
            return null;
        }
        Entry entry = find(key, keyLength);
        if (entry != null) {
            entry.admitted++;
            admittedAccesses++;
        }
        return entry;
    }

    /**
     * Counts a refused access and keeps the latest reason of each peer for {@link #problem}.
     *
     * @param peer the peer's name, as it introduced itself.
     * @param reason what it asked for and why it was refused.
     */
    public synchronized void refused(String peer, String reason)
    {
        // a peer chose its name: nothing it put there reaches a log line or a report unescaped
        String name = PeerText.printable(peer);
        String why = PeerText.printable(reason);
        refusals++;
        lastRefusalByPeer.remove(name);
        if (lastRefusalByPeer.size() == MAX_PEERS_REPORTED) {
            lastRefusalByPeer.remove(lastRefusalByPeer.keySet().iterator().next());
        }
        lastRefusalByPeer.put(name, why);
        if (refusalLog.due(System.nanoTime())) {
            LOG.warn("{} refused {} peer accesses outside their grants ({} since the last such line; logged at most every 10 s), the latest of peer '{}': {}",
                    description, refusals, refusals - loggedRefusals, name, why);
            loggedRefusals = refusals;
        }
    }

    /**
     * Counts an access refused because no live grant has its key, or none of its live grants covers
     * the range: one under a key revoked lately (any of its grants) is a peer that came after its
     * request ended and is counted apart ({@link #lateRefusals}), anything else as {@link #refused}.
     *
     * @param peer the peer's name, as it introduced itself.
     * @param key a buffer holding the key the peer presented.
     * @param keyLength how many bytes of it are the key.
     * @param reason what it asked for and why it was refused.
     */
    public synchronized void refusedKey(String peer, byte[] key, int keyLength, String reason)
    {
        if (keyLength > 0 && keyLength <= key.length && revokedKeys.containsKey(java.nio.ByteBuffer.wrap(key, 0, keyLength))) {
            lateRefusals++;
            return;
        }
        refused(peer, reason);
    }

    /** {@return how many peer accesses were refused, late ones not included} */
    public synchronized long refusals()
    {
        return refusals;
    }

    /** {@return how many accesses came under a key revoked lately: their requests had ended} */
    public synchronized long lateRefusals()
    {
        return lateRefusals;
    }

    /** {@return how many admitted accesses have not ended yet, under any key} */
    public synchronized int admitted()
    {
        return admittedAccesses;
    }

    /** {@return how many grants are live} */
    public synchronized int live()
    {
        return byHandle.size();
    }

    /**
     * {@return the refused accesses, naming the latest peers (their names escaped), or empty when
     * none was refused}: a report of what peers asked for, not of whether this instance can serve,
     * so a transport whose peers are not all trusted keeps it out of its health.
     */
    public synchronized Optional<String> problem()
    {
        if (refusals == 0) {
            return Optional.empty();
        }
        StringBuilder text = new StringBuilder(description).append(" refused ").append(refusals)
                .append(refusals == 1 ? " peer access" : " peer accesses").append(" outside their grants; latest");
        lastRefusalByPeer.forEach((peer, reason) -> text.append(" [peer '").append(peer).append("': ").append(reason).append(']'));
        return Optional.of(text.toString());
    }

    private Entry find(byte[] key, int length)
    {
        int mask = table.length - 1;
        for (int slot = hash(key, length) & mask; ; slot = (slot + 1) & mask) {
            Entry entry = table[slot];
            if (entry == null) {
                return null;
            }
            if (entry.key.length == length && Arrays.equals(entry.key, 0, length, key, 0, length)) {
                return entry;
            }
        }
    }

    private Entry insert(byte[] key)
    {
        if ((entries + 1) * 2 > table.length) {
            Entry[] old = table;
            table = new Entry[old.length * 2];
            for (Entry entry : old) {
                if (entry != null) {
                    place(entry);
                }
            }
        }
        Entry entry = new Entry(key);
        place(entry);
        entries++;
        return entry;
    }

    private void place(Entry entry)
    {
        int mask = table.length - 1;
        int slot = hash(entry.key, entry.key.length) & mask;
        while (table[slot] != null) {
            slot = (slot + 1) & mask;
        }
        table[slot] = entry;
    }

    private void delete(Entry entry)
    {
        // linear probing: re-place the entries after the removed one, up to the next empty slot
        int mask = table.length - 1;
        int slot = hash(entry.key, entry.key.length) & mask;
        while (table[slot] != entry) {
            slot = (slot + 1) & mask;
        }
        table[slot] = null;
        entries--;
        for (int next = (slot + 1) & mask; table[next] != null; next = (next + 1) & mask) {
            Entry moved = table[next];
            table[next] = null;
            place(moved);
        }
    }

    private static int hash(byte[] key, int length)
    {
        int h = 1;
        for (int i = 0; i < length; i++) {
            h = 31 * h + key[i];
        }
        return h ^ (h >>> 16);
    }

    private record Grant(long handle, Entry entry, TransferOp access, long[] starts, long[] ends)
    {
        boolean covers(long address, long length)
        {
            int i = Arrays.binarySearch(starts, address);
            if (i < 0) {
                i = -i - 2;
            }
            return i >= 0 && length >= 0 && address + length <= ends[i] && address + length >= address;
        }
    }

    /** The live grants under one key, held by the accesses admitted under it. */
    public static final class Entry
    {
        private final byte[] key;
        // copy-on-write under the Grants lock, read without it
        private volatile Grant[] grants = new Grant[0];
        // changed under the Grants lock; a revoke waits on this entry's monitor, which done() notifies
        private volatile int admitted;

        private Entry(byte[] key)
        {
            this.key = key;
        }

        private void add(Grant grant)
        {
            Grant[] next = Arrays.copyOf(grants, grants.length + 1);
            next[next.length - 1] = grant;
            grants = next;
        }

        private void remove(Grant grant)
        {
            Grant[] current = grants;
            Grant[] next = new Grant[current.length - 1];
            int out = 0;
            for (Grant g : current) {
                if (g != grant) {
                    next[out++] = g;
                }
            }
            grants = next;
        }

        /**
         * Checks one range of an admitted access.
         *
         * @param access what the peer asks to do.
         * @param address the first byte.
         * @param length how many bytes.
         * @return whether one live grant of this key for {@code access} covers the whole range.
         */
        public boolean covers(TransferOp access, long address, long length)
        {
            for (Grant grant : grants) {
                if (grant.access == access && grant.covers(address, length)) {
                    return true;
                }
            }
            return false;
        }

        /**
         * Ends the access {@link Grants#admit} admitted; its memory is no longer read or written.
         *
         * @param grants the set that admitted it.
         */
        public void done(Grants grants)
        {
            synchronized (grants) {
                admitted--;
                grants.admittedAccesses--;
            }
            synchronized (this) {
                notifyAll();
            }
        }

        private boolean awaitIdle(long timeoutNanos)
        {
            long deadline = System.nanoTime() + timeoutNanos;
            synchronized (this) {
                while (admitted > 0) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    try {
                        TimeUnit.NANOSECONDS.timedWait(this, left);
                    }
                    catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return admitted == 0;
                    }
                }
                return true;
            }
        }
    }
}
