package io.kvbridge.examples.cli;

import io.kvbridge.examples.demo.HostWorker;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * {@code kvbridge demo-worker}: one engine process of {@code kvbridge demo --processes}, started by
 * the demo itself and driven over stdin and stdout; not meant to be run by hand.
 */
@Command(name = "demo-worker", hidden = true, description = "An engine process of 'demo --processes', driven over stdin and stdout.")
final class DemoWorkerCommand implements Callable<Integer>
{
    @Override
    public Integer call()
    {
        return HostWorker.run(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), System.out);
    }
}
