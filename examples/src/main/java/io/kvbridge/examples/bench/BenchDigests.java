package io.kvbridge.examples.bench;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Locale;
import java.util.zip.CRC32C;

/**
 * The bench's counterpart of the engine's block digests ({@code integrity=crc32c}): a CRC32C of each
 * source block before its transfer is posted, as a producer digests its blocks at
 * {@code prefillFinished}, and of the destination block once the transfer is DONE, compared with it,
 * as a consumer checks before it reports a request received. Both run on the stream's thread, so
 * their cost is in the pass's time. One checksum and one buffer per side, made once: a transfer
 * allocates nothing.
 */
final class BenchDigests implements TransferStream.BlockCheck
{
    private final String transport;
    private final ByteBuffer source;
    private final ByteBuffer destination;
    private final int blockBytes;
    private final int[] expected;
    private final CRC32C crc = new CRC32C();

    BenchDigests(String transport, MemorySegment source, MemorySegment destination, long blockBytes, int blocks)
    {
        KvBridgeException.check(source.byteSize() <= Integer.MAX_VALUE && blockBytes <= Integer.MAX_VALUE, ErrorCode.INVALID_ARGUMENT,
                "block digests in the bench read the total through one buffer of at most 2 GiB; --total-bytes=%d is larger", source.byteSize());
        this.transport = transport;
        this.source = source.asByteBuffer();
        this.destination = destination.asByteBuffer();
        this.blockBytes = (int) blockBytes;
        this.expected = new int[blocks];
    }

    @Override
    public void posting(int transfer)
    {
        expected[transfer] = digest(source, transfer);
    }

    @Override
    public void done(int transfer)
    {
        int actual = digest(destination, transfer);
        if (actual != expected[transfer]) {
            throw new KvBridgeException(ErrorCode.DIGEST_MISMATCH, String.format(Locale.ROOT,
                    "transport=%s block %d of %d bytes: CRC32C %08x after the transfer, %08x before it", transport, transfer, blockBytes, actual,
                    expected[transfer]));
        }
    }

    private int digest(ByteBuffer memory, int block)
    {
        int from = block * blockBytes;
        memory.limit(from + blockBytes).position(from);
        crc.reset();
        crc.update(memory);
        return (int) crc.getValue();
    }
}
