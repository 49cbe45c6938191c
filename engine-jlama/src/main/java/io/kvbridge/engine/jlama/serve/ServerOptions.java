package io.kvbridge.engine.jlama.serve;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * What an engine JVM runs: its role, the model directory the router wrote, and the bridge's
 * transport and secret.
 *
 * @param role {@code prefill}, {@code decode} or {@code reference}.
 * @param modelDirectory the model to load.
 * @param workDirectory where Jlama maps this JVM's KV pages.
 * @param backend kvbridge transport name.
 * @param slots Jlama sessions in flight at once.
 * @param blockTokens tokens per kvbridge block.
 * @param secret the side channel's shared secret.
 * @param corruptBlock for the negative control only: after a prefill, flip one byte of this block
 *     of the first layer's key plane before the transfer; -1 for none.
 * @param ppRank prefill only: the pipeline stage this JVM serves.
 * @param ppSize prefill only: the producer's pipeline stages, each a JVM of its own; 1 for an unsplit producer.
 * @param stagePorts prefill with several stages only: the loopback side channel port of every stage, index = stage;
 *     empty otherwise.
 * @param handBack conversations hand their KV back between turns: the engine runs both connectors (kv_both), the decoder
 *     a producer of its kept slots, the prefill JVM a consumer of its own ({@link HandBackTarget}, {@link HandBackSource}).
 */
public record ServerOptions(String role, Path modelDirectory, Path workDirectory, String backend, int slots, int blockTokens, byte[] secret,
        int corruptBlock, int ppRank, int ppSize, List<Integer> stagePorts, boolean handBack)
{
    /**
     * Options of an engine without hand-back.
     *
     * @param role {@code prefill}, {@code decode} or {@code reference}.
     * @param modelDirectory the model.
     * @param workDirectory the pages' directory.
     * @param backend transport.
     * @param slots sessions in flight.
     * @param blockTokens tokens per block.
     * @param secret side channel secret.
     * @param corruptBlock negative control block, or -1.
     * @param ppRank the pipeline stage.
     * @param ppSize the pipeline stages.
     * @param stagePorts every stage's side channel port, or empty.
     */
    public ServerOptions(String role, Path modelDirectory, Path workDirectory, String backend, int slots, int blockTokens, byte[] secret,
            int corruptBlock, int ppRank, int ppSize, List<Integer> stagePorts)
    {
        this(role, modelDirectory, workDirectory, backend, slots, blockTokens, secret, corruptBlock, ppRank, ppSize, stagePorts, false);
    }

    /**
     * Options of an unsplit engine.
     *
     * @param role {@code prefill}, {@code decode} or {@code reference}.
     * @param modelDirectory the model.
     * @param workDirectory the pages' directory.
     * @param backend transport.
     * @param slots sessions in flight.
     * @param blockTokens tokens per block.
     * @param secret side channel secret.
     * @param corruptBlock negative control block, or -1.
     */
    public ServerOptions(String role, Path modelDirectory, Path workDirectory, String backend, int slots, int blockTokens, byte[] secret,
            int corruptBlock)
    {
        this(role, modelDirectory, workDirectory, backend, slots, blockTokens, secret, corruptBlock, 0, 1, List.of());
    }

    /**
     * Returns these options with the hand-back between turns on or off.
     *
     * @param on whether the engine runs both connectors for the hand-back.
     * @return the options.
     */
    public ServerOptions withHandBack(boolean on)
    {
        return new ServerOptions(role, modelDirectory, workDirectory, backend, slots, blockTokens, secret, corruptBlock, ppRank, ppSize, stagePorts, on);
    }

    /** Validates the stage values. */
    public ServerOptions
    {
        stagePorts = List.copyOf(stagePorts);
        KvBridgeException.check(ppSize >= 1 && ppRank >= 0 && ppRank < ppSize, ErrorCode.INVALID_ARGUMENT, "--pp-rank=%d of --pp-size=%d", ppRank,
                ppSize);
        KvBridgeException.check(ppSize == 1 || (role.equals("prefill") && stagePorts.size() == ppSize), ErrorCode.INVALID_ARGUMENT,
                "%s with --pp-size=%d and stage ports %s: only prefill runs as pipeline stages, and each stage needs every stage's port", role,
                ppSize, stagePorts);
        KvBridgeException.check(!handBack || ppSize == 1, ErrorCode.INVALID_ARGUMENT,
                "--hand-back on with --pp-size=%d: a stage holds only its layers and cannot take a conversation's whole KV back; give --hand-back off", ppSize);
    }

    /**
     * Parses {@code --name value} pairs.
     *
     * @param args the arguments.
     * @return the options.
     */
    public static ServerOptions parse(String[] args)
    {
        Map<String, String> values = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            KvBridgeException.check(args[i].startsWith("--"), ErrorCode.INVALID_ARGUMENT, "argument %s is not --name value", args[i]);
            values.put(args[i].substring(2), args[i + 1]);
        }
        KvBridgeException.check(args.length % 2 == 0, ErrorCode.INVALID_ARGUMENT, "arguments must be --name value pairs");
        ServerOptions options = new ServerOptions(require(values, "role"), Path.of(require(values, "model")), Path.of(require(values, "work")),
                values.getOrDefault("backend", "tcp"), Integer.parseInt(values.getOrDefault("slots", "4")),
                Integer.parseInt(values.getOrDefault("block-tokens", "16")), HexFormat.of().parseHex(require(values, "secret")),
                Integer.parseInt(values.getOrDefault("corrupt-block", "-1")), Integer.parseInt(values.getOrDefault("pp-rank", "0")),
                Integer.parseInt(values.getOrDefault("pp-size", "1")), ports(values.getOrDefault("stage-ports", "")),
                values.getOrDefault("hand-back", "off").equals("on"));
        KvBridgeException.check(List.of("prefill", "decode", "reference").contains(options.role()), ErrorCode.INVALID_ARGUMENT,
                "role=%s (expected: prefill, decode or reference)", options.role());
        return options;
    }

    /**
     * Returns the arguments that {@link #parse} reads back.
     *
     * @return the arguments.
     */
    public List<String> toArguments()
    {
        List<String> args = new ArrayList<>(List.of("--role", role, "--model", modelDirectory.toString(), "--work", workDirectory.toString(),
                "--backend", backend, "--slots", Integer.toString(slots), "--block-tokens", Integer.toString(blockTokens),
                "--secret", HexFormat.of().formatHex(secret)));
        if (corruptBlock >= 0) {
            args.addAll(List.of("--corrupt-block", Integer.toString(corruptBlock)));
        }
        if (handBack) {
            args.addAll(List.of("--hand-back", "on"));
        }
        if (ppSize > 1) {
            args.addAll(List.of("--pp-rank", Integer.toString(ppRank), "--pp-size", Integer.toString(ppSize), "--stage-ports",
                    String.join(",", stagePorts.stream().map(String::valueOf).toList())));
        }
        return args;
    }

    /**
     * Returns the name kvbridge's model identity carries: the model directory's name.
     *
     * @return the model name.
     */
    public String modelName()
    {
        return "synthetic/" + modelDirectory.getFileName();
    }

    private static List<Integer> ports(String text)
    {
        return text.isEmpty() ? List.of() : Stream.of(text.split(",")).map(Integer::parseInt).toList();
    }

    private static String require(Map<String, String> values, String key)
    {
        String value = values.get(key);
        KvBridgeException.check(value != null, ErrorCode.INVALID_ARGUMENT, "--%s is required", key);
        return value;
    }
}
