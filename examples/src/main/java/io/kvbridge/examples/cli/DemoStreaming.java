package io.kvbridge.examples.cli;

import io.kvbridge.api.Integrity;
import io.kvbridge.examples.demo.DemoModel;
import io.kvbridge.examples.demo.DemoOptions;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The demo's prefill options: {@code --stream-layers} (the producer announces each request when its
 * prefill starts and reports each layer as it is computed) and {@code --layer-compute} (a simulated
 * compute per layer), checked against the mode, integrity and faults the streamed hand-off supports.
 */
final class DemoStreaming
{
    /** The longest simulated compute per layer: a 30-layer prefill of 30 s at most per request. */
    private static final Duration MAX_LAYER_COMPUTE = Duration.ofSeconds(1);

    @Spec(Spec.Target.MIXEE)
    private CommandSpec spec;

    @Option(names = "--stream-layers",
            description = "The producer reports each request with prefillStarted, hands its parameters to the decoder at once, and reports each layer "
                    + "with layerComputed once its pages are filled, so that layers move while later ones compute: pushed as each is computed, or, with --mode pull or mixed, read by the decoder "
                    + "as the producer announces them (--integrity off).")
    private boolean streamLayers;

    @Option(names = "--layer-compute", paramLabel = "DURATION", converter = ParsedTextConverter.DurationConverter.class,
            description = "Simulated prefill compute per layer on the producer, e.g. 1ms: its prefill thread sleeps until each layer is due, then "
                    + "fills it; with or without --stream-layers (default: none).")
    private Duration layerCompute;

    /**
     * {@return the options with the prefill chosen, refused up front where the streamed hand-off cannot run}
     *
     * @param options the checked options.
     * @param fault the {@code --fault} given, or null.
     */
    DemoOptions apply(DemoOptions options, String fault)
    {
        long nanos = layerCompute == null ? 0 : layerCompute.toNanos();
        check(layerCompute == null || !layerCompute.isNegative() && layerCompute.compareTo(MAX_LAYER_COMPUTE) <= 0,
                "--layer-compute=%s is outside [0, 1s]", layerCompute);
        if (streamLayers) {
            check(options.integrity() == Integrity.OFF, "--stream-layers cannot be combined with --integrity %s: a block's digest needs its final "
                    + "bytes, and a streamed layer moves before the others are computed; use --integrity off", options.integrity().configName());
        }
        if (streamLayers) {
            // the lease runs from prefillStarted, and a host's prefills go one at a time: the last in flight waits for the others
            long prefillsMillis = (long) options.concurrency() * DemoModel.layerCount(options.model()) * nanos / 1_000_000;
            check(2 * prefillsMillis < options.leaseMillis(), "--stream-layers holds each request under its lease from prefillStarted, and with "
                    + "--concurrency=%d a prefill of %d layers x %s ms may wait for the others: %d ms must stay below half of --lease-seconds=%s; "
                    + "lower --concurrency or --layer-compute, or raise --lease-seconds", options.concurrency(), DemoModel.layerCount(options.model()),
                    nanos / 1e6, prefillsMillis, options.leaseMillis() / 1000.0);
        }
        check(fault == null || !streamLayers && nanos == 0, "--fault=%s acts on a prefill that ends at once; drop --stream-layers and --layer-compute",
                fault);
        return options.withPrefill(streamLayers, nanos);
    }

    private void check(boolean condition, String format, Object... args)
    {
        InputChecks.check(spec, condition, format, args);
    }
}
