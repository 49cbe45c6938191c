package io.kvbridge.layout.mla;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvbridge.layout.mla.PackedMlaDescriptor.Row;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.layout.LayerView;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

final class PackedMlaDescriptorTest
{
    @Test
    void pagesOffsetsAndRows()
    {
        assertEquals(16 * 576 * 2, PackedMlaDescriptor.pageBytes(16, 576, 2));
        long[] pages = {100, 200, 50};
        assertEquals(0, PackedMlaDescriptor.memberOffset(pages, 0));
        assertEquals(300, PackedMlaDescriptor.memberOffset(pages, 2));
        assertEquals(350, PackedMlaDescriptor.rowBytes(pages));
        assertEquals(0, PackedMlaDescriptor.rowBytes(new long[0]));
        assertEquals(1000 + 3 * 350 + 100, PackedMlaDescriptor.memberAddress(1000, 3, 350, 100));
        assertThrows(KvBridgeException.class, () -> PackedMlaDescriptor.memberOffset(pages, 3));
        assertThrows(KvBridgeException.class, () -> PackedMlaDescriptor.pageBytes(0, 576, 2));
    }

    @Test
    void interleavedViewsShareARowOnlyWhenTheirPagesFillItWithoutGaps()
    {
        LayerView a = new LayerView("a", 4096, 32, 96, 4);
        LayerView b = new LayerView("b", 4096 + 32, 32, 96, 4);
        LayerView c = new LayerView("c", 4096 + 64, 32, 96, 4);
        assertEquals(Optional.of(new Row(4096, 96, 96, 4)), PackedMlaDescriptor.sharedRow(List.of(c, a, b)));
        assertEquals(Optional.of(new Row(4096, 64, 96, 4)), PackedMlaDescriptor.sharedRow(List.of(a, b)), "padding at the row end stays out");
        assertEquals(Optional.empty(), PackedMlaDescriptor.sharedRow(List.of(a, c)), "a gap between pages");
        assertEquals(Optional.empty(), PackedMlaDescriptor.sharedRow(List.of(a, new LayerView("d", 4096 + 32, 32, 64, 4))), "another stride");
        assertEquals(Optional.empty(), PackedMlaDescriptor.sharedRow(List.of(a, new LayerView("e", 4096 + 32, 32, 96, 3))), "another block count");
        assertEquals(Optional.empty(), PackedMlaDescriptor.sharedRow(List.of(new LayerView("f", 4096, 64, 64, 4), new LayerView("g", 4096 + 32, 64, 64, 4))),
                "pages spilling past one stride");
        assertEquals(Optional.empty(), PackedMlaDescriptor.sharedRow(List.of()));
    }
}
