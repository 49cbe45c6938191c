package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpAm;
import io.kvbridge.backend.ucx.ffm.UcpEndpoint;
import io.kvbridge.backend.ucx.ffm.UcpStatus;
import io.kvbridge.backend.ucx.ffm.UcpWorker;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.transport.Grants;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code access=granted} data plane: transfers move as UCX active messages whose target side
 * checks every run against its {@link Grants} before a byte lands or leaves. A WRITE is one message
 * per run carrying key, address and length (eager data copied into place, rendezvous data received
 * straight into place); the target answers once per transfer when all its runs settled. A READ is a
 * request listing the runs; the target checks all of them and only then sends each run's bytes back,
 * or refuses. Every header is untrusted: malformed ones are dropped and counted.
 *
 * <p>Threads: owner thread only (the handler runs inside {@code ucp_worker_progress}), except
 * {@link #malformed()} and {@link #cutOff(byte[])}'s caller, which hands it to the owner.
 */
final class UcxActiveMessages implements UcpAm.Handler
{
    private static final Logger LOG = LoggerFactory.getLogger(UcxActiveMessages.class);

    static final int AM_WRITE = 1;
    static final int AM_READ = 2;
    static final int AM_DATA = 3;
    static final int AM_RESULT = 4;

    static final byte RESULT_OK = 0;
    static final byte RESULT_NO_GRANT = 1;
    static final byte RESULT_OUTSIDE = 2;
    static final byte RESULT_FAILED = 3;

    static final byte VERSION = 1;
    // WRITE: version, key length, -, -, run index, run count, -, handle, sender id, address, length, key
    static final int WRITE_KEY = 48;
    // READ: version, key length, -, -, first run, runs here, run count, handle, sender id, key; data = runs x (address, length)
    static final int READ_KEY = 32;
    static final int READ_RUN_BYTES = 16;
    /** Runs per READ request message, so a request stays one small eager message. */
    static final int MAX_READ_RUNS = 256;
    // DATA: version, -, -, -, run index, handle, length
    static final int DATA_BYTES = 24;
    // RESULT: version, result, op, -, run index, handle, address, length
    static final int RESULT_BYTES = 32;
    // exchanges a target keeps open at once: bounds what peers that never finish can hold
    private static final int MAX_EXCHANGES = 1 << 16;

    private final String description;
    private final UcxWorker worker;
    private final UcxEndpoints endpoints;
    private final Grants grants;
    private final int eagerMax;
    private final Arena arena = Arena.ofShared();
    private volatile long malformed;
    private volatile long late;
    private boolean loggedMalformed;
    private boolean loggedFailure;

    // owner thread only
    private UcxTransfers transfers;
    private final byte[] keyBuffer = new byte[TransferBackend.MAX_GRANT_KEY_BYTES];
    private UcxExchange[] open = new UcxExchange[16];
    private int openCount;
    private UcxExchange[] free = new UcxExchange[16];
    private int freeCount;
    private final UcxDataReceives receives = new UcxDataReceives();
    // a handler left an exchange with something to send (READ data or an answer): see answersDue()
    private boolean due;

    UcxActiveMessages(String description, UcxWorker worker, UcxEndpoints endpoints, Grants grants, int eagerMax)
    {
        this.eagerMax = eagerMax;
        this.description = description;
        this.worker = worker;
        this.endpoints = endpoints;
        this.grants = grants;
    }

    /** Installs the handlers once the worker is open; owner thread. */
    void open(UcxTransfers owningTransfers)
    {
        this.transfers = owningTransfers;
        // every id, not only ours: UCX 1.13 reads a message's entry in the worker's handler table
        // before checking the id against the table's length, and a peer's message with an id past
        // it (30000 measured) crashed the process; this handler drops and counts unknown ids
        UcpAm.setHandlers(worker.worker(), 0, UcpAm.MAX_ID, UcpAm.stub(this, arena));
    }

    /** Frees the upcall stub; after the worker is destroyed. */
    void release()
    {
        arena.close();
    }

    /** {@return how many malformed active messages were dropped} */
    long malformed()
    {
        return malformed;
    }

    @Override
    public byte received(long id, long header, long headerLength, long data, long length, long param)
    {
        try {
            boolean rendezvous = (UcpAm.recvAttr(param) & UcpAm.RECV_ATTR_FLAG_RNDV) != 0;
            if (id == AM_WRITE) {
                onWrite(header, headerLength, data, length, rendezvous, UcpAm.replyEndpoint(param));
            }
            else if (id == AM_READ) {
                onRead(header, headerLength, data, length, rendezvous, UcpAm.replyEndpoint(param));
            }
            else if (id == AM_DATA) {
                onData(header, headerLength, data, length, rendezvous);
            }
            else if (id == AM_RESULT) {
                onResult(header, headerLength);
            }
            else {
                drop("unknown message id " + id);
            }
        }
        catch (Throwable e) {
            // an exception leaving the upcall would end the JVM
            malformed++;
            if (!loggedFailure) {
                loggedFailure = true;
                LOG.error("{}: an active message handler failed; the message was dropped (logged once)", description, e);
            }
        }
        // UCS_OK: eager data is not kept, rendezvous data not received here is dropped
        return UcpStatus.OK;
    }

    /**
     * Counts a message for a transfer this side no longer waits for: it failed its deadline or was
     * released while its peer was stalled, and the peer's answer came after. Not malformed, and not
     * a health problem; whatever it carries is dropped.
     */
    private void late(String what)
    {
        late++;
        LOG.debug("{} dropped a late {} for a transfer that already ended", description, what);
    }

    /** {@return how many messages came for transfers that had already ended} */
    long late()
    {
        return late;
    }

    private void drop(String why)
    {
        malformed++;
        if (!loggedMalformed) {
            loggedMalformed = true;
            LOG.warn("{} dropped a malformed active message: {} (logged once; counted)", description, why);
        }
    }

    // ---- target of a WRITE ----

    private void onWrite(long header, long headerLength, long data, long length, boolean rendezvous, long replyEp)
    {
        if (headerLength < WRITE_KEY || replyEp == 0) {
            drop("WRITE header of " + headerLength + " bytes");
            return;
        }
        int keyLength = UcpAm.getByte(header + 1) & 0xff;
        int runIndex = UcpAm.getInt(header + 4);
        int runCount = UcpAm.getInt(header + 8);
        long handle = UcpAm.getLong(header + 16);
        long sender = UcpAm.getLong(header + 24);
        long address = UcpAm.getLong(header + 32);
        long runLength = UcpAm.getLong(header + 40);
        if (UcpAm.getByte(header) != VERSION || keyLength > TransferBackend.MAX_GRANT_KEY_BYTES || headerLength != WRITE_KEY + keyLength || runCount <= 0
                || runIndex < 0 || runIndex >= runCount || runLength <= 0 || runLength != length) {
            drop("WRITE run " + runIndex + " of " + runCount + ", " + runLength + " bytes in a message of " + length);
            return;
        }
        UcxExchange exchange = exchange(replyEp, handle, TransferOp.WRITE, runCount, sender);
        if (exchange == null) {
            return;
        }
        exchange.arrived++;
        if (exchange.result == RESULT_OK) {
            UcpAm.copy(header + WRITE_KEY, keyBuffer, keyLength);
            Grants.Entry entry = grants.admit(keyBuffer, keyLength);
            if (entry == null) {
                refuse(exchange, RESULT_NO_GRANT, runIndex, address, runLength, keyLength);
            }
            else if (!entry.covers(TransferOp.WRITE, address, runLength)) {
                entry.done(grants);
                refuse(exchange, RESULT_OUTSIDE, runIndex, address, runLength, keyLength);
            }
            else if (!rendezvous) {
                UcpAm.copy(data, address, runLength);
                entry.done(grants);
            }
            else {
                exchange.entry(entry, keyLength, keyBuffer);
                long request = UcpAm.recvDataNbx(worker.worker(), data, address, runLength, worker.emptyParam());
                if (request == 0 || UcpStatus.isError(request)) {
                    if (request != 0) {
                        exchange.result = RESULT_FAILED;
                    }
                    exchange.entries--;
                    entry.done(grants);
                }
                else {
                    receives.add(request, exchange, null, entry);
                    exchange.pending++;
                }
            }
        }
        exchange.settle();
        due |= exchange.state == UcxExchange.ANSWER;
    }

    private void refuse(UcxExchange exchange, byte result, int run, long address, long length, int keyLength)
    {
        exchange.result = result;
        exchange.refused.set(run, address, length);
        String reason = exchange.refused.describe(exchange.op, keyLength, result == RESULT_NO_GRANT ? "no live grant has that key"
                : "outside its grant for " + exchange.op);
        // keyBuffer still holds the key the refusal is about; a range outside every live grant may
        // have been granted until the request's grants began to go, so both results can be late
        grants.refusedKey(endpoints.nameOf(exchange.sender, exchange.replyEp), keyBuffer, keyLength, reason);
    }

    // ---- target of a READ ----

    private void onRead(long header, long headerLength, long data, long length, boolean rendezvous, long replyEp)
    {
        if (headerLength < READ_KEY || replyEp == 0) {
            drop("READ header of " + headerLength + " bytes");
            return;
        }
        int keyLength = UcpAm.getByte(header + 1) & 0xff;
        int firstRun = UcpAm.getInt(header + 4);
        int runs = UcpAm.getInt(header + 8);
        int runCount = UcpAm.getInt(header + 12);
        long handle = UcpAm.getLong(header + 16);
        long sender = UcpAm.getLong(header + 24);
        if (UcpAm.getByte(header) != VERSION || keyLength > TransferBackend.MAX_GRANT_KEY_BYTES || headerLength != READ_KEY + keyLength || rendezvous
                || runs <= 0 || runs > MAX_READ_RUNS || firstRun < 0 || runCount <= 0 || firstRun > runCount - runs || length != (long) runs * READ_RUN_BYTES) {
            drop("READ request of runs " + firstRun + "+" + runs + " of " + runCount + " in " + length + " bytes");
            return;
        }
        UcxExchange exchange = exchange(replyEp, handle, TransferOp.READ, runs, sender);
        if (exchange == null) {
            return;
        }
        UcpAm.copy(header + READ_KEY, keyBuffer, keyLength);
        Grants.Entry entry = grants.admit(keyBuffer, keyLength);
        if (entry == null) {
            refuse(exchange, RESULT_NO_GRANT, firstRun, UcpAm.getLong(data), UcpAm.getLong(data + 8), keyLength);
            exchange.state = UcxExchange.ANSWER;
            due = true;
            return;
        }
        exchange.grow(runs);
        // every run is checked before any byte leaves
        for (int i = 0; i < runs; i++) {
            long address = UcpAm.getLong(data + (long) i * READ_RUN_BYTES);
            long runLength = UcpAm.getLong(data + (long) i * READ_RUN_BYTES + 8);
            if (runLength <= 0 || !entry.covers(TransferOp.READ, address, runLength)) {
                entry.done(grants);
                refuse(exchange, RESULT_OUTSIDE, firstRun + i, address, runLength, keyLength);
                exchange.state = UcxExchange.ANSWER;
                due = true;
                return;
            }
            exchange.addresses[i] = address;
            exchange.lengths[i] = runLength;
        }
        exchange.firstRun = firstRun;
        exchange.entry(entry, keyLength, keyBuffer);
        exchange.state = UcxExchange.SEND_DATA;
        due = true;
    }

    // ---- initiator: READ data and answers ----

    private void onData(long header, long headerLength, long data, long length, boolean rendezvous)
    {
        if (headerLength != DATA_BYTES || UcpAm.getByte(header) != VERSION) {
            drop("DATA header of " + headerLength + " bytes");
            return;
        }
        int run = UcpAm.getInt(header + 4);
        long handle = UcpAm.getLong(header + 8);
        long runLength = UcpAm.getLong(header + 16);
        UcxTransfer transfer = transfers.awaiting(handle);
        if (transfer == null) {
            late("DATA of run " + run);
            return;
        }
        // trust only this side's own bookkeeping: the run must be one the transfer asked for, with its length
        if (transfer.op != TransferOp.READ || run < 0 || run >= transfer.copies.size() || runLength != transfer.copies.length(run)
                || runLength != length || !transfer.markArrived(run)) {
            drop("DATA of run " + run + " (" + runLength + " bytes) for no such READ");
            return;
        }
        long into = transfer.copies.localAddress(run);
        if (!rendezvous) {
            UcpAm.copy(data, into, runLength);
            transfer.arrived++;
            return;
        }
        long request = UcpAm.recvDataNbx(worker.worker(), data, into, runLength, worker.emptyParam());
        if (request == 0) {
            transfer.arrived++;
        }
        else if (UcpStatus.isError(request)) {
            transfer.failedStatus = UcpStatus.statusOf(request);
            transfer.failedCall = "ucp_am_recv_data_nbx";
            transfer.arrived++;
        }
        else {
            transfer.pendingReceives++;
            receives.add(request, null, transfer, null);
        }
    }

    private void onResult(long header, long headerLength)
    {
        if (headerLength != RESULT_BYTES || UcpAm.getByte(header) != VERSION) {
            drop("RESULT header of " + headerLength + " bytes");
            return;
        }
        byte result = UcpAm.getByte(header + 1);
        UcxTransfer transfer = transfers.awaiting(UcpAm.getLong(header + 8));
        if (transfer == null) {
            late("RESULT");
            return;
        }
        if (result == RESULT_OK) {
            transfer.acknowledged = true;
        }
        else if (transfer.refusal == RESULT_OK) {
            transfer.refusal = result;
            transfer.refused.set(UcpAm.getInt(header + 4), UcpAm.getLong(header + 16), UcpAm.getLong(header + 24));
        }
    }

    // ---- each round ----

    /**
     * {@return whether a handler left READ data or an answer to send}: the owner then stops
     * progressing and sends it, rather than first draining every message that arrived, so a
     * peer's window of small transfers is answered one by one instead of in bursts
     */
    boolean answersDue()
    {
        return due;
    }

    /** Completes receives, sends READ data and answers, ends finished exchanges; each round. */
    boolean advance()
    {
        due = false;
        boolean progressed = receives.complete(grants);
        for (int i = openCount - 1; i >= 0; i--) {
            UcxExchange exchange = open[i];
            if (exchange.state == UcxExchange.SEND_DATA) {
                sendData(exchange);
                progressed = true;
            }
            if (exchange.state == UcxExchange.SENDING_DATA && dataSent(exchange)) {
                exchange.entries--;
                exchange.entry.done(grants);
                exchange.state = exchange.result == RESULT_OK ? UcxExchange.DONE : UcxExchange.ANSWER;
                progressed = true;
            }
            if (exchange.state == UcxExchange.ANSWER) {
                answer(exchange);
                progressed = true;
            }
            if (exchange.state == UcxExchange.ANSWERING) {
                byte status = UcpWorker.requestStatus(exchange.answerRequest);
                if (status != UcpStatus.IN_PROGRESS) {
                    UcpWorker.requestFree(exchange.answerRequest);
                    exchange.answerRequest = 0;
                    exchange.state = UcxExchange.DONE;
                }
            }
            if (exchange.state == UcxExchange.DONE) {
                close(i);
                progressed = true;
            }
        }
        return progressed;
    }

    /** {@return true while receives or exchanges are in flight} */
    boolean busy()
    {
        return receives.busy() || openCount > 0;
    }

    private void sendData(UcxExchange exchange)
    {
        int runs = exchange.runCount;
        if (exchange.replyEp == 0) {
            // cut off before its data left: nothing is sent
            Arrays.fill(exchange.requests, 0, runs, 0L);
            exchange.state = UcxExchange.SENDING_DATA;
            return;
        }
        MemorySegment headers = exchange.headers;
        MemorySegment param = worker.amParam();
        int lastFlags = -1;
        for (int i = 0; i < runs; i++) {
            int flags = exchange.lengths[i] <= eagerMax ? UcpAm.SEND_FLAG_EAGER : 0;
            if (flags != lastFlags) {
                lastFlags = flags;
                UcpAm.setSend(param, flags, 0);
            }
            long offset = (long) i * DATA_BYTES;
            headers.set(ValueLayout.JAVA_BYTE, offset, VERSION);
            UcpAm.putInt(headers, offset + 4, exchange.firstRun + i);
            UcpAm.putLong(headers, offset + 8, exchange.handle);
            UcpAm.putLong(headers, offset + 16, exchange.lengths[i]);
            long request = UcpAm.sendNbx(exchange.replyEp, AM_DATA, headers.address() + offset, DATA_BYTES, exchange.addresses[i], exchange.lengths[i],
                    param.address());
            if (UcpStatus.isError(request)) {
                exchange.result = RESULT_FAILED;
                request = 0;
            }
            exchange.requests[i] = request;
        }
        exchange.state = UcxExchange.SENDING_DATA;
    }

    private static boolean dataSent(UcxExchange exchange)
    {
        boolean all = true;
        for (int i = 0; i < exchange.runCount; i++) {
            long request = exchange.requests[i];
            if (request != 0) {
                byte status = UcpWorker.requestStatus(request);
                if (status == UcpStatus.IN_PROGRESS) {
                    all = false;
                    continue;
                }
                UcpWorker.requestFree(request);
                exchange.requests[i] = 0;
            }
        }
        return all;
    }

    private void answer(UcxExchange exchange)
    {
        if (exchange.replyEp == 0) {
            exchange.state = UcxExchange.DONE;
            return;
        }
        MemorySegment header = exchange.answerHeader;
        header.set(ValueLayout.JAVA_BYTE, 0, VERSION);
        header.set(ValueLayout.JAVA_BYTE, 1, exchange.result);
        header.set(ValueLayout.JAVA_BYTE, 2, (byte) exchange.op.ordinal());
        UcpAm.putInt(header, 4, exchange.refused.run());
        UcpAm.putLong(header, 8, exchange.handle);
        UcpAm.putLong(header, 16, exchange.refused.address());
        UcpAm.putLong(header, 24, exchange.refused.length());
        MemorySegment param = worker.amParam();
        UcpAm.setSend(param, 0, 0);
        long request = UcpAm.sendNbx(exchange.replyEp, AM_RESULT, header.address(), RESULT_BYTES, 0, 0, param.address());
        if (request == 0 || UcpStatus.isError(request)) {
            exchange.state = UcxExchange.DONE;
        }
        else {
            exchange.answerRequest = request;
            exchange.state = UcxExchange.ANSWERING;
        }
    }

    /**
     * Cuts off the peers still reading or writing memory under a key whose revoke timed out: their
     * endpoints close by force, which ends their receives and sends. Owner thread.
     */
    void cutOff(byte[] key)
    {
        for (int i = 0; i < openCount; i++) {
            UcxExchange exchange = open[i];
            long replyEp = exchange.replyEp;
            if (replyEp != 0 && exchange.entries > 0 && exchange.keyLength == key.length && Arrays.equals(exchange.key, 0, key.length, key, 0, key.length)) {
                UcxPeer peer = endpoints.peerWithEndpoint(replyEp);
                if (peer != null) {
                    endpoints.markFailed(peer, "it was still reading or writing memory under a grant that was revoked");
                    endpoints.advanceRetiring();
                }
                else {
                    long request = UcpEndpoint.epCloseNbx(replyEp, true, 0);
                    if (request != 0 && !UcpStatus.isError(request)) {
                        UcpWorker.requestFree(request);
                    }
                }
                forget(replyEp);
            }
        }
    }

    /**
     * Stops every open exchange from using an endpoint that was closed by force: UCX frees it, and
     * an answer or READ data sent on it afterwards would touch freed memory. Their receives end
     * with an error, and they close without answering.
     */
    private void forget(long replyEp)
    {
        for (int i = 0; i < openCount; i++) {
            UcxExchange exchange = open[i];
            if (exchange.replyEp == replyEp) {
                exchange.replyEp = 0;
                exchange.result = RESULT_FAILED;
            }
        }
    }

    /** Abandons receives and exchanges at shutdown; destroying the worker ends them. */
    void abandon()
    {
        receives.abandon(grants);
        for (int i = openCount - 1; i >= 0; i--) {
            UcxExchange exchange = open[i];
            for (int r = 0; r < exchange.runCount && exchange.state == UcxExchange.SENDING_DATA; r++) {
                if (exchange.requests[r] != 0) {
                    UcpWorker.requestFree(exchange.requests[r]);
                }
            }
            if (exchange.state == UcxExchange.SENDING_DATA) {
                exchange.entry.done(grants);
            }
            if (exchange.answerRequest != 0) {
                UcpWorker.requestFree(exchange.answerRequest);
            }
            close(i);
        }
    }

    /** Finds the open WRITE exchange of a transfer, or opens one; null when too many are open. */
    private UcxExchange exchange(long replyEp, long handle, TransferOp op, int runCount, long sender)
    {
        if (op == TransferOp.WRITE) {
            for (int i = 0; i < openCount; i++) {
                UcxExchange exchange = open[i];
                if (exchange.handle == handle && exchange.replyEp == replyEp && exchange.op == op && exchange.state == UcxExchange.RECEIVING) {
                    if (exchange.runCount != runCount) {
                        drop("WRITE run count " + runCount + " after " + exchange.runCount);
                        return null;
                    }
                    return exchange;
                }
            }
        }
        if (openCount == MAX_EXCHANGES) {
            drop(MAX_EXCHANGES + " transfers are open at once");
            return null;
        }
        UcxExchange exchange = freeCount > 0 ? free[--freeCount] : new UcxExchange(arena);
        exchange.reset(replyEp, handle, op, runCount, sender);
        if (openCount == open.length) {
            open = Arrays.copyOf(open, open.length * 2);
        }
        open[openCount++] = exchange;
        return exchange;
    }

    private void close(int index)
    {
        UcxExchange exchange = open[index];
        open[index] = open[--openCount];
        open[openCount] = null;
        exchange.entry = null;
        if (freeCount == free.length) {
            free = Arrays.copyOf(free, free.length * 2);
        }
        free[freeCount++] = exchange;
    }
}
