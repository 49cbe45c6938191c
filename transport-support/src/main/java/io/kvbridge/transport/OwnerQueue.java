package io.kvbridge.transport;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The hand-over queue to an owner thread: bounded, many producers, one consumer, and no allocation
 * or lock on either side (a contended lock would allocate a wait node on every hand-over). Each
 * slot carries a sequence number: a producer claims position {@code p} when the slot's sequence
 * equals {@code p}, publishes its work by setting it to {@code p + 1}; the consumer takes position
 * {@code p} when the sequence reads {@code p + 1} and frees the slot for the next lap by setting it
 * to {@code p + capacity}.
 *
 * <p>The work sits in a plain {@code OwnerWork[]}: the sequence's release and acquire order its
 * plain writes and reads, and reading a typed array needs no cast. A cast would carry a type
 * profile, and the compiled owner loop would be deoptimized whenever a kind of work it had not seen
 * while hot arrived (a heartbeat's call after a run of posts: measured every 0.85 s while a peer
 * was stopped, each trap throwing the loop back into the interpreter).
 */
public final class OwnerQueue
{
    private final int mask;
    private final OwnerWork[] items;
    private final AtomicLongArray sequences;
    private final AtomicLong tail = new AtomicLong();
    // the consumer's position; only one thread consumes at a time
    private long head;

    /**
     * Creates a queue.
     *
     * @param minimumCapacity slots needed; rounded up to a power of two.
     */
    public OwnerQueue(int minimumCapacity)
    {
        int capacity = Integer.highestOneBit(Math.max(2, minimumCapacity - 1)) << 1;
        this.mask = capacity - 1;
        this.items = new OwnerWork[capacity];
        this.sequences = new AtomicLongArray(capacity);
        for (int i = 0; i < capacity; i++) {
            sequences.set(i, i);
        }
    }

    /**
     * Adds work; any thread.
     *
     * @param work to hand over.
     * @return false when the queue is full.
     */
    public boolean offer(OwnerWork work)
    {
        long position = tail.get();
        while (true) {
            int slot = (int) (position & mask);
            long distance = sequences.getAcquire(slot) - position;
            if (distance == 0) {
                if (tail.weakCompareAndSetVolatile(position, position + 1)) {
                    items[slot] = work;
                    // volatile, not just release: the producer reads ownerParked next, and the owner
                    // sets ownerParked before it checks isEmpty(); both need the store seen first
                    sequences.set(slot, position + 1);
                    return true;
                }
                position = tail.get();
            }
            else if (distance < 0) {
                return false;
            }
            else {
                position = tail.get();
            }
        }
    }

    /**
     * Takes the oldest work; one consumer at a time.
     *
     * @return the work, or null when none is published.
     */
    public OwnerWork poll()
    {
        int slot = (int) (head & mask);
        if (sequences.getAcquire(slot) != head + 1) {
            return null;
        }
        OwnerWork work = items[slot];
        items[slot] = null;
        sequences.setRelease(slot, head + mask + 1);
        head++;
        return work;
    }

    /** {@return true when no published work waits; for the consumer} */
    public boolean isEmpty()
    {
        return sequences.get((int) (head & mask)) != head + 1;
    }
}
