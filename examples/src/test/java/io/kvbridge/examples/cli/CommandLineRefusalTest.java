package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.engine.jlama.SyntheticModel;
import io.kvbridge.engine.jlama.SyntheticModelWriter;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every refused command line ends before any work with exit code 2 and exactly two lines on stderr:
 * the value, why and the fix, then where the options are described; nothing on stdout. The
 * per-case timeout is what a command that reads {@code /dev/zero}, allocates a 1 GiB table of 1-byte
 * transfers or runs a whole bench before refusing its plot path cannot meet.
 */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
final class CommandLineRefusalTest
{
    private static final Set<String> COMMANDS = Set.of("demo", "bench", "inspect", "plugins", "completion");

    @TempDir
    static Path directory;

    @BeforeAll
    static void files() throws IOException
    {
        Files.writeString(directory.resolve("a-file"), "not a directory");
        Files.writeString(directory.resolve("short-secret"), "too short");
        try (RandomAccessFile sparse = new RandomAccessFile(directory.resolve("huge-secret").toFile(), "rw")) {
            // a 1 GiB file without 1 GiB on disk: only its length is large
            sparse.setLength(1L << 30);
        }
        // secrets are refused when others may read them, as the configuration's secret_file is; these are refused for other reasons
        for (String secret : new String[] {"short-secret", "huge-secret"}) {
            Files.setPosixFilePermissions(directory.resolve(secret), PosixFilePermissions.fromString("rw-------"));
        }
        Files.writeString(directory.resolve("readable-secret"), "0123456789abcdef0123456789abcdef");
        // model directories that --model-dir refuses, and one it takes
        SyntheticModelWriter.write(directory.resolve("long-model"), SyntheticModel.llamaGqa(1));
        SyntheticModelWriter.write(directory.resolve("short-model"), new SyntheticModel("llama", 8, 8, 2, 256, 512, 512, 1024, 1));
        for (String[] edit : new String[][] {{"mamba-model", "model_type", "mamba"}, {"int8-model", "torch_dtype", "int8"}}) {
            Path model = SyntheticModelWriter.write(directory.resolve(edit[0]), SyntheticModel.llamaGqa(1));
            Path config = model.resolve("config.json");
            Files.writeString(config, Files.readString(config).replaceFirst("\"" + edit[1] + "\"\\s*:\\s*\"[^\"]*\"", "\"" + edit[1] + "\":\"" + edit[2] + "\""));
        }
        Files.setPosixFilePermissions(directory.resolve("readable-secret"), PosixFilePermissions.fromString("rw-r--r--"));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            // values outside the listed ones, named with the list
            "demo --mode foo|--mode=foo is not one of push, pull, mixed",
            "demo --layout diagonal|--layout=diagonal is not one of hma, mla, per-layer",
            "demo --backend carrier-pigeon|--backend=carrier-pigeon is not a discovered transport; use one of ",
            "demo --layout per-layer --kv-planes diagonal|--kv-planes: producer value diagonal is not one of joint, split, blockwise",
            "demo --layout per-layer --placement split:cross-layer|--placement: producer value split is not one of per-layer, cross-layer",
            // the hybrid attention and Mamba-2 model: no MLA latent, no K/V planes in its state, 36 layers
            "demo --model llama|--model=llama is not one of default, hybrid-ssm",
            "demo --model hybrid-ssm --layout mla|--model hybrid-ssm has attention and Mamba layers, no MLA latent; use --layout hma or per-layer",
            "demo --model hybrid-ssm --layout per-layer --kv-planes split:blockwise|--kv-planes=split:blockwise puts K and V in a [2, blocks, ...] tensor, which a Mamba layer's state has no planes for; use joint or blockwise with --model hybrid-ssm",
            "demo --model hybrid-ssm --producer-pp 37|--producer-pp=37 is outside [1, 36] (the model has 36 layers)",
            "demo --producer-pp 31|--producer-pp=31 is outside [1, 30] (the model has 30 layers)",
            // numbers and ranges
            "demo --requests abc|Invalid value for option '--requests': 'abc' is not an int",
            "demo --requests 0|--requests=0 is outside [1, 1000000]",
            "demo --idle-seconds NaN|'NaN' is neither seconds (30, 0.5) nor a duration (500ms, 5s, 2m)",
            "demo --idle-seconds 61|--idle-seconds=61.0 is outside [0, 60]",
            "demo --lease-seconds 0|--lease-seconds=0.0 is outside [0.1, 3600]",
            "demo --metrics-port 70000|--metrics-port=70000 is outside [0, 65535]",
            "demo --discovery 127.0.0.1:2379|--discovery=127.0.0.1:2379 is malformed: no scheme (expected scheme://host:port[,host:port...], for example etcd://127.0.0.1:2379)",
            "demo --discovery etcd://h:99999|--discovery=etcd://h:99999 is malformed: endpoint 'h:99999' has port 99999 outside 1..65535",
            // an etcd nobody serves: one line up front, not the handshakes' warnings and a failure after seconds
            "demo --discovery etcd://127.0.0.1:1|--discovery=etcd://127.0.0.1:1 cannot be reached (127.0.0.1:1: Connection refused); start etcd there, or leave --discovery out",
            "demo --concurrency 64 --max-tokens 65536|the caches would take ",
            // the Jlama engine: JVMs of their own, prompts that fit the model's context
            "demo --engine jlama --backend local|--engine jlama runs prefill and decode in JVMs of their own; --backend local stays in one process",
            "demo --engine jlama --prompt-tokens 5|--prompt-tokens=5 (expected: A..B, for example 32..256)",
            "demo --engine jlama --prompt-tokens 64..4095 --decode-tokens 8|need 2 <= A <= B and B + decode tokens <= 4096",
            "demo --engine jlama --jlama-model gpt|--jlama-model=gpt (expected: llama or qwen2)",
            "demo --engine jlama --concurrency 65|--concurrency=65 is outside [1, 64]",
            "demo --engine jlama --turns 5|--turns=5 is outside [1, 4]",
            "demo --engine jlama --turns 4 --prompt-tokens 32..3900 --decode-tokens 8|need up to 4128 positions in the last turn but the model's context is 4096",
            "demo --engine jlama --bit-identity off|--bit-identity off is for --ttft only",
            "demo --engine jlama --bit-identity maybe|--bit-identity=maybe (expected: on or off)",
            "demo --engine jlama --ttft 256,,1024|--ttft=256,,1024 (expected: prompt lengths separated by commas",
            "demo --engine jlama --ttft 256,4096|--ttft=256,4096: each length must be in [2, 4095]",
            "demo --engine jlama --ttft 256 --mode mixed|--ttft times one mode at a time; --mode=mixed (expected: push or pull)",
            "demo --engine jlama --ttft 256 --ttft-runs 0|--ttft-runs=0 is outside [1, 100]",
            "demo --engine jlama --hand-back maybe|--hand-back=maybe (expected: on or off)",
            "demo --engine jlama --turns 2 --producer-pp 2|--turns 2 with --hand-back on needs one prefill JVM: the hand-back lands in the JVM that keeps the conversation and computes its new tokens through every layer, and a --producer-pp stage holds only its own; give --producer-pp 1 or --hand-back off",
            "demo --engine jlama --turns 3 --stream-layers --producer-pp 2|--turns 3 with --hand-back on needs one prefill JVM: ",
            "demo --engine jlama --turn-ttft 1024,8192|--turn-ttft=1024,8192: each history must be in [2, 8126]",
            "demo --engine jlama --turn-ttft 1024 --mode mixed|--turn-ttft times one mode at a time; --mode=mixed (expected: push or pull)",
            "demo --engine jlama --ttft 256,20000 --stream-layers|--ttft=256,20000 with --stream-layers: each length must be in [2, 16384]",
            "demo --engine jlama --ttft 256 --prefill-chunk 512|--prefill-chunk=512 is for --ttft with --stream-layers, and positive",
            "demo --engine jlama --prefill-chunk 512|--prefill-chunk=512 is for --ttft with --stream-layers, and positive",
            "demo --engine jlama --model-dir {dir}/no-model|--model-dir: model directory {dir}/no-model does not exist or is not a directory; give a Jlama model directory",
            "demo --engine jlama --model-dir {dir}|--model-dir: model directory {dir} has no config.json",
            "demo --engine jlama --model-dir {dir}/mamba-model|{dir}/mamba-model/config.json: model_type=mamba is not an architecture Jlama loads (expected one of gemma, gemma2, gpt2, granite, llama, mistral, mixtral, qwen2)",
            "demo --engine jlama --model-dir {dir}/int8-model|{dir}/int8-model/config.json: torch_dtype=int8 is not one this engine takes",
            "demo --engine jlama --model-dir {dir}/short-model|{dir}/short-model/config.json: max_position_embeddings=1024 with 8 layers of 64-float KV rows makes Jlama page the cache 1 layer(s) by 1 token(s), which blocks of 16 tokens cannot tile",
            "demo --engine jlama --model-dir {dir}/long-model --prompt-tokens 32..8000|need 2 <= A <= B and B + decode tokens <= 4096 (the model's context)",
            "demo --engine jlama --model-dir {dir}/long-model --jlama-model qwen2|--jlama-model picks the generated model's shape and --model-dir loads an existing model; give one of them",
            "demo --engine jlama --model-dir {dir}/long-model --ttft 256|--ttft times the generated model only; leave --model-dir out",
            "demo --engine jlama --producer-pp 3|--producer-pp=3: the model's 8 layers do not split into 3 equal stages, as Jlama shards layers; give a stage count that divides 8",
            "demo --engine jlama --jlama-model qwen2 --producer-pp 4|--producer-pp=4: the model's 6 layers do not split into 4 equal stages",
            "demo --engine jlama --producer-pp 5|--producer-pp=5 is outside [1, 4] for --engine jlama",
            "demo --engine jlama --producer-tp 2|--engine jlama runs one tensor-parallel rank per prefill JVM: Jlama keeps a token's KV heads interleaved in one row",
            "demo --engine jlama --consumer-pp 2|--engine jlama runs one decode JVM holding every layer; leave --consumer-pp and --consumer-tp out",
            "demo --engine vllm|--engine=vllm (expected: synthetic or jlama)",
            // topologies the run would fail on after starting
            "demo --layout mla --producer-tp 8 --consumer-tp 3|--producer-tp=8 and --consumer-tp=3 must be multiples of one another",
            "demo --layout mla --consumer-pp 30 --consumer-tp 8|--consumer-pp x --consumer-tp = 240 ranks must each be at most 64",
            "demo --producer-pp 30 --producer-tp 4 --consumer-tp 4|--producer-pp x --producer-tp = 120 and",
            "demo --producer-pp 16 --producer-tp 4 --consumer-pp 16 --consumer-tp 4|64 producer ranks times 64 decoder ranks is more than 1024 rank pairs",
            "demo --integrity crc32c|--integrity crc32c compares one producer rank's blocks with one decoder rank's; add --producer-pp 1",
            "demo --integrity sha1|--integrity=sha1 is not off or crc32c",
            "demo --producer-pp 1 --integrity crc32c --block-tokens 16:32 --layout per-layer|--integrity crc32c compares blocks of one cache shape",
            "demo --fault corrupt:0|--fault=corrupt:0 is not corrupt:N with N a positive count",
            "demo --fault corrupt:500|--fault=corrupt:500 changes no request of --requests=200",
            // unknown options and commands, with the nearest name
            "demo --frob|Unknown option: '--frob'",
            "demo --requets 3|did you mean --requests?",
            "frobnicate|Unmatched argument at index 0: 'frobnicate'",
            // durations: short forms and ISO-8601 read by one parser, waits bounded
            "inspect 127.0.0.1:9 --timeout PT99999999999S|--timeout=PT99999999999S is outside [1ms, 10m]",
            "inspect 127.0.0.1:9 --timeout 11m|--timeout=11m is outside [1ms, 10m]",
            "inspect 127.0.0.1:9 --timeout 0s|--timeout=0s is outside [1ms, 10m]",
            "inspect 127.0.0.1:9 --timeout 1y|Invalid value for option '--timeout': '1y' is not a duration; write a number with ns, us, ms, s, m, h or d",
            "inspect 127.0.0.1:9 --timeout -5s|'-5s' is not a duration",
            // files: missing, a directory, a device, too large, too short
            "inspect 127.0.0.1:9 --secret-file {dir}/missing|--secret-file={dir}/missing does not exist",
            "inspect 127.0.0.1:9 --secret-file {dir}|--secret-file={dir} is not a regular file",
            "inspect 127.0.0.1:9 --secret-file /dev/zero|--secret-file=/dev/zero is not a regular file",
            "inspect 127.0.0.1:9 --secret-file {dir}/huge-secret|--secret-file={dir}/huge-secret is longer than 4096 bytes",
            "inspect 127.0.0.1:9 --secret-file {dir}/readable-secret|--secret-file={dir}/readable-secret may be read or written by every user of the host; run chmod 600 {dir}/readable-secret",
            "inspect 127.0.0.1:9 --secret-file {dir}/short-secret|--secret-file={dir}/short-secret holds 9 bytes, fewer than the 16",
            "bench --role target --listen 127.0.0.1:0 --secret-file {dir}/readable-secret|--secret-file={dir}/readable-secret may be read or written by every user of the host; run chmod 600 {dir}/readable-secret",
            "bench --role initiator --peer 127.0.0.1:9 --secret-file {dir}/short-secret|--secret-file={dir}/short-secret holds 9 bytes, fewer than the 16",
            "inspect 127.0.0.1:9 --pp 0|--pp=0 x --tp=1 must be between 1 and 4096 ranks",
            "inspect no-port-here|address no-port-here is not HOST:PORT",
            "inspect 127.0.0.1:99999|address 127.0.0.1:99999 is not HOST:PORT",
            "inspect|Missing required parameter: 'HOST:PORT'",
            // sizes: parsed, bounded against memory and transfer count, the plot path checked before measuring
            "bench --total-bytes 1x|Invalid value for option '--total-bytes': '1x' is not a size",
            "bench --block-sizes 1 --total-bytes 1GiB|--block-sizes=1 is smaller than 64 bytes",
            "bench --total-bytes 64GiB|--total-bytes=64GiB is more than 16GiB",
            "bench --total-bytes 1GiB --block-sizes 256|--block-sizes=256 makes 4,194,304 transfers of --total-bytes=1GiB, more than 1,048,576; use a block of at least 1KiB",
            "bench --total-bytes 1MiB --block-sizes 3000|--block-sizes=3000 does not divide --total-bytes=1048576",
            "bench --window 0|--window=0 must be between 1 and 4096",
            // a configuration document for the demo: its settings or the options, never both saying different things
            "demo --backend tcp --kv-transfer-config {\"kv_connector_extra_config\":{\"transport\":\"local\"}}|--kv-transfer-config sets transport=local but --backend=tcp; give it once",
            "demo --lease-seconds 3 --kv-transfer-config {\"kv_connector_extra_config\":{\"kv_lease_duration\":\"5s\"}}|--kv-transfer-config sets kv_lease_duration=5.0 but --lease-seconds=3.0; give it once",
            "demo --kv-transfer-config {\"kv_role\":\"kv_both\",\"kv_connector_extra_config\":{\"agent_name\":\"x\"}}|--kv-transfer-config sets kv_role, agent_name, which the demo sets itself",
            "demo --kv-transfer-config {\"kv_connector_extra_config\":{\"transports\":{\"tcp\":{\"port\":1}}}}|--kv-transfer-config sets options of transport tcp, but the demo runs local; name that transport or give --backend tcp",
            "demo --kv-transfer-config {dir}/missing.json|--kv-transfer-config={dir}/missing.json has 1 problem(s): ",
            "demo --kv-transfer-config {\"kv_connector_extra_config\":{\"transprot\":\"tcp\"}}|--kv-transfer-config has 1 problem(s): ",
            // nixlbench's options: operation, batch sweep, passes
            "bench --op COPY|--op=COPY is not READ or WRITE",
            "bench --iterations 0|--iterations=0 is outside [1, 1000]",
            "bench --warmup -1|--warmup=-1 is outside [0, 1000]",
            "bench --batch 0|--batch=0 is outside [1, 65536]",
            "bench --total-bytes 1MiB --block-sizes 64KiB --batch 1,3|--batch=3 does not divide the 16 blocks of 64 KiB in --total-bytes=1 MiB",
            "bench --role initiator --peer 127.0.0.1:9 --op READ --iterations 3|--op, --iterations apply to the one-process bench",
            "bench --role initiator --peer 127.0.0.1:9 --batch 1,2|--batch=1,2: --role initiator takes one value",
            "bench --total-bytes 1MiB --block-sizes 64KiB --plot {dir}/a-file/bench.svg|--plot={dir}/a-file/bench.svg cannot be created: {dir}/a-file is not a writable directory",
            "bench --total-bytes 1MiB --block-sizes 64KiB --plot {dir}|--plot={dir} must name an .svg file",
            // transport options checked by the transport before anything runs
            "bench --total-bytes 1MiB --block-sizes 64KiB --cc {dir}/no-cc --transport-option tcp.port=70000|--transport-option: tcp configuration has 1 problem(s): port=70000 is outside [0, 65535]",
            "bench --total-bytes 1MiB --block-sizes 64KiB --cc {dir}/no-cc --transport-option local.max-in-flight=0 --transport-option local.copy-threads=x|--transport-option: local configuration has 2 problem(s): copy-threads=x is not an integer; max-in-flight=0 is outside [1, 16777216]",
            "bench --total-bytes 1MiB --block-sizes 64KiB --cc {dir}/no-cc --transport-option ucx.tls=tcp|--transport-option: ucx configuration has 1 problem(s): tls=tcp lets UCX open its tcp transport",
            "bench --total-bytes 1MiB --block-sizes 64KiB --cc {dir}/no-cc --transport-option nosuch.x=1|--transport-option names transport 'nosuch', which is not discovered",
            "completion extra|Unmatched argument at index 1: 'extra'"})
    void refusedInOneLineWithExitCodeTwo(String commandLine, String expected)
    {
        String[] args = Arrays.stream(commandLine.split(" ")).map(CommandLineRefusalTest::resolve).toArray(String[]::new);
        assertRefused(CliRun.of(args), COMMANDS.contains(args[0]) ? args[0] : null, resolve(expected));
    }

    @Test
    void benchTotalAboveTheAvailableMemoryIsRefused()
    {
        OptionalLong available = InputChecks.availableMemory();
        assumeTrue(available.isPresent(), "this machine reports no available memory");
        // the smallest power of two whose source and destination do not fit
        long total = Long.highestOneBit(available.getAsLong() / 2) << 1;
        assumeTrue(total <= 16L << 30, "more than 32 GiB available: every total up to the 16GiB maximum fits");
        String text = (total >> 20) + "MiB";
        assertRefused(CliRun.of("bench", "--total-bytes", text, "--block-sizes", "16MiB"), "bench", "of memory is available; give at most ");
    }

    @Test
    void noArgumentsPrintTheUsageOnStderrWithExitCodeTwo()
    {
        CliRun run = CliRun.of();
        assertEquals(2, run.exitCode());
        assertEquals("", run.out());
        assertTrue(run.err().startsWith("Usage: kvbridge"), run.err());
        assertTrue(run.err().contains("Exit codes:"), run.err());
    }

    @Test
    void helpListsEveryOptionsValuesOnStdout()
    {
        CliRun run = CliRun.of("demo", "--help");
        assertEquals(0, run.exitCode(), run.err());
        String help = run.out().replaceAll("\\s+", " ");
        assertTrue(help.contains("push, pull, mixed"), help);
        assertTrue(help.contains("hma, mla, per-layer"), help);
        assertTrue(help.contains("one of the discovered: ") && help.contains("local"), help);
        CliRun inspect = CliRun.of("inspect", "--help");
        assertTrue(inspect.out().replaceAll("\\s+", " ").contains("500ms, 5s, 2m or ISO-8601"), inspect.out());
    }

    @Test
    void aRuntimeFailureIsOneLineWithExitCodeOne()
    {
        // port 9 (discard) has no side channel on a test machine: the command line was right, the peer is not there
        CliRun run = CliRun.of("inspect", "127.0.0.1:9", "--timeout", "500ms");
        assertEquals(1, run.exitCode(), run.err());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().startsWith("kvbridge inspect: KVB/"), run.err());
        assertEquals("", run.out());
    }

    private static void assertRefused(CliRun run, String command, String expected)
    {
        String name = command == null ? "kvbridge" : "kvbridge " + command;
        assertEquals(2, run.exitCode(), run.err());
        assertEquals("", run.out(), "nothing may start, nor print, before a refusal");
        List<String> lines = run.err().lines().toList();
        assertEquals(2, lines.size(), run.err());
        assertTrue(lines.get(0).startsWith(name + ": ") && lines.get(0).contains(expected), lines.get(0));
        assertEquals("Try '" + name + " --help' for the options and their values.", lines.get(1));
    }

    private static String resolve(String text)
    {
        return text.replace("{dir}", directory.toString());
    }
}
