package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * An engine JVM the router started: {@link JlamaServer} with one role, spoken to by request and
 * reply. Requests may be in flight at once from several threads: a reply goes to the request of
 * its {@code id}. Every JVM is started with the same options, so that Jlama's vector reductions
 * give the same bits in each ({@link #JVM_OPTIONS}).
 */
public final class EngineProcess implements AutoCloseable
{
    /**
     * Options every engine JVM gets. The disabled intrinsic keeps a vector reduction's bits the same
     * whichever JIT tier runs it, in every JVM, for every batch size and thread count.
     */
    public static final List<String> JVM_OPTIONS = List.of("--add-modules", "jdk.incubator.vector", "-XX:+UnlockDiagnosticVMOptions",
            "-XX:DisableIntrinsic=_VectorReductionCoerced", "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow");

    /** {@link #JVM_OPTIONS} without the disabled intrinsic: faster, but a logit's bits may then depend on the JIT tier. */
    public static final List<String> FAST_JVM_OPTIONS = JVM_OPTIONS.stream()
            .filter(o -> !o.equals("-XX:+UnlockDiagnosticVMOptions") && !o.startsWith("-XX:DisableIntrinsic")).toList();

    private final String role;
    private final Process process;
    private final PrintStream in;
    private final Path log;
    /** Messages that answer no request in flight: the ready line, a broken output. */
    private final BlockingQueue<ObjectNode> unsolicited = new LinkedBlockingQueue<>();
    private final Map<String, BlockingQueue<ObjectNode>> inFlight = new ConcurrentHashMap<>();

    private EngineProcess(String role, Process process, Path log)
    {
        this.role = role;
        this.process = process;
        this.log = log;
        this.in = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("jlama-" + role + "-out").start(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = out.readLine(); line != null; line = out.readLine()) {
                    ObjectNode message = Lines.parse(line);
                    if (message != null) {
                        BlockingQueue<ObjectNode> waiting = inFlight.get(message.path("id").asText());
                        (waiting != null ? waiting : unsolicited).add(message);
                    }
                }
            }
            catch (IOException | RuntimeException e) {
                ObjectNode broken = Lines.object().put("error", "PROTOCOL").put("message", role + " output failed: " + e);
                unsolicited.add(broken);
                inFlight.values().forEach(waiting -> waiting.add(broken));
            }
        });
    }

    /**
     * Starts an engine JVM and waits until it is ready.
     *
     * @param options what it runs.
     * @param classPath the class path holding kvbridge, its transports and Jlama.
     * @param log where its standard error goes.
     * @param readySeconds how long loading may take.
     * @return the running engine.
     */
    public static EngineProcess start(ServerOptions options, String classPath, Path log, int readySeconds)
    {
        return start(options, classPath, log, readySeconds, JVM_OPTIONS);
    }

    /**
     * Starts an engine JVM with the given JVM options and waits until it is ready.
     *
     * @param options what it runs.
     * @param classPath the class path holding kvbridge, its transports and Jlama.
     * @param log where its standard error goes.
     * @param readySeconds how long loading may take.
     * @param jvmOptions {@link #JVM_OPTIONS} (bit-identical) or {@link #FAST_JVM_OPTIONS}.
     * @return the running engine.
     */
    public static EngineProcess start(ServerOptions options, String classPath, Path log, int readySeconds, List<String> jvmOptions)
    {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", classPath, JlamaServer.class.getName()));
        command.addAll(options.toArguments());
        Process process;
        try {
            process = new ProcessBuilder(command).redirectError(log.toFile()).start();
        }
        catch (IOException e) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "cannot start the " + options.role() + " JVM: " + e.getMessage(), e);
        }
        EngineProcess engine = new EngineProcess(options.role(), process, log);
        ObjectNode ready = engine.await(engine.unsolicited, readySeconds);
        KvBridgeException.check("ready".equals(ready.path("op").asText()), ErrorCode.TRANSFER_FAILED, "%s JVM did not start: %s%s", options.role(),
                ready, engine.logTail());
        return engine;
    }

    /**
     * Sends a command and waits for its reply; safe from several threads, each with commands of
     * ids of their own.
     *
     * @param command the command, with an {@code id} no other request in flight to this engine has.
     * @param seconds how long to wait.
     * @return the reply; an {@code error} field when the engine refused or failed.
     */
    public ObjectNode request(ObjectNode command, int seconds)
    {
        return request(command, seconds, started -> {
        });
    }

    /**
     * Sends a command whose engine may send a {@code started} message (op {@code started}, same id)
     * before its reply, as a streamed prefill does with its parameters, and waits for the reply.
     *
     * @param command the command, with an {@code id} no other request in flight to this engine has.
     * @param seconds how long to wait for the reply, the {@code started} message included.
     * @param started given the {@code started} message, on this thread, as soon as it comes.
     * @return the reply; an {@code error} field when the engine refused or failed.
     */
    public ObjectNode request(ObjectNode command, int seconds, Consumer<ObjectNode> started)
    {
        String id = command.path("id").asText();
        BlockingQueue<ObjectNode> reply = new LinkedBlockingQueue<>();
        KvBridgeException.check(inFlight.putIfAbsent(id, reply) == null, ErrorCode.INVALID_ARGUMENT,
                "%s JVM: a request with id %s is already in flight; give each request in flight an id of its own", role, id);
        try {
            Lines.send(in, command);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            ObjectNode message = await(reply, seconds);
            while ("started".equals(message.path("op").asText())) {
                started.accept(message);
                message = await(reply, (int) Math.max(1, TimeUnit.NANOSECONDS.toSeconds(deadline - System.nanoTime())));
            }
            return message;
        }
        finally {
            inFlight.remove(id);
        }
    }

    /**
     * Sends a command now, on the caller's thread, so that it reaches the engine before any command
     * the caller sends afterwards, and waits for its reply on a virtual thread.
     *
     * @param command the command, with an {@code id} no other request in flight to this engine has.
     * @param seconds how long to wait.
     * @return the reply, when it comes; an {@code error} field when the engine refused, failed or
     *     answered nothing in time.
     */
    public CompletableFuture<ObjectNode> submit(ObjectNode command, int seconds)
    {
        String id = command.path("id").asText();
        BlockingQueue<ObjectNode> reply = new LinkedBlockingQueue<>();
        KvBridgeException.check(inFlight.putIfAbsent(id, reply) == null, ErrorCode.INVALID_ARGUMENT,
                "%s JVM: a request with id %s is already in flight; give each request in flight an id of its own", role, id);
        CompletableFuture<ObjectNode> answer = new CompletableFuture<>();
        try {
            Lines.send(in, command);
        }
        catch (RuntimeException e) {
            inFlight.remove(id);
            throw e;
        }
        Thread.ofVirtual().name("jlama-" + role + "-" + id).start(() -> {
            try {
                answer.complete(await(reply, seconds));
            }
            catch (RuntimeException e) {
                answer.complete(Lines.object().put("error", e instanceof KvBridgeException k ? k.code().name() : "INTERNAL").put("message", e.getMessage()));
            }
            finally {
                inFlight.remove(id);
            }
        });
        return answer;
    }

    private ObjectNode await(BlockingQueue<ObjectNode> replies, int seconds)
    {
        ObjectNode reply = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        try {
            // in slices, so that a JVM that died is reported at once and not at the deadline
            while (reply == null && System.nanoTime() < deadline && process.isAlive()) {
                reply = replies.poll(200, TimeUnit.MILLISECONDS);
            }
            if (reply == null) {
                reply = replies.poll(200, TimeUnit.MILLISECONDS);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, role + " JVM: interrupted while waiting", e);
        }
        if (reply == null) {
            throw new KvBridgeException(ErrorCode.DEADLINE_EXCEEDED, role + " JVM answered nothing within " + seconds + " s"
                    + (process.isAlive() ? "" : " (it exited with " + process.exitValue() + ")") + logTail());
        }
        return reply;
    }

    /**
     * Returns the last lines the engine wrote to standard error, for a failure message.
     *
     * @return the lines, or empty.
     */
    public String logTail()
    {
        try {
            List<String> lines = Files.readAllLines(log);
            return "\n" + role + " log " + log + ":\n  " + String.join("\n  ", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
        }
        catch (IOException e) {
            return "";
        }
    }

    @Override
    public void close()
    {
        if (process.isAlive()) {
            Lines.send(in, Lines.object().put("op", "exit"));
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            }
            catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
