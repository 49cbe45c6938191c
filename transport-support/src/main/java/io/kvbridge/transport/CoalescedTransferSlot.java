package io.kvbridge.transport;

/**
 * A {@link TransferSlot} for a transport that resolves its pairs itself at post time
 * ({@link PostChecks#resolve}) and issues one operation per coalesced copy: it keeps the copies in a
 * buffer reused with the slot, and counts them as the transfer's operations.
 */
public abstract class CoalescedTransferSlot extends TransferSlot
{
    /**
     * The transfer's copies, refilled by {@link PostChecks#resolve} on the posting thread before the
     * slot is handed over, then only read; a field, not a method, because every copy loop reads it.
     */
    public final DescriptorPairs copies = new DescriptorPairs(16);

    /**
     * Creates the slot.
     *
     * @param index the slot's index in its table.
     */
    protected CoalescedTransferSlot(int index)
    {
        super(index);
    }

    /** One operation per coalesced copy; a copy split between threads still counts once. */
    @Override
    protected final int operations()
    {
        return copies.size();
    }
}
