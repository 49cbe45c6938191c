package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpStatus;
import io.kvbridge.backend.ucx.ffm.UcpWorker;
import io.kvbridge.transport.Grants;
import java.util.Arrays;

/**
 * Rendezvous data receives in flight with {@code access=granted}: into this side's memory for a
 * WRITE a peer was granted (with the exchange and the admitted grant entry it holds), or for a
 * READ this side posted (with its transfer). Parallel arrays that only grow, so tracking a receive
 * allocates nothing.
 *
 * <p>Threads: the owner thread only.
 */
final class UcxDataReceives
{
    private long[] requests = new long[16];
    private UcxExchange[] exchanges = new UcxExchange[16];
    private UcxTransfer[] transfers = new UcxTransfer[16];
    private Grants.Entry[] entries = new Grants.Entry[16];
    private int count;

    /** Tracks a receive: for a granted WRITE's {@code exchange} and {@code entry}, or a READ's {@code transfer}. */
    void add(long request, UcxExchange exchange, UcxTransfer transfer, Grants.Entry entry)
    {
        if (count == requests.length) {
            requests = Arrays.copyOf(requests, count * 2);
            exchanges = Arrays.copyOf(exchanges, count * 2);
            transfers = Arrays.copyOf(transfers, count * 2);
            entries = Arrays.copyOf(entries, count * 2);
        }
        requests[count] = request;
        exchanges[count] = exchange;
        transfers[count] = transfer;
        entries[count] = entry;
        count++;
    }

    /** {@return true while receives are in flight} */
    boolean busy()
    {
        return count > 0;
    }

    /**
     * Ends the receives UCX completed: a WRITE's exchange lets go of its grant entry and may be
     * answered, a READ's transfer counts its run. {@return whether any ended}
     */
    boolean complete(Grants grants)
    {
        boolean progressed = false;
        for (int i = count - 1; i >= 0; i--) {
            long request = requests[i];
            byte status = UcpWorker.requestStatus(request);
            if (status == UcpStatus.IN_PROGRESS) {
                continue;
            }
            UcpWorker.requestFree(request);
            progressed = true;
            UcxExchange exchange = exchanges[i];
            UcxTransfer transfer = transfers[i];
            Grants.Entry entry = entries[i];
            remove(i);
            if (exchange != null) {
                exchange.pending--;
                exchange.entries--;
                entry.done(grants);
                if (status != UcpStatus.OK) {
                    exchange.result = UcxActiveMessages.RESULT_FAILED;
                }
                exchange.settle();
            }
            else {
                transfer.pendingReceives--;
                transfer.arrived++;
                if (status != UcpStatus.OK && transfer.failedCall == null) {
                    transfer.failedStatus = status;
                    transfer.failedCall = "ucp_am_recv_data_nbx";
                }
            }
        }
        return progressed;
    }

    /** Frees every receive at shutdown and lets go of the grant entries they held; destroying the worker ends them. */
    void abandon(Grants grants)
    {
        for (int i = 0; i < count; i++) {
            UcpWorker.requestFree(requests[i]);
            if (entries[i] != null) {
                entries[i].done(grants);
            }
        }
        Arrays.fill(exchanges, 0, count, null);
        Arrays.fill(transfers, 0, count, null);
        Arrays.fill(entries, 0, count, null);
        count = 0;
    }

    private void remove(int index)
    {
        count--;
        requests[index] = requests[count];
        exchanges[index] = exchanges[count];
        transfers[index] = transfers[count];
        entries[index] = entries[count];
        exchanges[count] = null;
        transfers[count] = null;
        entries[count] = null;
    }
}
