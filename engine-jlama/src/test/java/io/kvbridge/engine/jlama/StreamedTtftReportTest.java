package io.kvbridge.engine.jlama;

import io.kvbridge.engine.jlama.serve.StreamedTtftOptions;
import io.kvbridge.engine.jlama.serve.StreamedTtftReport;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The streamed benchmark's context, the page split Jlama picks for it, and the goal its report
 * checks, without starting an engine.
 */
class StreamedTtftReportTest
{
    private static StreamedTtftOptions lengths(Integer... tokens)
    {
        return new StreamedTtftOptions("tcp", "push", "llama", List.of(tokens), 1, 0, true, 1, 16, 0);
    }

    @Test
    void theContextGrowsInStepsOf4096OnlyWhenAPromptAndItsStepDoNotFit()
    {
        assertEquals(4096, lengths(256, 1024).contextLength());
        assertEquals(4096, lengths(4094).contextLength());
        assertEquals(8192, lengths(4095).contextLength());
        // 8192 prompt tokens and a decode step need 8193 positions
        assertEquals(12288, lengths(256, 8192).contextLength());
    }

    @Test
    void aLongerContextKeepsJlamasPageShapeAndAddsContextPages()
    {
        // llama: 8 layers of 2 KV heads x 32 floats; qwen2: 6 layers of 4 x 32
        JlamaPageGeometry llama = JlamaPageGeometry.compute(8, 12288, 64, 4, JlamaPageGeometry.SESSION_PAGE_BUDGET);
        assertEquals(List.of(8, 2048, 1, 6), List.of(llama.layersPerPage(), llama.tokensPerPage(), llama.layerPages(), llama.contextPages()));
        JlamaPageGeometry qwen2 = JlamaPageGeometry.compute(6, 12288, 128, 4, JlamaPageGeometry.SESSION_PAGE_BUDGET);
        assertEquals(List.of(4, 2048, 2, 6), List.of(qwen2.layersPerPage(), qwen2.tokensPerPage(), qwen2.layerPages(), qwen2.contextPages()));
    }

    @Test
    void theGoalIsTheLongerOfPrefillAndTransferPlusOneLayerWithTenPercentAndNeverSlowerThanWhole()
    {
        // prefill 100 ms, transfer 16 ms over 8 layers: bound 102 ms, so up to 112.2 ms
        StreamedTtftReport.Row within = new StreamedTtftReport.Row(1024, 112.0, 120.0, 0, 0, 100.0, 101.0, 16.0, true, 8);
        assertEquals(102.0, within.boundMs(), 1e-9);
        assertTrue(within.goalMet());
        assertFalse(new StreamedTtftReport.Row(1024, 112.5, 120.0, 0, 0, 100.0, 101.0, 16.0, true, 8).goalMet(), "over 1.10 x bound");
        assertFalse(new StreamedTtftReport.Row(1024, 105.0, 104.0, 0, 0, 100.0, 101.0, 16.0, true, 8).goalMet(), "later than whole");
        // a transfer longer than the prefill sets the bound
        assertEquals(210.0, new StreamedTtftReport.Row(1024, 0, 0, 0, 0, 100.0, 100.0, 200.0, true, 20).boundMs(), 1e-9);
    }

    @Test
    void aPromptOverTheLongestIsRefusedNamingTheRange()
    {
        KvBridgeException refused = assertThrows(KvBridgeException.class, () -> lengths(256, StreamedTtftOptions.MAX_PROMPT + 1));
        assertTrue(refused.getMessage().contains("[2, 16384]"), refused.getMessage());
    }
}
