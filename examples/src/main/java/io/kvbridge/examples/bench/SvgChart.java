package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.config.Sizes;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A hand-written SVG line chart of GB/s against block size (log2 x axis), one line per series.
 * Baselines are drawn dashed with hollow markers, apart from the transports' solid lines, and the
 * legend is as wide as its longest label.
 */
public final class SvgChart
{
    /** The plot area's width; the legend's width comes on top. */
    private static final int PLOT_WIDTH = 520;
    private static final int HEIGHT = 440;
    private static final int LEFT = 70;
    /** The narrowest legend column, and the room before a label (its line sample). */
    private static final int MIN_RIGHT = 170;
    private static final int LABEL_OFFSET = 38;
    /**
     * An upper bound of one character's advance in a 12 px sans-serif font (wide capitals and digits
     * stay under it), so that a label never runs past the edge whatever font the viewer has.
     */
    static final double CHAR_WIDTH = 7.5;
    /** The dash pattern of baselines, in their lines and their legend samples. */
    static final String BASELINE_DASH = "6 4";
    static final String BASELINE_NOTE = "dashed, hollow: baselines";
    private static final int TOP = 40;
    private static final int BOTTOM = 60;
    private static final String[] COLOURS = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

    private SvgChart()
    {
    }

    /**
     * Renders the chart.
     *
     * @param title the chart title.
     * @param blockSizes the x values, in bytes.
     * @param series GB/s per block size, per series name, in legend order; missing points are skipped.
     * @return the SVG document.
     */
    public static String render(String title, List<Long> blockSizes, Map<String, Map<Long, Double>> series)
    {
        return render(title, blockSizes, series, Set.of());
    }

    /**
     * Renders the chart, the series named in {@code baselines} dashed with hollow markers and a
     * legend note saying so.
     *
     * @param title the chart title.
     * @param blockSizes the x values, in bytes.
     * @param series GB/s per block size, per series name, in legend order; missing points are skipped.
     * @param baselines names of series that are baselines, not transports.
     * @return the SVG document.
     */
    public static String render(String title, List<Long> blockSizes, Map<String, Map<Long, Double>> series, Set<String> baselines)
    {
        requireNonNull(title, "title is null");
        requireNonNull(baselines, "baselines is null");
        requireNonNull(blockSizes, "blockSizes is null");
        requireNonNull(series, "series is null");
        double minX = blockSizes.stream().mapToDouble(SvgChart::log2).min().orElse(0);
        double maxX = blockSizes.stream().mapToDouble(SvgChart::log2).max().orElse(1);
        if (maxX - minX < 1) {
            minX -= 0.5;
            maxX += 0.5;
        }
        double maxY = series.values().stream().flatMap(points -> points.values().stream()).mapToDouble(Double::doubleValue).max().orElse(1);
        double yStep = niceStep(maxY / 5);
        double topY = Math.max(yStep, Math.ceil(maxY * 1.05 / yStep) * yStep);
        boolean anyBaseline = series.keySet().stream().anyMatch(baselines::contains);
        int longest = series.keySet().stream().mapToInt(String::length).max().orElse(0);
        if (anyBaseline) {
            longest = Math.max(longest, BASELINE_NOTE.length());
        }
        int right = Math.max(MIN_RIGHT, (int) Math.ceil(LABEL_OFFSET + 12 + longest * CHAR_WIDTH));
        int width = Math.max(LEFT + PLOT_WIDTH + right, (int) Math.ceil(LEFT + title.length() * CHAR_WIDTH * 15 / 12 + 10));
        double plotWidth = PLOT_WIDTH;
        double plotHeight = HEIGHT - TOP - BOTTOM;
        double fromX = minX;
        double spanX = maxX - minX;
        java.util.function.DoubleUnaryOperator x = log -> LEFT + (log - fromX) / spanX * plotWidth;
        java.util.function.DoubleUnaryOperator y = value -> TOP + plotHeight - value / topY * plotHeight;

        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n",
                width, HEIGHT, width, HEIGHT));
        svg.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", width, HEIGHT));
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"24\" font-size=\"15\">%s</text>%n", LEFT, escape(title)));
        for (double value = 0; value <= topY + yStep / 2; value += yStep) {
            double py = y.applyAsDouble(value);
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n", LEFT, py, LEFT + plotWidth, py));
            svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT - 6, py + 4, trim(value)));
        }
        for (long size : blockSizes) {
            double px = x.applyAsDouble(log2(size));
            svg.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>%n", px, TOP, px, TOP + plotHeight));
            svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>%n", px, TOP + plotHeight + 18, escape(Sizes.format(size))));
        }
        svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>%n", LEFT, TOP, plotWidth, plotHeight));
        svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">block size (log2 scale)</text>%n", LEFT + plotWidth / 2, HEIGHT - 14));
        svg.append(String.format(Locale.ROOT, "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">GB/s</text>%n", TOP + plotHeight / 2));
        int index = 0;
        for (Map.Entry<String, Map<Long, Double>> line : series.entrySet()) {
            String colour = COLOURS[index % COLOURS.length];
            boolean baseline = baselines.contains(line.getKey());
            String dash = baseline ? " stroke-dasharray=\"" + BASELINE_DASH + "\"" : "";
            // a hollow marker: the background inside, the colour around
            String marker = baseline ? "fill=\"white\" stroke=\"" + colour + "\" stroke-width=\"1.5\"" : "fill=\"" + colour + "\"";
            StringBuilder points = new StringBuilder();
            for (long size : blockSizes) {
                Double value = line.getValue().get(size);
                if (value != null) {
                    double px = x.applyAsDouble(log2(size));
                    double py = y.applyAsDouble(value);
                    points.append(String.format(Locale.ROOT, "%.1f,%.1f ", px, py));
                    svg.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" %s/>%n", px, py, marker));
                }
            }
            svg.append(String.format(Locale.ROOT, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s/>%n", points.toString().strip(),
                    colour, dash));
            double legendY = TOP + 10 + index * 20;
            svg.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>%n",
                    LEFT + plotWidth + 12, legendY, LEFT + plotWidth + 32, legendY, colour, dash));
            svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\">%s</text>%n", LEFT + plotWidth + LABEL_OFFSET, legendY + 4, escape(line.getKey())));
            index++;
        }
        if (anyBaseline) {
            svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">%s</text>%n", LEFT + plotWidth + LABEL_OFFSET,
                    TOP + 10 + index * 20 + 8.0, BASELINE_NOTE));
        }
        return svg.append("</svg>\n").toString();
    }

    private static double log2(double value)
    {
        return Math.log(value) / Math.log(2);
    }

    private static double niceStep(double raw)
    {
        if (!(raw > 0)) {
            return 1;
        }
        double magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
        double scaled = raw / magnitude;
        return (scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10) * magnitude;
    }

    private static String trim(double value)
    {
        String text = String.format(Locale.ROOT, "%.2f", value);
        return text.contains(".") ? text.replaceAll("0+$", "").replaceAll("\\.$", "") : text;
    }

    private static String escape(String text)
    {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
