package io.kvbridge.examples.cli;

import io.kvbridge.engine.jlama.JlamaModelDirectory;
import io.kvbridge.engine.jlama.SyntheticModel;
import io.kvbridge.engine.jlama.serve.DisaggregatedRun;
import io.kvbridge.engine.jlama.serve.RunOptions;
import io.kvbridge.engine.jlama.serve.RunReport;
import io.kvbridge.engine.jlama.serve.StreamedTtftBenchmark;
import io.kvbridge.engine.jlama.serve.StreamedTtftOptions;
import io.kvbridge.engine.jlama.serve.StreamedTtftReport;
import io.kvbridge.engine.jlama.serve.TtftBenchmark;
import io.kvbridge.engine.jlama.serve.TtftOptions;
import io.kvbridge.engine.jlama.serve.TtftReport;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.stream.Stream;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Option;

/**
 * {@code kvbridge demo --engine jlama}: Jlama as both engines. The demo writes a Jlama model with
 * seeded weights (or takes an existing model directory, {@code --model-dir}), starts a reference JVM, a prefill JVM and a decode JVM, moves every session's KV
 * cache from prefill to decode through kvbridge and checks every generated token and every decode
 * step's logits bits against the reference (see {@link DisaggregatedRun}).
 */
final class JlamaDemo
{
    /** Tokens per kvbridge block in every Jlama run of the demo. */
    private static final int BLOCK_TOKENS = 16;

    @Option(names = "--engine", paramLabel = "ENGINE", defaultValue = "synthetic",
            description = "synthetic (the demo's own engines) or jlama (Jlama prefill and decode JVMs; uses --backend, --mode, --seed, --json, "
                    + "--concurrency, --producer-pp (prefill JVMs, one per pipeline stage, 1 unless given) and the options below) "
                    + "(default: ${DEFAULT-VALUE}).")
    private String engine;

    @Option(names = "--sessions", paramLabel = "N", defaultValue = "4", description = "--engine jlama: sessions to serve (default: ${DEFAULT-VALUE}).")
    private int sessions;

    @Option(names = "--prompt-tokens", paramLabel = "A..B", defaultValue = "32..256",
            description = "--engine jlama: prompt lengths, drawn from A..B (default: ${DEFAULT-VALUE}).")
    private String promptTokens;

    @Option(names = "--decode-tokens", paramLabel = "N", defaultValue = "8",
            description = "--engine jlama: greedy decode steps per session (default: ${DEFAULT-VALUE}).")
    private int decodeTokens;

    @Option(names = "--jlama-model", paramLabel = "SHAPE", defaultValue = "llama",
            description = "--engine jlama: llama (8 layers, 8 query heads over 2 KV heads) or qwen2 (6 layers, 4 KV heads) (default: ${DEFAULT-VALUE}).")
    private String model;

    @Option(names = "--model-dir", paramLabel = "DIR",
            description = "--engine jlama: an existing Jlama model directory (config.json, safetensors weights, tokenizer.json) every engine "
                    + "loads instead of the generated model; its config gives the layers, KV heads, context and vocabulary.")
    private Path modelDirectory;

    @Option(names = "--turns", paramLabel = "N", defaultValue = "1",
            description = "--engine jlama: turns per session; a later turn's prompt repeats the earlier prompt and output and adds 8 to 64 "
                    + "new tokens, and the decoder, which kept the session, receives only the blocks it does not hold (default: ${DEFAULT-VALUE}).")
    private int turns;

    @Option(names = "--hand-back", paramLabel = "on|off", defaultValue = "on",
            description = "--turns above 1: on, the decoder hands each conversation's KV back at a turn's end and the prefill JVM computes only "
                    + "the next turn's new tokens; off, each turn's prefill computes the whole conversation (default: ${DEFAULT-VALUE}).")
    private String handBack;

    @Option(names = "--turn-ttft", paramLabel = "HISTORIES",
            description = "--engine jlama: instead of the sessions, time a conversation's second turn to the decoder's first token after a "
                    + "first turn of these lengths (for example 1024,4096), with the KV handed back against recomputing the conversation.")
    private String turnTtft;

    @Option(names = "--ttft", paramLabel = "LENGTHS",
            description = "--engine jlama: instead of the sessions, time the decoder's first token for prompts of these lengths "
                    + "(for example 256,1024,2048), through kvbridge against the decoder recomputing the prompt.")
    private String ttft;

    @Option(names = "--ttft-runs", paramLabel = "N", defaultValue = "5",
            description = "--ttft: timed pairs per length; the medians are reported (default: ${DEFAULT-VALUE}).")
    private int repetitions;

    @Option(names = "--prefill-chunk", paramLabel = "TOKENS", defaultValue = "0",
            description = "--ttft --stream-layers: the prompt chunk Jlama runs through every layer at a time (jlama.max_batch_size), the same "
                    + "in both engine JVMs; a streamed layer moves only once the last chunk passed it; 0 keeps Jlama's 256 (default: ${DEFAULT-VALUE}).")
    private int prefillChunk;

    @Option(names = "--bit-identity", paramLabel = "on|off", defaultValue = "on",
            description = "--engine jlama: on runs the engine JVMs with -XX:DisableIntrinsic=_VectorReductionCoerced (same logits bits in "
                    + "every JVM, about half the speed); off leaves it out (--ttft only) (default: ${DEFAULT-VALUE}).")
    private String bitIdentity;

    /**
     * Tells whether the command line picked Jlama.
     *
     * @param spec the demo command, for usage errors.
     * @return true for {@code --engine jlama}.
     */
    boolean selected(CommandSpec spec)
    {
        InputChecks.check(spec, engine.equals("synthetic") || engine.equals("jlama"), "--engine=%s (expected: synthetic or jlama)", engine);
        return engine.equals("jlama");
    }

    /**
     * Runs the Jlama demo and prints its audit.
     *
     * @param spec the demo command.
     * @param backend the transport; {@code local} cannot cross JVMs and becomes {@code tcp} unless given explicitly.
     * @param mode push, pull or mixed.
     * @param seed seeds the weights and the prompts.
     * @param json whether to print JSON.
     * @param concurrency the demo's {@code --concurrency}: sessions in flight, each engine getting a slot per session in flight.
     * @return 0 when every token and logit matched, 1 otherwise.
     */
    int run(CommandSpec spec, String backend, String mode, long seed, boolean json, int concurrency)
    {
        boolean backendGiven = spec.commandLine().getParseResult().hasMatchedOption("--backend");
        InputChecks.check(spec, !(backendGiven && backend.equals("local")),
                "--engine jlama runs prefill and decode in JVMs of their own; --backend local stays in one process (pick tcp or ucx)");
        String transport = backendGiven ? backend : "tcp";
        String[] range = promptTokens.split("\\.\\.", -1);
        InputChecks.check(spec, range.length == 2 && range[0].matches("\\d{1,5}") && range[1].matches("\\d{1,5}"),
                "--prompt-tokens=%s (expected: A..B, for example 32..256)", promptTokens);
        int min = Integer.parseInt(range[0]);
        int max = Integer.parseInt(range[1]);
        InputChecks.check(spec, model.equals("llama") || model.equals("qwen2"), "--jlama-model=%s (expected: llama or qwen2)", model);
        int context = modelContext(spec);
        InputChecks.check(spec, min >= 2 && max >= min && max + decodeTokens <= context,
                "--prompt-tokens=%s with --decode-tokens=%d: need 2 <= A <= B and B + decode tokens <= %d (the model's context)", promptTokens,
                decodeTokens, context);
        InputChecks.check(spec, sessions >= 1 && sessions <= 256, "--sessions=%d is outside [1, 256]", sessions);
        InputChecks.check(spec, decodeTokens >= 1 && decodeTokens <= 1024, "--decode-tokens=%d is outside [1, 1024]", decodeTokens);
        InputChecks.check(spec, concurrency >= 1 && concurrency <= RunOptions.MAX_CONCURRENCY, "--concurrency=%d is outside [1, %d]", concurrency,
                RunOptions.MAX_CONCURRENCY);
        InputChecks.check(spec, bitIdentity.equals("on") || bitIdentity.equals("off"), "--bit-identity=%s (expected: on or off)", bitIdentity);
        InputChecks.check(spec, ttft != null || bitIdentity.equals("on"),
                "--bit-identity off is for --ttft only: the sessions' audit compares logits bits, which the flag keeps equal across JVMs");
        InputChecks.check(spec, handBack.equals("on") || handBack.equals("off"), "--hand-back=%s (expected: on or off)", handBack);
        InputChecks.check(spec, ttft != null || prefillChunk == 0, "--prefill-chunk=%d is for --ttft with --stream-layers, and positive", prefillChunk);
        if (turnTtft != null) {
            return JlamaTurnTtft.run(spec, turnTtft, transport, mode.toLowerCase(Locale.ROOT), model, repetitions, bitIdentity.equals("on"), seed, json);
        }
        if (ttft != null) {
            InputChecks.check(spec, modelDirectory == null, "--ttft times the generated model only; leave --model-dir out or run the sessions without --ttft");
            return runTtft(spec, transport, mode.toLowerCase(Locale.ROOT), seed, json);
        }
        InputChecks.check(spec, turns >= 1 && turns <= 4, "--turns=%d is outside [1, 4]", turns);
        int producerPp = producerStages(spec, context);
        // the demo's --stream-layers (a flag of the demo command, read by name): prefill hands each layer over as Jlama computes it
        boolean streamLayers = spec.commandLine().getParseResult().matchedOptionValue("--stream-layers", false);
        InputChecks.check(spec, handBack.equals("off") || turns == 1 || producerPp == 1,
                "--turns %d with --hand-back on needs one prefill JVM: the hand-back lands in the JVM that keeps the conversation and computes its "
                        + "new tokens through every layer, and a --producer-pp stage holds only its own; give --producer-pp 1 or --hand-back off", turns);
        RunOptions options = new RunOptions(transport, mode.toLowerCase(Locale.ROOT), sessions, min, max, decodeTokens, seed, model, BLOCK_TOKENS, -1,
                concurrency, turns, modelDirectory, producerPp, streamLayers).withHandBack(turns > 1 && handBack.equals("on"));
        InputChecks.check(spec, options.maxPositions() <= context,
                "--prompt-tokens=%s, --decode-tokens=%d and --turns=%d need up to %d positions in the last turn but the model's context is %d",
                promptTokens, decodeTokens, turns, options.maxPositions(), context);
        Path directory = runDirectory();
        PrintWriter out = spec.commandLine().getOut();
        try {
            RunReport report = DisaggregatedRun.run(options, directory, System.getProperty("java.class.path"));
            out.println(json ? report.toJson().toString() : report.toText());
            out.flush();
            return report.passed() ? 0 : 1;
        }
        catch (KvBridgeException e) {
            return failed(spec, e);
        }
        finally {
            delete(directory);
        }
    }

    /**
     * The prefill JVMs: {@code --producer-pp} when given (the synthetic demo's default of 2 does not
     * apply), each registering only its equal share of the layers; the decoder is one stage and one
     * tensor-parallel rank, and the producer one rank a stage.
     */
    private int producerStages(CommandSpec spec, int context)
    {
        ParseResult parsed = spec.commandLine().getParseResult();
        int pp = parsed.matchedOptionValue("--producer-pp", 1);
        // Jlama keeps a token's KV heads interleaved in one row; kvbridge moves such blocks only between equal tensor-parallel sizes
        InputChecks.check(spec, parsed.matchedOptionValue("--producer-tp", 1) == 1,
                "--engine jlama runs one tensor-parallel rank per prefill JVM: Jlama keeps a token's KV heads interleaved in one row (tokens outermost), "
                        + "which kvbridge moves only between equal tensor-parallel sizes; leave --producer-tp out");
        InputChecks.check(spec, parsed.matchedOptionValue("--consumer-pp", 1) == 1 && parsed.matchedOptionValue("--consumer-tp", 1) == 1,
                "--engine jlama runs one decode JVM holding every layer; leave --consumer-pp and --consumer-tp out");
        InputChecks.check(spec, pp >= 1 && pp <= RunOptions.MAX_PRODUCER_PP, "--producer-pp=%d is outside [1, %d] for --engine jlama", pp,
                RunOptions.MAX_PRODUCER_PP);
        if (pp > 1) {
            int layers = modelDirectory == null ? SyntheticModel.named(model, 0).layers() : JlamaModelDirectory.inspect(modelDirectory, BLOCK_TOKENS).layers();
            InputChecks.check(spec, layers % pp == 0, "--producer-pp=%d: the model's %d layers do not split into %d equal stages, as Jlama shards "
                    + "layers; give a stage count that divides %d", pp, layers, pp, layers);
        }
        return pp;
    }

    /** The context of the model the run will load: the generated shape's, or the one {@code --model-dir}'s config gives, checked first. */
    private int modelContext(CommandSpec spec)
    {
        if (modelDirectory == null) {
            return SyntheticModel.named(model, 0).contextLength();
        }
        InputChecks.check(spec, !spec.commandLine().getParseResult().hasMatchedOption("--jlama-model"),
                "--jlama-model picks the generated model's shape and --model-dir loads an existing model; give one of them");
        try {
            return JlamaModelDirectory.inspect(modelDirectory, BLOCK_TOKENS).contextLength();
        }
        catch (KvBridgeException e) {
            // the message names the directory and the fix; the stable code stays for the library's callers
            String reason = e.getMessage().substring(e.code().id().length() + 2);
            throw InputChecks.refusal(spec, "--model-dir: %s", ErrorLines.oneLine(reason));
        }
    }

    private int runTtft(CommandSpec spec, String transport, String mode, long seed, boolean json)
    {
        InputChecks.check(spec, ttft.matches("\\d{1,5}(,\\d{1,5})*"), "--ttft=%s (expected: prompt lengths separated by commas, for example 256,1024,2048)", ttft);
        List<Integer> lengths = Stream.of(ttft.split(",")).map(Integer::parseInt).toList();
        InputChecks.check(spec, mode.equals("push") || mode.equals("pull"), "--ttft times one mode at a time; --mode=%s (expected: push or pull)", mode);
        InputChecks.check(spec, repetitions >= 1 && repetitions <= 100, "--ttft-runs=%d is outside [1, 100]", repetitions);
        boolean streamLayers = spec.commandLine().getParseResult().matchedOptionValue("--stream-layers", false);
        InputChecks.check(spec, prefillChunk == 0 || streamLayers && prefillChunk > 0, "--prefill-chunk=%d is for --ttft with --stream-layers, and positive",
                prefillChunk);
        if (streamLayers) {
            // the streamed benchmark writes the model with a context that holds its longest prompt
            InputChecks.check(spec, lengths.stream().allMatch(n -> n >= 2 && n <= StreamedTtftOptions.MAX_PROMPT),
                    "--ttft=%s with --stream-layers: each length must be in [2, %d]", ttft, StreamedTtftOptions.MAX_PROMPT);
            return runStreamedTtft(spec, new StreamedTtftOptions(transport, mode, model, lengths, repetitions, 1, bitIdentity.equals("on"), seed,
                    BLOCK_TOKENS, prefillChunk), json);
        }
        InputChecks.check(spec, lengths.stream().allMatch(n -> n >= 2 && n + 1 <= 4096), "--ttft=%s: each length must be in [2, 4095] (the model's context)",
                ttft);
        TtftOptions options = new TtftOptions(transport, mode, model, lengths, repetitions, 2, bitIdentity.equals("on"), seed, 16);
        return runBenchmark(spec, options.bitIdentical(), directory -> {
            TtftReport report = TtftBenchmark.run(options, directory, System.getProperty("java.class.path"));
            return new Printed(json ? report.toJson().toString() : report.toText(), report.allIdentical());
        });
    }

    /** Streamed against whole hand-off at each length; the generated model's context grows for prompts over 4094 tokens. */
    private int runStreamedTtft(CommandSpec spec, StreamedTtftOptions options, boolean json)
    {
        return runBenchmark(spec, options.bitIdentical(), directory -> {
            StreamedTtftReport report = StreamedTtftBenchmark.run(options, directory, System.getProperty("java.class.path"));
            return new Printed(json ? report.toJson().toString() : report.toText(), report.allIdentical());
        });
    }

    /** A benchmark's report as printed, and whether every pair gave the same bits both ways. */
    record Printed(String text, boolean identical)
    {
    }

    /**
     * Runs a benchmark in a run directory of its own, prints its report and deletes the directory.
     *
     * @return 0, or 1 when it failed or, with the bit-identity flag, a pair's bits differed.
     */
    static int runBenchmark(CommandSpec spec, boolean bitIdentical, Function<Path, Printed> benchmark)
    {
        Path directory = runDirectory();
        PrintWriter out = spec.commandLine().getOut();
        try {
            Printed printed = benchmark.apply(directory);
            out.println(printed.text());
            out.flush();
            return !bitIdentical || printed.identical() ? 0 : 1;
        }
        catch (KvBridgeException e) {
            return failed(spec, e);
        }
        finally {
            delete(directory);
        }
    }

    static int failed(CommandSpec spec, KvBridgeException e)
    {
        spec.commandLine().getErr().println(ErrorLines.prefix(spec.commandLine()) + "failed: " + ErrorLines.oneLine(e.getMessage()));
        spec.commandLine().getErr().flush();
        return 1;
    }

    static Path runDirectory()
    {
        try {
            return Files.createTempDirectory("kvbridge-jlama-");
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot create the run's directory: " + e.getMessage(), e);
        }
    }

    static void delete(Path directory)
    {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException e) {
            // a leftover temporary directory is not a failed run
        }
    }
}
