package io.kvbridge.backend.tcp;

import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.Grants;
import io.kvbridge.transport.RefusedRun;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A peer's transfer as its target sees it: the runs received so far, the grant entry its key
 * admitted (held until the last byte landed or left), and the first refusal. A checked READ is
 * also the source of its DATA frames, the last of which answers it. Reused through the connection's pool: arrays only
 * grow.
 *
 * <p>Threads: the owner thread only.
 */
final class TcpExchange implements FrameWriter.Source
{
    long handle;
    TransferOp op;
    int runCount;
    int received;
    final byte[] key = new byte[TransferBackend.MAX_GRANT_KEY_BYTES];
    int keyLength;
    Grants.Entry entry;
    byte result;
    final RefusedRun refused = new RefusedRun();
    // a checked READ's runs, and how many DATA frames went out
    long[] addresses = new long[16];
    long[] lengths = new long[16];
    TcpRegistration[] memories = new TcpRegistration[16];
    int runs;
    int sent;
    private TargetConnection connection;

    void reset(TargetConnection owner, long transferHandle, TransferOp transferOp, int count)
    {
        connection = owner;
        handle = transferHandle;
        op = transferOp;
        runCount = count;
        received = 0;
        entry = null;
        result = TcpWire.RESULT_OK;
        refused.clear();
        runs = 0;
        sent = 0;
    }

    /** {@return whether {@code length} bytes at {@code at} of {@code in} are this exchange's key} */
    boolean sameKey(ByteBuffer in, int at, int length)
    {
        if (length != keyLength) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            if (in.get(at + i) != key[i]) {
                return false;
            }
        }
        return true;
    }

    void addRun(long address, long length, TcpRegistration memory)
    {
        if (runs == addresses.length) {
            int grown = Math.min(runCount, runs * 2);
            addresses = Arrays.copyOf(addresses, grown);
            lengths = Arrays.copyOf(lengths, grown);
            memories = Arrays.copyOf(memories, grown);
        }
        addresses[runs] = address;
        lengths[runs] = length;
        memories[runs] = memory;
        runs++;
    }

    /** Only a READ whose every run was checked is queued: its DATA frames, the last one flagged as its answer. */
    @Override
    public boolean nextFrame(FrameWriter writer, long queuedHandle)
    {
        if (sent == runs) {
            return false;
        }
        byte last = sent == runs - 1 ? TcpWire.DATA_LAST : 0;
        writer.frame().put(TcpWire.DATA).put(TcpWire.VERSION).put(last).put((byte) 0).putInt(sent).putLong(handle).putLong(lengths[sent]);
        writer.payload(memories[sent], addresses[sent], lengths[sent], this);
        sent++;
        return true;
    }

    @Override
    public void left(FrameWriter writer, long queuedHandle, boolean written)
    {
        connection.release(this);
    }
}
