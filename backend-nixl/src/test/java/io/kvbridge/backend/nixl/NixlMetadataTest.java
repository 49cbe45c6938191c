package io.kvbridge.backend.nixl;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The metadata peers exchange: it round-trips, and every malformed field is refused by name. */
@Timeout(10)
final class NixlMetadataTest
{
    private static final byte[] BLOB = {9, 8, 7, 6, 5};
    // offsets in the encoding of metadata with the agent name "né" (3 bytes) and two regions
    private static final int NAME_LENGTH_AT = 10;
    private static final int COUNT_AT = 15;
    private static final int FIRST_REGION_AT = 19;
    private static final int BLOB_LENGTH_AT = FIRST_REGION_AT + 48;

    private static byte[] encoded()
    {
        RegionTable regions = RegionTable.of(List.of(new Allocation(0x10000, 4096, MemoryKind.HOST, 0), new Allocation(0x7f0000000000L, 1 << 20,
                MemoryKind.DEVICE, 3)));
        return new NixlMetadata("né", regions, BLOB).encode();
    }

    private static void assertRefused(String fragment, Consumer<ByteBuffer> corruption)
    {
        byte[] bytes = encoded();
        corruption.accept(ByteBuffer.wrap(bytes));
        KvBridgeException e = assertCode(ErrorCode.PROTOCOL_ERROR, () -> NixlMetadata.decode(bytes));
        assertTrue(e.getMessage().contains(fragment), () -> "expected '" + fragment + "' in: " + e.getMessage());
    }

    @Test
    void roundTripKeepsNameRegionsAndBlob()
    {
        NixlMetadata decoded = NixlMetadata.decode(encoded());
        assertEquals("né", decoded.agentName());
        assertArrayEquals(BLOB, decoded.blob());
        RegionTable regions = decoded.regions();
        assertEquals(2, regions.size());
        assertEquals(MemoryKind.DEVICE, regions.kind(1));
        assertEquals(3, regions.device(1));
        assertEquals(0x7f0000000000L, regions.address(1));
        assertEquals(1 << 20, regions.length(1));
        assertEquals(1, regions.find(MemoryKind.DEVICE, 3, 0x7f0000000000L + 100, 4096, -1));
        assertEquals(-1, regions.find(MemoryKind.DEVICE, 2, 0x7f0000000000L + 100, 4096, -1), "another device's range");
        assertEquals(-1, regions.find(MemoryKind.HOST, 0, 0x10000 + 4000, 200, 0), "past the end");
    }

    @Test
    void malformedFieldsAreRefusedByName()
    {
        assertRefused("not from a nixl transport", buffer -> buffer.put(0, (byte) 'X'));
        assertRefused("version=2 is not supported", buffer -> buffer.putShort(8, (short) 2));
        assertRefused("agent name length=0", buffer -> buffer.putShort(NAME_LENGTH_AT, (short) 0));
        assertRefused("agent name length=2000", buffer -> buffer.putShort(NAME_LENGTH_AT, (short) 2000));
        assertRefused("not valid UTF-8", buffer -> buffer.put(NAME_LENGTH_AT + 2, (byte) 0xff));
        assertRefused("region count=70000", buffer -> buffer.putInt(COUNT_AT, 70000));
        assertRefused("region count=3", buffer -> buffer.putInt(COUNT_AT, 3));
        assertRefused("region 0: kind=7", buffer -> buffer.put(FIRST_REGION_AT, (byte) 7));
        assertRefused("region 0: device=4 for HOST memory", buffer -> buffer.putInt(FIRST_REGION_AT + 4, 4));
        assertRefused("region 1: address=0x0", buffer -> buffer.putLong(FIRST_REGION_AT + 24 + 8, 0));
        assertRefused("region 0: address=0x7fffffffffffffff length=4096", buffer -> buffer.putLong(FIRST_REGION_AT + 8, Long.MAX_VALUE));
        assertRefused("NIXL blob length=0", buffer -> buffer.putInt(BLOB_LENGTH_AT, 0));
        assertRefused("NIXL blob length=6 but 5 bytes follow", buffer -> buffer.putInt(BLOB_LENGTH_AT, 6));
    }

    @Test
    void truncatedOrPaddedMetadataIsRefused()
    {
        byte[] bytes = encoded();
        for (int length = 0; length < bytes.length; length++) {
            byte[] truncated = Arrays.copyOf(bytes, length);
            assertCode(ErrorCode.PROTOCOL_ERROR, () -> NixlMetadata.decode(truncated));
        }
        byte[] padded = Arrays.copyOf(bytes, bytes.length + 1);
        assertTrue(assertCode(ErrorCode.PROTOCOL_ERROR, () -> NixlMetadata.decode(padded)).getMessage().contains("but 6 bytes follow"));
        assertCode(ErrorCode.PROTOCOL_ERROR, () -> NixlMetadata.decode(null));
    }
}
