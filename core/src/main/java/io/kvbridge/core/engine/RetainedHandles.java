package io.kvbridge.core.engine;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.StringJoiner;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transfers of one rank whose handle could not be released: a status error does not prove the
 * data stopped moving, so the handle and its blocks are kept until a release succeeds (or the
 * transport no longer knows the handle). Worker thread only.
 */
final class RetainedHandles
{
    private static final Logger LOG = LoggerFactory.getLogger(RetainedHandles.class);
    // retained handles named by a health report; the rest are counted
    private static final int REPORTED_HANDLES = 4;

    private final String name;
    private final TransferBackend transport;
    private final List<Transfer> retained = new ArrayList<>();

    RetainedHandles(String name, TransferBackend transport)
    {
        this.name = name;
        this.transport = transport;
    }

    /** Releases a transfer's handle, or keeps the transfer to retry when the release fails. */
    void release(Transfer transfer)
    {
        try {
            transport.release(transfer.handle);
            if (transfer.mark != null) {
                transfer.mark.close();
            }
        }
        catch (RuntimeException e) {
            LOG.warn("{}: releasing transfer handle 0x{} failed, retained and retried: {}", name, Long.toHexString(transfer.handle), e.toString());
            retained.add(transfer);
        }
    }

    /** Retries every retained release; each transfer released now goes to {@code outcome}. */
    void retry(InFlightTransfers.Outcome outcome)
    {
        for (Iterator<Transfer> it = retained.iterator(); it.hasNext(); ) {
            Transfer transfer = it.next();
            try {
                transport.release(transfer.handle);
            }
            catch (KvBridgeException e) {
                if (e.code() != ErrorCode.HANDLE_UNKNOWN) {
                    continue;
                }
            }
            catch (RuntimeException e) {
                continue;
            }
            if (transfer.mark != null) {
                transfer.mark.close();
            }
            it.remove();
            outcome.releasedLate(transfer);
        }
    }

    /** {@return whether a retained transfer belongs to {@code owner}} */
    boolean holds(Object owner)
    {
        for (Transfer transfer : retained) {
            if (transfer.owner == owner) {
                return true;
            }
        }
        return false;
    }

    int size()
    {
        return retained.size();
    }

    /** {@return a health report of the retained handles, answered now} */
    HealthReport report(long now)
    {
        long oldest = now;
        StringJoiner ids = new StringJoiner(", ");
        for (int i = 0; i < retained.size(); i++) {
            Transfer transfer = retained.get(i);
            if (transfer.postedNanos - oldest < 0) {
                oldest = transfer.postedNanos;
            }
            if (i < REPORTED_HANDLES) {
                ids.add("0x" + Long.toHexString(transfer.handle));
            }
        }
        return new HealthReport(retained.size(), ids + (retained.size() > REPORTED_HANDLES ? ", ..." : ""), now - oldest,
                System.nanoTime());
    }
}
