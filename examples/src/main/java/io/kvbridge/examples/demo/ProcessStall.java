package io.kvbridge.examples.demo;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/**
 * Stops a worker process with {@code SIGSTOP} and lets it go on with {@code SIGCONT} after a while,
 * as a producer stalled by the operating system (swapped out, throttled, paused under a debugger)
 * would: every thread stops wherever it is, sockets stay open and the kernel keeps queuing what peers
 * send. The signals go through {@code kill}, each with a deadline.
 */
final class ProcessStall
{
    private static final long KILL_MILLIS = 10_000;

    private boolean stopped;
    private long stoppedAt;
    private long stoppedNanos;

    /** Stops the process now and resumes it after {@code millis} from a thread of its own. */
    synchronized void stop(Process process, long millis)
    {
        if (stopped) {
            throw new IllegalStateException("process " + process.pid() + " is stopped already");
        }
        signal(process, "STOP");
        stopped = true;
        stoppedAt = System.nanoTime();
        Thread.ofVirtual().name("demo-stall-" + process.pid()).start(() -> {
            try {
                Thread.sleep(millis);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            finally {
                resume(process);
            }
        });
    }

    /** Lets the process go on, if it is stopped. */
    synchronized void resume(Process process)
    {
        if (!stopped) {
            return;
        }
        stopped = false;
        stoppedNanos += System.nanoTime() - stoppedAt;
        if (process.isAlive()) {
            signal(process, "CONT");
        }
    }

    /** {@return how long the process was stopped, in all} */
    synchronized long stoppedMillis()
    {
        return TimeUnit.NANOSECONDS.toMillis(stoppedNanos + (stopped ? System.nanoTime() - stoppedAt : 0));
    }

    private static void signal(Process process, String signal)
    {
        String command = "kill -" + signal + " " + process.pid();
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).redirectErrorStream(true).start();
            if (!kill.waitFor(KILL_MILLIS, TimeUnit.MILLISECONDS)) {
                kill.destroyForcibly();
                throw new DemoFailure("'" + command + "' did not finish within " + KILL_MILLIS + " ms");
            }
            if (kill.exitValue() != 0) {
                throw new DemoFailure("'" + command + "' failed with exit code " + kill.exitValue() + ": "
                        + new String(kill.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip());
            }
        }
        catch (IOException e) {
            throw new DemoFailure("cannot run '" + command + "': " + e.getMessage());
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DemoFailure("interrupted while running '" + command + "'");
        }
    }
}
