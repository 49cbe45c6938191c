package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.Grants;
import io.kvbridge.transport.RefusedRun;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One transfer as its target sees it with {@code access=granted}: a WRITE's runs landing, or one
 * READ request's runs leaving, then the answer. Reused from {@link UcxActiveMessages}' pool, so its
 * buffers only grow.
 *
 * <p>Threads: the owner thread only.
 */
final class UcxExchange
{
    static final int RECEIVING = 0;
    static final int SEND_DATA = 1;
    static final int SENDING_DATA = 2;
    static final int ANSWER = 3;
    static final int ANSWERING = 4;
    static final int DONE = 5;

    final MemorySegment answerHeader;
    final byte[] key = new byte[TransferBackend.MAX_GRANT_KEY_BYTES];
    int keyLength;
    long replyEp;
    long handle;
    long sender;
    TransferOp op;
    int runCount;
    int firstRun;
    int arrived;
    int pending;
    // admitted accesses this exchange still holds on its entry
    int entries;
    Grants.Entry entry;
    int state;
    byte result;
    final RefusedRun refused = new RefusedRun();
    long answerRequest;
    long[] addresses = new long[0];
    long[] lengths = new long[0];
    long[] requests = new long[0];
    MemorySegment headers = MemorySegment.NULL;
    private final Arena arena;

    UcxExchange(Arena arena)
    {
        this.arena = arena;
        this.answerHeader = arena.allocate(UcxActiveMessages.RESULT_BYTES, 8);
    }

    /** Queues the answer once every run of a WRITE has landed or was refused. */
    void settle()
    {
        if (arrived >= runCount && pending == 0 && state == RECEIVING) {
            state = ANSWER;
        }
    }

    void reset(long replyEp, long handle, TransferOp op, int runCount, long sender)
    {
        this.replyEp = replyEp;
        this.handle = handle;
        this.op = op;
        this.runCount = runCount;
        this.sender = sender;
        firstRun = 0;
        arrived = 0;
        pending = 0;
        entries = 0;
        entry = null;
        keyLength = 0;
        state = RECEIVING;
        result = UcxActiveMessages.RESULT_OK;
        refused.clear();
        answerRequest = 0;
    }

    /** Holds an admitted entry (once per exchange for a READ, per receive for a WRITE) and remembers its key for a cut-off. */
    void entry(Grants.Entry admitted, int length, byte[] keyBytes)
    {
        entry = admitted;
        entries++;
        keyLength = length;
        System.arraycopy(keyBytes, 0, key, 0, length);
    }

    void grow(int runs)
    {
        if (addresses.length < runs) {
            int size = Math.max(runs, UcxActiveMessages.MAX_READ_RUNS);
            addresses = new long[size];
            lengths = new long[size];
            requests = new long[size];
            headers = arena.allocate((long) size * UcxActiveMessages.DATA_BYTES, 8);
        }
    }
}
