package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpAm;
import io.kvbridge.backend.ucx.ffm.UcpStatus;
import io.kvbridge.backend.ucx.ffm.UcpWorker;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;

/**
 * The initiator's messages with {@code access=granted}: one active message per coalesced run for a
 * WRITE, the runs' list in requests of at most {@link UcxActiveMessages#MAX_READ_RUNS} for a READ,
 * and the error a target's refusal becomes. Headers live in one buffer of the transfer until it
 * ends, since UCX 1.13 reads them until a send completes. Send requests are freed at once; a
 * transfer with a send still running is flushed, which tells when every send is complete.
 *
 * <p>Threads: the owner thread only.
 */
final class UcxGrantedSends
{
    private UcxGrantedSends()
    {
    }

    /** Sends a WRITE's runs, eagerly where a run has at most {@code eagerMax} bytes. */
    static void writes(UcxTransfer transfer, UcxWorker worker, long instanceId, int eagerMax)
    {
        var copies = transfer.copies;
        int runs = copies.size();
        int keyLength = transfer.grantKeyLength;
        long endpoint = transfer.peer.endpoint;
        MemorySegment param = worker.amParam();
        int headerBytes = UcxActiveMessages.WRITE_KEY + keyLength;
        int stride = (headerBytes + 7) & ~7;
        MemorySegment headers = headers(transfer, worker, (long) stride * runs);
        int lastRegion = -1;
        int lastFlags = -1;
        for (int i = 0; i < runs; i++) {
            int region = copies.localRegion(i);
            int flags = copies.length(i) <= eagerMax ? UcpAm.SEND_FLAG_REPLY | UcpAm.SEND_FLAG_EAGER : UcpAm.SEND_FLAG_REPLY;
            if (region != lastRegion || flags != lastFlags) {
                lastRegion = region;
                lastFlags = flags;
                UcpAm.setSend(param, flags, transfer.localList.memoryHandle(region));
            }
            long offset = (long) stride * i;
            headers.set(ValueLayout.JAVA_BYTE, offset, UcxActiveMessages.VERSION);
            headers.set(ValueLayout.JAVA_BYTE, offset + 1, (byte) keyLength);
            UcpAm.putInt(headers, offset + 4, i);
            UcpAm.putInt(headers, offset + 8, runs);
            UcpAm.putLong(headers, offset + 16, transfer.wireHandle);
            UcpAm.putLong(headers, offset + 24, instanceId);
            UcpAm.putLong(headers, offset + 32, copies.remoteAddress(i));
            UcpAm.putLong(headers, offset + 40, copies.length(i));
            MemorySegment.copy(transfer.grantKey, 0, headers, ValueLayout.JAVA_BYTE, offset + UcxActiveMessages.WRITE_KEY, keyLength);
            long request = UcpAm.sendNbx(endpoint, UcxActiveMessages.AM_WRITE, headers.address() + offset, headerBytes, copies.localAddress(i),
                    copies.length(i), param.address());
            if (!sent(transfer, request, "ucp_am_send_nbx (WRITE)")) {
                break;
            }
            if (i % UcxTransfers.PROGRESS_EVERY == UcxTransfers.PROGRESS_EVERY - 1) {
                UcpWorker.workerProgress(worker.worker());
            }
        }
    }

    /** Sends a READ's requests. */
    static void readRequests(UcxTransfer transfer, UcxWorker worker, long instanceId)
    {
        var copies = transfer.copies;
        int runs = copies.size();
        int keyLength = transfer.grantKeyLength;
        long endpoint = transfer.peer.endpoint;
        MemorySegment param = worker.amParam();
        int headerBytes = UcxActiveMessages.READ_KEY + keyLength;
        int stride = (headerBytes + 7) & ~7;
        int messages = (runs + UcxActiveMessages.MAX_READ_RUNS - 1) / UcxActiveMessages.MAX_READ_RUNS;
        MemorySegment buffer = headers(transfer, worker, (long) stride * messages + (long) runs * UcxActiveMessages.READ_RUN_BYTES);
        long listBase = (long) stride * messages;
        for (int i = 0; i < runs; i++) {
            UcpAm.putLong(buffer, listBase + (long) i * UcxActiveMessages.READ_RUN_BYTES, copies.remoteAddress(i));
            UcpAm.putLong(buffer, listBase + (long) i * UcxActiveMessages.READ_RUN_BYTES + 8, copies.length(i));
        }

        UcpAm.setSend(param, UcpAm.SEND_FLAG_REPLY | UcpAm.SEND_FLAG_EAGER, 0);
        for (int m = 0; m < messages; m++) {
            int first = m * UcxActiveMessages.MAX_READ_RUNS;
            int count = Math.min(UcxActiveMessages.MAX_READ_RUNS, runs - first);
            long offset = (long) stride * m;
            buffer.set(ValueLayout.JAVA_BYTE, offset, UcxActiveMessages.VERSION);
            buffer.set(ValueLayout.JAVA_BYTE, offset + 1, (byte) keyLength);
            UcpAm.putInt(buffer, offset + 4, first);
            UcpAm.putInt(buffer, offset + 8, count);
            UcpAm.putInt(buffer, offset + 12, runs);
            UcpAm.putLong(buffer, offset + 16, transfer.wireHandle);
            UcpAm.putLong(buffer, offset + 24, instanceId);
            MemorySegment.copy(transfer.grantKey, 0, buffer, ValueLayout.JAVA_BYTE, offset + UcxActiveMessages.READ_KEY, keyLength);
            long request = UcpAm.sendNbx(endpoint, UcxActiveMessages.AM_READ, buffer.address() + offset, headerBytes,
                    buffer.address() + listBase + (long) first * UcxActiveMessages.READ_RUN_BYTES, (long) count * UcxActiveMessages.READ_RUN_BYTES,
                    param.address());
            if (!sent(transfer, request, "ucp_am_send_nbx (READ request)")) {
                break;
            }
        }
    }

    /** A header buffer for the slot, from the owner's pool (or a private arena past its largest size). */
    private static MemorySegment headers(UcxTransfer transfer, UcxWorker worker, long bytes)
    {
        MemorySegment buffer = bytes <= NativeBuffers.MAX_BYTES ? worker.buffers().take(bytes) : transfer.largeHeaders(bytes);
        transfer.amHeaders = buffer;
        return buffer;
    }

    private static boolean sent(UcxTransfer transfer, long request, String call)
    {
        if (request == 0) {
            return true;
        }
        // a send still running, or one issued before a failure, still reads this side's memory: the flush waits for it
        transfer.sendsPending = true;
        if (UcpStatus.isError(request)) {
            transfer.failedStatus = UcpStatus.statusOf(request);
            transfer.failedCall = call;
            return false;
        }
        UcpWorker.requestFree(request);
        return true;
    }

    /** {@return the failure a target's refusal of a transfer becomes} */
    static KvBridgeException refused(UcxTransfer transfer, String description)
    {
        String why = switch (transfer.refusal) {
            case UcxActiveMessages.RESULT_NO_GRANT -> transfer.grantKeyLength == 0 ? "no grant key was presented"
                    : "it has no live grant under the key presented";
            case UcxActiveMessages.RESULT_OUTSIDE -> "no grant under the key presented covers that range for " + transfer.op;
            default -> "it could not complete the access";
        };
        ErrorCode code = transfer.refusal == UcxActiveMessages.RESULT_FAILED ? ErrorCode.TRANSFER_FAILED : ErrorCode.NOT_GRANTED;
        return new KvBridgeException(code, String.format(Locale.ROOT, "%s was refused by peer '%s': run %d (%d bytes at its 0x%x): %s", description,
                transfer.peer.name(), transfer.refused.run(), transfer.refused.length(), transfer.refused.address(), why));
    }
}
