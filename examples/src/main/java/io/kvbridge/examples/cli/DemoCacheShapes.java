package io.kvbridge.examples.cli;

import io.kvbridge.api.BlockSizes;
import io.kvbridge.examples.demo.DemoOptions;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The demo's cache-shape options: how each engine keeps K and V, where it keeps its layers, and its
 * scheduler and kernel block sizes, each {@code VALUE} or {@code PRODUCER:CONSUMER}; checked together
 * into the two engines' {@link DemoOptions.CacheShape}s.
 */
final class DemoCacheShapes
{
    private static final List<String> KV_PLANES = DemoOptions.CacheShape.KV_PLANES;
    private static final List<String> PLACEMENTS = DemoOptions.CacheShape.PLACEMENTS;

    /** Values of {@code --kv-planes}, for help and completion. */
    static final class KvPlanesValues extends ArrayList<String>
    {
        KvPlanesValues()
        {
            super(KV_PLANES);
        }
    }

    /** Values of {@code --placement}, for help and completion. */
    static final class PlacementValues extends ArrayList<String>
    {
        PlacementValues()
        {
            super(PLACEMENTS);
        }
    }

    @Spec(Spec.Target.MIXEE)
    private CommandSpec spec;

    @Option(names = "--kv-planes", defaultValue = "joint", paramLabel = "PLANES[:C]", completionCandidates = KvPlanesValues.class,
            description = "How each engine keeps K and V (per-layer layout): joint, split ([2, blocks, ...]) or blockwise ([blocks, 2, ...]); "
                    + "PRODUCER:CONSUMER to differ (default: ${DEFAULT-VALUE}).")
    private String kvPlanes;

    @Option(names = "--placement", defaultValue = "per-layer", paramLabel = "PLACEMENT[:C]", completionCandidates = PlacementValues.class,
            description = "Where each engine keeps its layers (per-layer layout): per-layer or cross-layer (every block a row of all layers' pages); "
                    + "PRODUCER:CONSUMER to differ (default: ${DEFAULT-VALUE}).")
    private String placement;

    @Option(names = "--block-tokens", defaultValue = "16", paramLabel = "P[:C]",
            description = "Tokens per scheduler block of each engine, PRODUCER:CONSUMER to differ, e.g. 16:32 (default: ${DEFAULT-VALUE}).")
    private String blockTokens;

    @Option(names = "--kernel-block-tokens", paramLabel = "P[:C]",
            description = "Tokens per attention-kernel block of each engine, dividing its scheduler block (default: the scheduler block).")
    private String kernelBlockTokens;

    /**
     * {@return the producer's and the consumer's cache shapes, checked against each other, the model and the layout}
     *
     * @param hybrid whether the model has Mamba layers, whose state has no K and V planes.
     * @param layout the cache layout both engines describe their caches with.
     */
    DemoOptions.CacheShape[] shapes(boolean hybrid, DemoCommand.Layout layout)
    {
    String[] planes = sides("--kv-planes", kvPlanes);
    String[] places = sides("--placement", placement);
    String[] blocks = sides("--block-tokens", blockTokens);
    String[] kernels = kernelBlockTokens == null ? blocks : sides("--kernel-block-tokens", kernelBlockTokens);
    DemoOptions.CacheShape[] shapes = new DemoOptions.CacheShape[2];
    for (int side = 0; side < 2; side++) {
        String who = side == 0 ? "producer" : "consumer";
        check(KV_PLANES.contains(planes[side]), "--kv-planes: %s value %s is not one of %s", who, planes[side], String.join(", ", KV_PLANES));
        check(PLACEMENTS.contains(places[side]), "--placement: %s value %s is not one of %s", who, places[side], String.join(", ", PLACEMENTS));
        int logical = tokens("--block-tokens", who, blocks[side]);
        int kernel = tokens("--kernel-block-tokens", who, kernels[side]);
        try {
            BlockSizes.kernelBlocksPerLogical(logical, kernel);
        }
        catch (KvBridgeException e) {
            check(false, "--kernel-block-tokens: %s value %d with --block-tokens %d: %s", who, kernel, logical, e.getMessage());
        }
        shapes[side] = new DemoOptions.CacheShape(planes[side], places[side], logical, kernel);
    }
    check(!hybrid || !planes[0].equals("split") && !planes[1].equals("split"), "--kv-planes=%s puts K and V in a [2, blocks, ...] tensor, "
            + "which a Mamba layer's state has no planes for; use joint or blockwise with --model hybrid-ssm", kvPlanes);
    check(planes[0].equals("joint") == planes[1].equals("joint"), "--kv-planes=%s pairs joint K/V with planes, which order K and V differently "
            + "(keys and values side by side per token, or apart); use joint on both engines, or split and blockwise in any combination", kvPlanes);
    boolean shaped = !shapes[0].defaultPlacement() || !shapes[1].defaultPlacement();
    check(!shaped || layout == DemoCommand.Layout.PER_LAYER, "--kv-planes and --placement are options of the per-layer layout; add --layout per-layer");
    check(layout != DemoCommand.Layout.HMA || shapes[0].blockTokens() == shapes[1].blockTokens(),
            "--layout hma keeps only the blocks a sliding window still needs, counted in each engine's own block size, which do not line up between "
                    + "block sizes %d and %d; use equal --block-tokens, or --layout per-layer", shapes[0].blockTokens(), shapes[1].blockTokens());
        return shapes;
    }

    /** Splits a {@code PRODUCER[:CONSUMER]} value into the two sides' values. */
    private String[] sides(String option, String value)
    {
        String[] parts = value.split(":", -1);
        check(parts.length <= 2 && !parts[0].isEmpty() && !parts[parts.length - 1].isEmpty(), "%s=%s is not VALUE or PRODUCER:CONSUMER", option, value);
        return new String[] {parts[0], parts[parts.length - 1]};
    }

    private int tokens(String option, String who, String value)
    {
        int tokens = 0;
        try {
            tokens = Integer.parseInt(value);
        }
        catch (NumberFormatException e) {
            check(false, "%s: %s value %s is not a number of tokens", option, who, value);
        }
        // powers of two, so that the two engines' block sizes always divide one another
        check(tokens >= 1 && tokens <= 1024 && Integer.bitCount(tokens) == 1, "%s: %s value %d is not a power of two in [1, 1024]", option, who, tokens);
        return tokens;
    }

    private void check(boolean condition, String format, Object... args)
    {
        InputChecks.check(spec, condition, format, args);
    }
}
