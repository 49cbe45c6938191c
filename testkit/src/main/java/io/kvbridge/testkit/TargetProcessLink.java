package io.kvbridge.testkit;

import io.kvbridge.testkit.RemoteWire.Body;
import io.kvbridge.testkit.RemoteWire.Call;
import io.kvbridge.testkit.RemoteWire.Result;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The test process's end of a {@link RemoteTargetProcess}: starts the child JVM with this JVM's
 * class path, its {@code --} options (native access among them) and {@code -D} properties, and
 * every {@code kvbridge.*} system property; sends one call at a time and waits for its reply at most
 * the deadline, after which the child is killed and the link refuses further calls. A reader thread
 * takes the replies and hands the child's wake-ups to a listener; the child's standard error is
 * copied to this process's, each line labelled with the child's pid. The child ends when its
 * standard input does, so it does not outlive this process.
 */
final class TargetProcessLink
{
    /** Options whose value is the next argument, the child's own. */
    private static final Set<String> PATH_OPTIONS = Set.of("-cp", "-classpath", "--class-path", "-p", "--module-path");
    /** Options whose value is the next argument, passed on with it. */
    private static final Set<String> VALUE_OPTIONS = Set.of("--add-exports", "--add-opens", "--add-reads", "--add-modules", "--limit-modules",
            "--patch-module", "--upgrade-module-path", "--enable-native-access");

    private final Process process;
    private final DataOutputStream requests;
    private final BlockingQueue<Reply> replies = new LinkedBlockingQueue<>();
    private final Duration deadline;
    private volatile Runnable wakeListener;
    private volatile String broken;
    private int lastId;

    /** A reply, or the end of the stream ({@code id == -1}, {@code outcome} unused). */
    private record Reply(int id, byte outcome, DataInputStream rest)
    {
    }

    private TargetProcessLink(Process process, Duration deadline)
    {
        this.process = process;
        this.deadline = deadline;
        this.requests = new DataOutputStream(new BufferedOutputStream(process.getOutputStream()));
        Thread.ofPlatform().daemon().name("remote-target-replies-" + process.pid()).start(this::readReplies);
        Thread.ofPlatform().daemon().name("remote-target-stderr-" + process.pid()).start(this::copyStandardError);
    }

    /**
     * Starts a target process.
     *
     * @param deadline how long each call may take, the start included.
     * @return the link; the process runs {@link RemoteTargetProcess} and waits for its first call.
     */
    static TargetProcessLink start(Duration deadline)
    {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions());
        // the child starts once per test and runs little code: a quick start matters more than peak speed
        command.addAll(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), RemoteTargetProcess.class.getName()));
        try {
            return new TargetProcessLink(new ProcessBuilder(command).start(), deadline);
        }
        catch (IOException e) {
            throw new IllegalStateException("starting the target process failed: " + command, e);
        }
    }

    /** This JVM's options a child needs to behave the same: module and access flags, properties; no agents, no class path. */
    static List<String> jvmOptions()
    {
        List<String> options = new ArrayList<>();
        List<String> arguments = ProcessHandle.current().info().arguments().map(List::of).orElse(List.of());
        for (int i = 0; i < arguments.size(); i++) {
            String argument = arguments.get(i);
            if (PATH_OPTIONS.contains(argument)) {
                i++;
            }
            else if (VALUE_OPTIONS.contains(argument) && i + 1 < arguments.size()) {
                options.add(argument);
                options.add(arguments.get(++i));
            }
            else if (argument.equals("-jar") || argument.equals("-m") || argument.equals("--module") || !argument.startsWith("-")) {
                break; // the program: what follows are its arguments
            }
            else if ((argument.startsWith("--") && !argument.startsWith("--class-path=") && !argument.startsWith("--module-path="))
                    || (argument.startsWith("-D") && !argument.startsWith("-Dkvbridge."))) {
                options.add(argument);
            }
        }
        if (options.stream().noneMatch(option -> option.startsWith("--enable-native-access"))) {
            options.add("--enable-native-access=ALL-UNNAMED");
        }
        for (Map.Entry<Object, Object> property : System.getProperties().entrySet()) {
            if (property.getKey() instanceof String key && key.startsWith("kvbridge.")) {
                options.add("-D" + key + "=" + property.getValue());
            }
        }
        return options;
    }

    /** {@return the child's pid} */
    long pid()
    {
        return process.pid();
    }

    /** {@return whether the child has died and a call said so: nothing of it is left to close} */
    boolean gone()
    {
        return broken != null && !process.isAlive();
    }

    /** Sets what runs, on the reader thread, when the child reports a wake-up; {@code null} for nothing. */
    void onWoken(Runnable listener)
    {
        wakeListener = listener;
    }

    /**
     * Makes a call and waits for its reply.
     *
     * @param call what to call.
     * @param arguments writes its arguments.
     * @param result reads its result.
     * @param <T> the result.
     * @return the result.
     * @throws RuntimeException what the call threw in the child, rebuilt ({@link RemoteWire#readFailure}).
     * @throws IllegalStateException when the child does not answer within the deadline, is gone, or broke the protocol.
     */
    synchronized <T> T call(Call call, Body arguments, Result<T> result)
    {
        if (broken != null) {
            throw new IllegalStateException("the target process can take no more calls (" + call + " refused): " + broken);
        }
        int id = ++lastId;
        byte[] request = RemoteWire.body(out -> {
            out.writeInt(id);
            out.writeByte(call.ordinal());
            arguments.write(out);
        });
        try {
            RemoteWire.writeFrame(requests, request);
        }
        catch (IOException e) {
            String state = exitDescription();
            throw fail(process.isAlive() ? "writing " + call + " to the target process (pid " + pid() + ") failed: " + e.getMessage() + state
                    : "the target process (pid " + pid() + ") is gone, so it cannot run " + call + state + "; its standard error is above");
        }
        long limit = System.nanoTime() + deadline.toNanos();
        while (true) {
            Reply reply;
            try {
                reply = replies.poll(limit - System.nanoTime(), TimeUnit.NANOSECONDS);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                // a later call skips this one's reply by its id
                throw new IllegalStateException("interrupted while the target process (pid " + pid() + ") ran " + call, e);
            }
            if (reply == null) {
                process.destroyForcibly();
                throw fail("the target process (pid " + pid() + ") did not answer " + call + " within " + deadline + "; it was killed");
            }
            if (reply.id() == -1) {
                replies.add(reply);
                throw fail("the target process (pid " + pid() + ") is gone while running " + call + exitDescription() + "; its standard error is above");
            }
            if (reply.id() == id) {
                return read(call, reply, result);
            }
            // the reply to an earlier call that was interrupted: its caller has gone
        }
    }

    private <T> T read(Call call, Reply reply, Result<T> result)
    {
        try {
            if (reply.outcome() != RemoteWire.OK) {
                throw RemoteWire.readFailure(reply.outcome(), reply.rest(), "in the target process (pid " + pid() + ", " + call + ")");
            }
            T value = result.read(reply.rest());
            RemoteWire.checkConsumed(reply.rest(), "the reply to " + call);
            return value;
        }
        catch (IOException e) {
            throw fail("the reply of the target process (pid " + pid() + ") to " + call + " is malformed: " + RemoteWire.describe(e));
        }
    }

    private IllegalStateException fail(String why)
    {
        broken = why;
        return new IllegalStateException(why);
    }

    private String exitDescription()
    {
        try {
            if (process.waitFor(1, TimeUnit.SECONDS)) {
                return " (exit status " + process.exitValue() + ")";
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return process.isAlive() ? " (still running)" : "";
    }

    private void readReplies()
    {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(process.getInputStream()))) {
            byte[] body;
            while ((body = RemoteWire.readFrame(in)) != null) {
                DataInputStream reply = RemoteWire.reader(body);
                int id = reply.readInt();
                byte outcome = reply.readByte();
                if (id == RemoteWire.UNSOLICITED && outcome == RemoteWire.WOKEN) {
                    Runnable listener = wakeListener;
                    if (listener != null) {
                        listener.run();
                    }
                }
                else {
                    replies.add(new Reply(id, outcome, reply));
                }
            }
        }
        catch (IOException e) {
            broken = "its standard output broke the protocol: " + RemoteWire.describe(e);
            process.destroyForcibly();
        }
        replies.add(new Reply(-1, (byte) 0, null));
    }

    private void copyStandardError()
    {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                System.err.println("[target pid " + process.pid() + "] " + line);
            }
        }
        catch (IOException ended) {
            // the child is gone; calls say so
        }
    }

    /**
     * Asks the child to exit and waits for it at most the deadline, then kills it.
     *
     * @return how it ended, for a failure message; empty when it exited by itself with status 0.
     */
    String stop()
    {
        String trouble = "";
        if (broken == null && process.isAlive()) {
            try {
                call(Call.EXIT, RemoteWire.NONE, RemoteWire.NOTHING);
            }
            catch (RuntimeException e) {
                trouble = e.getMessage();
            }
        }
        try {
            requests.close();
        }
        catch (IOException ignored) {
            // the child has gone already
        }
        try {
            if (!process.waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly().waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS);
                return "the target process (pid " + pid() + ") did not exit within " + deadline + " and was killed";
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            return "interrupted while the target process (pid " + pid() + ") exited; it was killed";
        }
        if (!trouble.isEmpty()) {
            return trouble;
        }
        return process.exitValue() == 0 || broken != null ? "" : "the target process (pid " + pid() + ") exited with status " + process.exitValue();
    }
}
