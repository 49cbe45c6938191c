package io.kvbridge.examples.demo;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Ranks of an engine in a worker JVM of their own, started from this JVM's java, class path and
 * options and driven over the worker's stdin and stdout ({@link WorkerProtocol}). Its stderr is this
 * process's, so the worker's warnings reach the user.
 */
public final class ProcessHost implements DemoHost
{
    /** How long a worker may take to start or to answer. */
    private static final long ANSWER_MILLIS = 120_000;
    private static final JsonNode GONE = WorkerProtocol.message("ev", "gone");

    private final HostSpec spec;
    private final Process process;
    private final PrintWriter commands;
    private final BlockingQueue<JsonNode> events = new LinkedBlockingQueue<>();
    private final ArrayDeque<JsonNode> held = new ArrayDeque<>();
    // params events of prefills that took time, seen by poll before the scheduler asked for them
    private final Map<Integer, JsonNode> paramsDelivered = new HashMap<>();
    private final ProcessStall stall = new ProcessStall();

    private ProcessHost(HostSpec spec, Process process)
    {
        this.spec = spec;
        this.process = process;
        this.commands = new PrintWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8), false);
        Thread.ofPlatform().daemon().name("demo-" + spec.role() + "-events").start(this::readEvents);
    }

    /**
     * Starts a worker JVM and sends it its spec; {@link #awaitReady} waits until it serves.
     *
     * @param spec what the worker runs.
     * @return the host.
     */
    public static ProcessHost start(HostSpec spec)
    {
        return start(spec, Map.of());
    }

    /**
     * Starts a worker JVM with extra environment variables, such as {@code UCX_TLS} to choose UCX's
     * transports for the worker's whole process.
     *
     * @param spec what the worker runs.
     * @param environment added to this process's environment.
     * @return the host.
     */
    public static ProcessHost start(HostSpec spec, Map<String, String> environment)
    {
        return start(spec, environment, List.of());
    }

    /**
     * Starts a worker JVM through a launcher that runs it somewhere else, such as {@code ip netns
     * exec NAMESPACE} for a network namespace. The launcher must exec the JVM rather than fork it,
     * as {@code ip netns exec} does, so that {@link #process()} is the JVM itself.
     *
     * @param spec what the worker runs.
     * @param environment added to this process's environment.
     * @param launcher the command line put before the JVM's; empty to start it directly.
     * @return the host.
     */
    public static ProcessHost start(HostSpec spec, Map<String, String> environment, List<String> launcher)
    {
        List<String> command = new ArrayList<>(launcher);
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String option : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            // a debugger agent would try to bind the parent's port again
            if (!option.startsWith("-agentlib:jdwp")) {
                command.add(option);
            }
        }
        command.add("-cp");
        // under surefire the class path is a manifest-only jar; the real one is published separately
        command.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
        command.add("io.kvbridge.examples.cli.KvBridgeCli");
        command.add("demo-worker");
        Process process;
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
            // UCX logs to stdout unless told otherwise, and the worker's stdout is its event channel
            builder.environment().putIfAbsent("UCX_LOG_FILE", "stderr");
            builder.environment().putAll(environment);
            process = builder.start();
        }
        catch (IOException e) {
            throw new DemoFailure("cannot start the JVM of the " + spec.label() + ": " + e.getMessage());
        }
        ProcessHost host = new ProcessHost(spec, process);
        try {
            host.send(WorkerProtocol.JSON.writeValueAsString(spec));
        }
        catch (JsonProcessingException e) {
            host.close();
            throw new IllegalStateException("cannot write " + spec, e);
        }
        return host;
    }

    /** @return the worker's process, for example to stop it. */
    public Process process()
    {
        return process;
    }

    private void readEvents()
    {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                if (line.startsWith("{")) {
                    events.add(WorkerProtocol.parse(line));
                }
                else {
                    // not an event (a native library writing to stdout despite being told otherwise): the user sees it, the protocol does not
                    System.err.println(label() + ": " + line);
                }
            }
        }
        catch (IOException | DemoFailure e) {
            events.add(WorkerProtocol.message("ev", "error").put("message", e.getMessage()));
        }
        finally {
            events.add(GONE);
        }
    }

    private void send(String line)
    {
        commands.println(line);
        commands.flush();
        // a closed pipe does not throw from PrintWriter; the worker's end shows as GONE
    }

    private void send(ObjectNode command)
    {
        send(WorkerProtocol.line(command));
    }

    @Override
    public String label()
    {
        return spec.label() + " (pid " + process.pid() + ")";
    }

    @Override
    public int ranks()
    {
        return spec.ranks();
    }

    @Override
    public void awaitReady()
    {
        await(event -> event.path("ev").asText().equals("ready"), "to start");
    }

    @Override
    public void prefill(int request, int tokens, int[][] blockIds)
    {
        ObjectNode command = WorkerProtocol.message("op", "prefill").put("request", request).put("tokens", tokens);
        command.set("blockIds", WorkerProtocol.blockIds(blockIds));
        send(command);
    }

    @Override
    public boolean paramsReady(int request)
    {
        // poll hands each params event that comes between the scheduler's calls to paramsDelivered
        return paramsDelivered.containsKey(request);
    }

    @Override
    public TransferParams params(int request)
    {
        JsonNode delivered = paramsDelivered.remove(request);
        if (delivered != null) {
            return WorkerProtocol.params(delivered.get("params"));
        }
        JsonNode answer = await(event -> event.path("ev").asText().equals("params") && event.path("request").intValue() == request,
                "to finish the prefill of request " + request);
        return WorkerProtocol.params(answer.get("params"));
    }

    @Override
    public void receive(int request, TransferParams params, TransferMode mode, int tokens, int[][] blockIds)
    {
        ObjectNode command = WorkerProtocol.message("op", "receive").put("request", request).put("mode", mode.name()).put("tokens", tokens);
        command.set("params", WorkerProtocol.params(params));
        command.set("blockIds", WorkerProtocol.blockIds(blockIds));
        send(command);
    }

    @Override
    public boolean poll(Events sink)
    {
        boolean any = false;
        JsonNode event;
        while ((event = held.poll()) != null || (event = events.poll()) != null) {
            any = true;
            deliver(event, sink);
        }
        return any;
    }

    private void deliver(JsonNode event, Events sink)
    {
        switch (event.path("ev").asText()) {
            case "freed" -> sink.freed(event.get("id").asText(), FreeReason.valueOf(event.get("reason").asText()));
            case "checked" -> {
                List<String> failures = new ArrayList<>();
                event.get("failures").forEach(failure -> failures.add(failure.asText()));
                sink.checked(event.get("request").intValue(), event.get("parityErrors").longValue(), failures);
            }
            case "quarantined" -> sink.quarantined(event.get("request").intValue(), event.get("reason").asText());
            case "released" -> sink.released(event.get("request").intValue(), event.get("reason").asText());
            case "decodeReady" -> sink.decodeReady(event.get("request").intValue());
            case "params" -> paramsDelivered.put(event.get("request").intValue(), event);
            default -> throw failure(event);
        }
    }

    @Override
    public long sentinelChanged(int request)
    {
        send(WorkerProtocol.message("op", "sentinel").put("request", request));
        return await(event -> event.path("ev").asText().equals("sentinel") && event.path("request").intValue() == request,
                "to check the sentinel of request " + request).get("changed").longValue();
    }

    /**
     * Decoder: which layers of a request the worker's ranks have loaded ({@link EngineHost#layersLoaded}).
     *
     * @param request the request's index.
     * @return one flag per layer of the model; null once the request was reported.
     */
    public boolean[] layersLoaded(int request)
    {
        send(WorkerProtocol.message("op", "layers").put("request", request));
        JsonNode answer = await(event -> event.path("ev").asText().equals("layers") && event.path("request").intValue() == request,
                "to tell the layers loaded of request " + request);
        JsonNode flags = answer.get("loaded");
        if (flags == null) {
            return null;
        }
        boolean[] loaded = new boolean[flags.size()];
        for (int i = 0; i < loaded.length; i++) {
            loaded[i] = flags.get(i).booleanValue();
        }
        return loaded;
    }

    @Override
    public void stall(long millis)
    {
        stall.stop(process, millis);
    }

    @Override
    public Map<String, Object> audit()
    {
        send(WorkerProtocol.message("op", "audit"));
        JsonNode answer = await(event -> event.path("ev").asText().equals("audit"), "to audit");
        return WorkerProtocol.JSON.convertValue(answer.get("audit"),
                WorkerProtocol.JSON.getTypeFactory().constructMapType(Map.class, String.class, Object.class));
    }

    /** Waits for an event, keeping the others for {@link #poll}; an error or the worker's end fails. */
    private JsonNode await(Predicate<JsonNode> wanted, String what)
    {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ANSWER_MILLIS);
        while (true) {
            JsonNode event;
            try {
                event = events.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DemoFailure("interrupted while waiting for the " + label() + " " + what);
            }
            if (event == null) {
                throw new DemoFailure("the " + label() + " did not answer within " + ANSWER_MILLIS + " ms while waiting for it " + what);
            }
            if (wanted.test(event)) {
                return event;
            }
            String kind = event.path("ev").asText();
            if (kind.equals("error") || event == GONE) {
                throw failure(event);
            }
            held.add(event);
        }
    }

    private DemoFailure failure(JsonNode event)
    {
        if (event == GONE) {
            String code;
            try {
                code = process.waitFor(5, TimeUnit.SECONDS) ? "exit code " + process.exitValue() : "its output closed";
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                code = "its output closed";
            }
            return new DemoFailure("the " + label() + " went away (" + code + ")");
        }
        if (event.path("ev").asText().equals("error")) {
            return new DemoFailure("the " + label() + " failed: " + event.path("message").asText());
        }
        return new DemoFailure("the " + label() + " sent an unexpected event: " + event);
    }

    /** Tells the worker to exit and waits for it; a worker that does not exit in time is killed. */
    @Override
    public void close()
    {
        // a stopped worker could not exit
        stall.resume(process);
        if (process.isAlive()) {
            send(WorkerProtocol.message("op", "exit"));
            commands.close();
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
    }
}
