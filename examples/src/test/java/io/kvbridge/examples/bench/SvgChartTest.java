package io.kvbridge.examples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

final class SvgChartTest
{
    private static final String LONG_BASELINE = "one TCP stream (C, loopback)";
    private static final String LONGER_TRANSPORT = "ucx batch 16 on registered memory, device 0";

    @Test
    void everyLegendLabelFitsInsideTheChart() throws Exception
    {
        Document svg = render();
        double width = Double.parseDouble(svg.getDocumentElement().getAttribute("width"));
        NodeList texts = svg.getElementsByTagName("text");
        int labels = 0;
        for (int i = 0; i < texts.getLength(); i++) {
            Element text = (Element) texts.item(i);
            String content = text.getTextContent();
            if (content.equals(LONG_BASELINE) || content.equals(LONGER_TRANSPORT) || content.equals(SvgChart.BASELINE_NOTE)) {
                labels++;
                // the label's right end, at the widest a character of the font gets
                double end = Double.parseDouble(text.getAttribute("x")) + content.length() * SvgChart.CHAR_WIDTH;
                assertTrue(end <= width, content + " ends at x=" + end + ", past the chart's width " + width);
            }
        }
        assertEquals(3, labels, "the full labels and the baseline note are in the legend");
    }

    @Test
    void baselinesAreDashedWithHollowMarkersAndTransportsSolid() throws Exception
    {
        Document svg = render();
        Map<String, String> dashByColour = new LinkedHashMap<>();
        NodeList lines = svg.getElementsByTagName("polyline");
        for (int i = 0; i < lines.getLength(); i++) {
            Element line = (Element) lines.item(i);
            dashByColour.put(line.getAttribute("stroke"), line.getAttribute("stroke-dasharray"));
        }
        // series take colours in legend order: the transport first, the baselines after
        List<String> colours = List.copyOf(dashByColour.keySet());
        assertEquals(3, colours.size(), dashByColour.toString());
        assertEquals("", dashByColour.get(colours.get(0)), "the transport is solid");
        assertEquals(SvgChart.BASELINE_DASH, dashByColour.get(colours.get(1)), "memcpy is a baseline");
        assertEquals(SvgChart.BASELINE_DASH, dashByColour.get(colours.get(2)), "the TCP stream is a baseline");
        NodeList markers = svg.getElementsByTagName("circle");
        int hollow = 0;
        for (int i = 0; i < markers.getLength(); i++) {
            Element marker = (Element) markers.item(i);
            boolean transport = marker.getAttribute("stroke").isEmpty() && marker.getAttribute("fill").equals(colours.get(0));
            if (!transport) {
                assertEquals("white", marker.getAttribute("fill"), "a baseline's marker is hollow");
                hollow++;
            }
        }
        assertEquals(4, hollow, "two points of each baseline");
    }

    @Test
    void withoutBaselinesThereIsNoNote() throws Exception
    {
        String svg = SvgChart.render("t", List.of(4096L), Map.of("local", Map.of(4096L, 1.0)));
        assertFalse(svg.contains(SvgChart.BASELINE_NOTE), svg);
        assertFalse(svg.contains("stroke-dasharray"), svg);
    }

    private static Document render() throws Exception
    {
        Map<String, Map<Long, Double>> series = new LinkedHashMap<>();
        series.put(LONGER_TRANSPORT, Map.of(4096L, 1.5, 65536L, 6.0));
        series.put("memcpy (1 thread)", Map.of(4096L, 8.0, 65536L, 12.0));
        series.put(LONG_BASELINE, Map.of(4096L, 0.5, 65536L, 2.0));
        String svg = SvgChart.render("kvbridge WRITE throughput", List.of(4096L, 65536L), series, Set.of("memcpy (1 thread)", LONG_BASELINE));
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(new ByteArrayInputStream(svg.getBytes(StandardCharsets.UTF_8)));
    }
}
