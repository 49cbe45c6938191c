package io.kvbridge.transport;

import io.kvbridge.spi.transfer.TransferOp;
import java.util.Locale;

/**
 * The run a target refused in a peer's granted transfer, which its answer names back to the
 * initiator: the run's position, address and length. A target keeps one per exchange and reuses
 * it, so a refusal allocates nothing but the text it logs.
 *
 * <p>Threads: the thread that owns the exchange.
 */
public final class RefusedRun
{
    private int run;
    private long address;
    private long length;

    /** Creates an empty one, for an exchange to keep. */
    public RefusedRun()
    {
    }

    /**
     * Records the refused run.
     *
     * @param runIndex its position in the transfer.
     * @param runAddress the address the peer asked for.
     * @param runLength the length the peer asked for.
     */
    public void set(int runIndex, long runAddress, long runLength)
    {
        run = runIndex;
        address = runAddress;
        length = runLength;
    }

    /** Forgets the run, for the exchange's next transfer. */
    public void clear()
    {
        set(0, 0, 0);
    }

    /** {@return the run's position in the transfer} */
    public int run()
    {
        return run;
    }

    /** {@return the address the peer asked for} */
    public long address()
    {
        return address;
    }

    /** {@return the length the peer asked for} */
    public long length()
    {
        return length;
    }

    /**
     * Says what was refused, for the grant refusals a target logs and reports.
     *
     * @param op the peer's operation.
     * @param keyLength the length of the key the peer presented, 0 for none.
     * @param why why the grants refused it.
     * @return {@code WRITE of 4096 bytes at 0x1000 under a key of 16 bytes: no live grant has that key}.
     */
    public String describe(TransferOp op, int keyLength, String why)
    {
        return String.format(Locale.ROOT, "%s of %d bytes at 0x%x under %s: %s", op, length, address,
                keyLength == 0 ? "no key" : "a key of " + keyLength + " bytes", why);
    }
}
