package io.kvbridge.examples;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/** Whether the C compiler the bench's baselines need runs here, for tests that skip without it. */
public final class Gcc
{
    private Gcc()
    {
    }

    /** {@return true when {@code gcc --version} runs and exits 0 within 30 s} */
    public static boolean runs()
    {
        try {
            Process gcc = new ProcessBuilder("gcc", "--version").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return gcc.waitFor(30, TimeUnit.SECONDS) && gcc.exitValue() == 0;
        }
        catch (IOException e) {
            return false;
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
