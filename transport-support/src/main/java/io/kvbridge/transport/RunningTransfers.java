package io.kvbridge.transport;

import java.util.Arrays;

/**
 * The transfers an owner thread still polls: an unordered array that grows only when more run at
 * once than ever before, so adding and removing allocate nothing in steady state. Removal moves
 * the last transfer into the freed place, which lets a poll loop remove while it walks:
 *
 * <pre>{@code
 * for (int i = 0; i < running.size();) {
 *     if (ended(running.get(i))) {
 *         running.removeAt(i);   // the last one moved to i: visit i again
 *     }
 *     else {
 *         i++;
 *     }
 * }
 * }</pre>
 *
 * <p>Not thread-safe: it belongs to the owner thread.
 *
 * @param <T> the transport's slot type.
 */
public final class RunningTransfers<T extends TransferSlot>
{
    private TransferSlot[] running = new TransferSlot[64];
    private int size;

    /** Creates an empty set of running transfers. */
    public RunningTransfers()
    {
    }

    /**
     * Adds a transfer that now runs.
     *
     * @param transfer its slot.
     */
    public void add(T transfer)
    {
        if (size == running.length) {
            running = Arrays.copyOf(running, running.length * 2);
        }
        running[size++] = transfer;
    }

    /**
     * Returns a running transfer.
     *
     * @param index in {@code [0, size())}.
     * @return its slot.
     */
    @SuppressWarnings("unchecked")
    public T get(int index)
    {
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException("index=" + index + " size=" + size);
        }
        return (T) running[index];
    }

    /**
     * Removes a transfer that ended; the last one takes its place.
     *
     * @param index in {@code [0, size())}.
     */
    public void removeAt(int index)
    {
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException("index=" + index + " size=" + size);
        }
        running[index] = running[--size];
        running[size] = null;
    }

    /** {@return how many run} */
    public int size()
    {
        return size;
    }

    /** {@return true when none runs} */
    public boolean isEmpty()
    {
        return size == 0;
    }
}
