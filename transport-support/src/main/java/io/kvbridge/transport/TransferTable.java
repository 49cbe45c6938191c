package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferStatus;
import java.util.Arrays;
import java.util.Optional;
import java.util.function.IntFunction;

/**
 * The handles of one transport instance: slots reused through a free list, each handle carrying
 * its slot's generation so a released or foreign handle is refused ({@code HANDLE_UNKNOWN}) and no
 * handle is ever reused. Counts what the SPI reports: unreleased handles
 * ({@link io.kvbridge.spi.transfer.BackendResources#transfers()}) and occupied slots, which
 * {@code max-in-flight} bounds. A handle released while its transfer runs marks it cancelled; its
 * slot returns to the free list only when the transport {@linkplain #finish finishes} it.
 *
 * <p>Thread-safe: one lock, held for a few field writes; lookups allocate nothing.
 *
 * @param <T> the transport's slot type.
 */
public final class TransferTable<T extends TransferSlot>
{
    private final String owner;
    private final int maxInFlight;
    private final IntFunction<T> newSlot;
    private final Object lock = new Object();
    // under lock
    private TransferSlot[] slots = new TransferSlot[64];
    private int slotCount;
    private int[] freeSlots = new int[64];
    private int freeCount;
    private int occupied;
    private int unreleased;
    private boolean closed;

    /**
     * Creates an empty table.
     *
     * @param owner names the instance in errors, such as {@code ucx transport 'a'}.
     * @param maxInFlight slots that may be occupied at once; at least 1.
     * @param newSlot makes the slot for an index, the first time that index is needed.
     */
    public TransferTable(String owner, int maxInFlight, IntFunction<T> newSlot)
    {
        this.owner = requireNonNull(owner, "owner is null");
        KvBridgeException.checkArgument(maxInFlight >= 1, "maxInFlight=%d must be at least 1", maxInFlight);
        this.maxInFlight = maxInFlight;
        this.newSlot = requireNonNull(newSlot, "newSlot is null");
    }

    /**
     * Takes a free slot for a new transfer, already {@link TransferStatus#IN_PROGRESS}. Hand out its
     * {@link TransferSlot#handle()} or give it back with {@link #abandon}.
     *
     * @return the slot.
     * @throws KvBridgeException {@code TRANSFER_FAILED} when {@code max-in-flight} slots are occupied,
     *     {@code CLOSED} once the table was closed.
     */
    @SuppressWarnings("unchecked")
    public T acquire()
    {
        synchronized (lock) {
            if (closed) {
                throw new KvBridgeException(ErrorCode.CLOSED, owner + " is closed");
            }
            if (occupied >= maxInFlight) {
                throw new KvBridgeException(ErrorCode.TRANSFER_FAILED, "max-in-flight=" + maxInFlight + " transfers of " + owner
                        + " are posted and not finished or not released; release finished handles or raise max-in-flight");
            }
            TransferSlot slot;
            if (freeCount > 0) {
                slot = slots[freeSlots[--freeCount]];
            }
            else {
                if (slotCount == slots.length) {
                    slots = Arrays.copyOf(slots, slots.length * 2);
                }
                slot = requireNonNull(newSlot.apply(slotCount), "slot factory returned null");
                if (slot.index() != slotCount) {
                    throw new IllegalStateException("slot factory made index " + slot.index() + " for index " + slotCount);
                }
                slots[slotCount++] = slot;
            }
            slot.generation++;
            slot.released = false;
            slot.occupied = true;
            slot.begin();
            occupied++;
            unreleased++;
            return (T) slot;
        }
    }

    /**
     * Gives back a slot whose post failed before its handle was handed out.
     *
     * @param slot from {@link #acquire()}.
     */
    public void abandon(T slot)
    {
        synchronized (lock) {
            if (!slot.released) {
                slot.released = true;
                unreleased--;
            }
            slot.end(null);
            recycleLocked(slot);
        }
    }

    /**
     * Finds the slot of a live handle.
     *
     * @param handle from a post.
     * @return the slot.
     * @throws KvBridgeException {@code HANDLE_UNKNOWN} for a released, foreign or made-up handle.
     */
    @SuppressWarnings("unchecked")
    public T slot(long handle)
    {
        synchronized (lock) {
            return (T) slotLocked(handle);
        }
    }

    /**
     * Returns a live handle's status.
     *
     * @param handle from a post.
     * @return the status.
     */
    public TransferStatus status(long handle)
    {
        return slot(handle).status();
    }

    /**
     * Returns why a live handle's transfer failed.
     *
     * @param handle from a post.
     * @return the failure, empty unless the status is {@code FAILED}.
     */
    public Optional<KvBridgeException> failure(long handle)
    {
        TransferSlot slot = slot(handle);
        return slot.status() == TransferStatus.FAILED ? Optional.ofNullable(slot.failure()) : Optional.empty();
    }

    /**
     * Releases a handle. A finished transfer's slot is free at once; a running one is marked
     * {@linkplain TransferSlot#cancelled() cancelled} and freed when the transport finishes it.
     *
     * @param handle from a post.
     * @return true when the transfer was still running: the transport should stop it.
     * @throws KvBridgeException {@code HANDLE_UNKNOWN} for a released or foreign handle.
     */
    public boolean release(long handle)
    {
        synchronized (lock) {
            TransferSlot slot = slotLocked(handle);
            slot.released = true;
            unreleased--;
            if (slot.status().terminal()) {
                recycleLocked(slot);
                return false;
            }
            slot.cancel();
            return true;
        }
    }

    /**
     * Ends a transfer: {@code DONE} without a cause, {@code FAILED} with one. Its references are
     * dropped, and its slot is freed when the handle was already released. Each transfer is
     * finished exactly once, by the thread that ended it.
     *
     * @param slot the transfer's slot.
     * @param failure why it failed, or null when it succeeded.
     */
    public void finish(T slot, KvBridgeException failure)
    {
        synchronized (lock) {
            if (!slot.occupied) {
                return;
            }
            slot.clearReferences();
            slot.end(failure);
            if (slot.released) {
                recycleLocked(slot);
            }
        }
    }

    /** {@return handles posted and not released} */
    public int unreleased()
    {
        synchronized (lock) {
            return unreleased;
        }
    }

    /** {@return slots whose transfer is running or whose handle is not released} */
    public int occupied()
    {
        synchronized (lock) {
            return occupied;
        }
    }

    /**
     * Closes the table: every handle counts as released and is refused from now on, every running
     * transfer is marked cancelled, and later {@link #acquire()} calls fail with {@code CLOSED}.
     * The transport must have stopped every transfer first (or must still finish them).
     */
    public void close()
    {
        synchronized (lock) {
            closed = true;
            for (int i = 0; i < slotCount; i++) {
                TransferSlot slot = slots[i];
                if (slot.occupied) {
                    slot.cancel();
                    if (!slot.status().terminal()) {
                        slot.end(new KvBridgeException(ErrorCode.TRANSFER_FAILED, "the transfer was cut off: " + owner + " was closed"));
                    }
                    slot.released = true;
                    recycleLocked(slot);
                }
                slot.clearReferences();
            }
            unreleased = 0;
        }
    }

    private TransferSlot slotLocked(long handle)
    {
        int index = (int) handle;
        int generation = (int) (handle >>> 32);
        if (index < 0 || index >= slotCount || slots[index].generation != generation || slots[index].released) {
            throw new KvBridgeException(ErrorCode.HANDLE_UNKNOWN, "transfer handle 0x" + Long.toHexString(handle) + " is unknown to " + owner
                    + " or was already released");
        }
        return slots[index];
    }

    private void recycleLocked(TransferSlot slot)
    {
        if (!slot.occupied) {
            return;
        }
        slot.occupied = false;
        slot.clearReferences();
        // a new generation at once: the released handle is refused even before the slot is reused
        slot.generation++;
        if (freeCount == freeSlots.length) {
            freeSlots = Arrays.copyOf(freeSlots, freeSlots.length * 2);
        }
        freeSlots[freeCount++] = slot.index();
        occupied--;
    }

    @Override
    public String toString()
    {
        synchronized (lock) {
            return "TransferTable[" + owner + ", occupied=" + occupied + ", unreleased=" + unreleased + ", maxInFlight=" + maxInFlight + "]";
        }
    }
}
