package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Metadata round-trips, and every malformed input is refused with PROTOCOL_ERROR naming the problem. */
@Timeout(30)
final class UcxMetadataTest
{
    private static final UcxMetadata SAMPLE = new UcxMetadata(42L, "decode-0", new byte[] {1, 2, 3}, 524288,
            List.of(new UcxMetadata.Region(0x20000, 4096, new byte[] {9, 9}), new UcxMetadata.Region(0x10000, 8192, new byte[] {7})));

    @Test
    void roundTripsAndSortsRegions()
    {
        UcxMetadata decoded = UcxMetadata.decode(SAMPLE.encode());
        assertEquals(42L, decoded.instanceId());
        assertEquals("decode-0", decoded.agentName());
        assertArrayEquals(new byte[] {1, 2, 3}, decoded.workerAddress());
        assertEquals(524288, decoded.tcpSegmentBytes());
        assertEquals(0x10000, decoded.regions().get(0).address());
        assertEquals(8192, decoded.regions().get(0).length());
        assertArrayEquals(new byte[] {7}, decoded.regions().get(0).packedKey());
        assertEquals(0x20000, decoded.regions().get(1).address());
    }

    @Test
    void everyTruncationIsRefused()
    {
        byte[] bytes = SAMPLE.encode();
        for (int length = 0; length < bytes.length; length++) {
            int cut = length;
            KvBridgeException e = assertThrows(KvBridgeException.class, () -> UcxMetadata.decode(Arrays.copyOf(bytes, cut)), () -> "length " + cut);
            assertEquals(ErrorCode.PROTOCOL_ERROR, e.code());
        }
    }

    @Test
    void trailingBytesAreRefused()
    {
        byte[] bytes = Arrays.copyOf(SAMPLE.encode(), SAMPLE.encode().length + 1);
        assertProtocolError(bytes, "unexpected bytes");
    }

    @Test
    void foreignMagicAndVersionAreRefused()
    {
        byte[] bytes = SAMPLE.encode();
        bytes[0] = 'X';
        assertProtocolError(bytes, "magic=");
        byte[] version = SAMPLE.encode();
        version[5] = 9;
        assertProtocolError(version, "version=9");
    }

    @Test
    void overlappingAndInvalidRegionsAreRefused()
    {
        assertProtocolError(new UcxMetadata(1, "a", new byte[] {1}, 0,
                List.of(new UcxMetadata.Region(0x1000, 8192, new byte[] {1}), new UcxMetadata.Region(0x2000, 16, new byte[] {1}))).encode(), "overlap");
        assertProtocolError(new UcxMetadata(1, "a", new byte[] {1}, 0, List.of(new UcxMetadata.Region(-5, 16, new byte[] {1}))).encode(), "not a valid range");
        assertProtocolError(new UcxMetadata(1, "a", new byte[] {1}, 0, List.of(new UcxMetadata.Region(Long.MAX_VALUE - 4, 16, new byte[] {1}))).encode(),
                "not a valid range");
        assertProtocolError(new UcxMetadata(1, "a", new byte[] {1}, 0,
                List.of(new UcxMetadata.Region(0x1000, 16, new byte[UcxMetadata.MAX_PACKED_KEY_BYTES + 1]))).encode(), "packed key length=16385");
    }

    @Test
    void aGrantedInstancesRegionsCarryNoKey()
    {
        UcxMetadata granted = new UcxMetadata(1, "a", new byte[] {1}, 0, List.of(new UcxMetadata.Region(0x1000, 16, new byte[0])));
        UcxMetadata.Region decoded = UcxMetadata.decode(granted.encode()).regions().getFirst();
        assertTrue(decoded.sameAs(granted.regions().getFirst()), decoded::toString);
        assertEquals(0, decoded.packedKey().length);
    }

    @Test
    void absurdCountsAreRefusedBeforeAllocating()
    {
        ByteBuffer bytes = ByteBuffer.allocate(64);
        bytes.putInt(UcxMetadata.MAGIC).putShort(UcxMetadata.VERSION).putLong(1).putShort((short) 1).put((byte) 'a').putInt(1).put((byte) 1).putInt(0);
        bytes.putInt(Integer.MAX_VALUE);
        assertProtocolError(Arrays.copyOf(bytes.array(), bytes.position()), "region count=");
        ByteBuffer address = ByteBuffer.allocate(32);
        address.putInt(UcxMetadata.MAGIC).putShort(UcxMetadata.VERSION).putLong(1).putShort((short) 1).put((byte) 'a').putInt(-1);
        assertProtocolError(Arrays.copyOf(address.array(), address.position()), "worker address length=-1");
        ByteBuffer segment = ByteBuffer.allocate(32);
        segment.putInt(UcxMetadata.MAGIC).putShort(UcxMetadata.VERSION).putLong(1).putShort((short) 1).put((byte) 'a').putInt(1).put((byte) 1).putInt(-7);
        assertProtocolError(Arrays.copyOf(segment.array(), segment.position()), "tcp segment=-7");
    }

    @Test
    void invalidUtf8NamesAreRefused()
    {
        ByteBuffer bytes = ByteBuffer.allocate(64);
        bytes.putInt(UcxMetadata.MAGIC).putShort(UcxMetadata.VERSION).putLong(1).putShort((short) 2).put((byte) 0xC3).put((byte) 0x28)
                .putInt(1).put((byte) 1).putInt(0).putInt(0);
        assertProtocolError(Arrays.copyOf(bytes.array(), bytes.position()), "UTF-8");
    }

    private static void assertProtocolError(byte[] bytes, String expected)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> UcxMetadata.decode(bytes));
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }
}
