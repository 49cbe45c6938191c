package io.kvbridge.examples.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.TransferMode;
import io.kvbridge.spi.KvBridgeException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The main loop of a demo worker process: runs one {@link EngineHost} and serves the scheduler's
 * commands from stdin while it polls its connectors, writing every event to stdout as it happens.
 * It exits when told to or when stdin closes, so a worker never outlives its scheduler.
 */
public final class HostWorker implements DemoHost.Events
{
    private static final String CLOSED = "\u0000closed";
    private static final long BUSY_NANOS = 100_000_000;
    private static final long MAX_WAIT_NANOS = 20_000_000;

    private final PrintStream out;
    private final BlockingQueue<String> commands = new LinkedBlockingQueue<>();
    // prefills whose parameters were not ready when the command came (a prefill that takes time)
    private final List<Integer> prefilling = new ArrayList<>();

    private HostWorker(PrintStream out)
    {
        this.out = out;
    }

    /**
     * Runs a worker until the scheduler says exit or goes away.
     *
     * @param in the scheduler's lines: the host spec first, then commands.
     * @param out where events go; nothing else may write there.
     * @return the process exit code: 0 when told to exit, 1 when the host could not start or stdin closed first.
     */
    public static int run(BufferedReader in, PrintStream out)
    {
        HostWorker worker = new HostWorker(out);
        HostSpec spec;
        EngineHost host;
        try {
            String first = in.readLine();
            if (first == null) {
                return 1;
            }
            spec = WorkerProtocol.JSON.readValue(first, HostSpec.class);
            host = new EngineHost(spec, "demo-" + spec.role() + "-" + spec.stages().getFirst() + "-" + ProcessHandle.current().pid());
        }
        catch (IOException | RuntimeException e) {
            worker.error(e);
            return 1;
        }
        try (host) {
            Thread.ofPlatform().daemon().name("demo-worker-stdin").start(() -> worker.read(in));
            worker.send(WorkerProtocol.message("ev", "ready"));
            return worker.serve(host);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        }
    }

    private void read(BufferedReader in)
    {
        try (in) {
            String line;
            while ((line = in.readLine()) != null) {
                commands.add(line);
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        finally {
            commands.add(CLOSED);
        }
    }

    private int serve(EngineHost host) throws InterruptedException
    {
        long idleNanos = 0;
        long lastBusy = System.nanoTime();
        while (true) {
            String line;
            boolean busy = false;
            // polls every 200 us while requests move; once nothing has happened for 100 ms, waits
            // ever longer (up to 20 ms) for the next command, so an idle or waiting worker costs no core
            line = idleNanos < BUSY_NANOS ? commands.poll() : commands.poll(Math.min(idleNanos / 8, MAX_WAIT_NANOS), TimeUnit.NANOSECONDS);
            for (; line != null; line = commands.poll()) {
                if (line.equals(CLOSED)) {
                    return 1;
                }
                busy = true;
                JsonNode command = WorkerProtocol.parse(line);
                String op = command.path("op").asText();
                if (op.equals("exit")) {
                    return 0;
                }
                try {
                    execute(host, op, command);
                }
                catch (RuntimeException e) {
                    error(e);
                }
            }
            try {
                busy |= host.poll(this);
                busy |= sendReadyParams(host);
            }
            catch (RuntimeException e) {
                error(e);
            }
            long now = System.nanoTime();
            if (busy) {
                lastBusy = now;
                idleNanos = 0;
            }
            else {
                idleNanos = now - lastBusy;
                if (idleNanos < BUSY_NANOS) {
                    Thread.sleep(0, 200_000);
                }
            }
        }
    }

    private void execute(EngineHost host, String op, JsonNode command)
    {
        int request = command.path("request").intValue();
        switch (op) {
            case "prefill" -> {
                host.prefill(request, command.get("tokens").intValue(), WorkerProtocol.blockIds(command.get("blockIds")));
                prefilling.add(request);
                sendReadyParams(host);
            }
            case "receive" -> host.receive(request, WorkerProtocol.params(command.get("params")), TransferMode.valueOf(command.get("mode").asText()),
                    command.get("tokens").intValue(), WorkerProtocol.blockIds(command.get("blockIds")));
            case "layers" -> {
                ObjectNode layers = WorkerProtocol.message("ev", "layers").put("request", request);
                boolean[] loaded = host.layersLoaded(request);
                if (loaded != null) {
                    ArrayNode flags = layers.putArray("loaded");
                    for (boolean layer : loaded) {
                        flags.add(layer);
                    }
                }
                send(layers);
            }
            case "sentinel" -> send(WorkerProtocol.message("ev", "sentinel").put("request", request).put("changed", host.sentinelChanged(request)));
            case "audit" -> {
                ObjectNode audit = WorkerProtocol.message("ev", "audit");
                audit.set("audit", WorkerProtocol.JSON.valueToTree(host.audit()));
                send(audit);
            }
            default -> throw new IllegalArgumentException("unknown command op=" + op + " (expected prefill, receive, layers, sentinel, audit or exit)");
        }
    }

    /** Sends the parameters of every prefill that is ready, in the order the prefills came. */
    private boolean sendReadyParams(EngineHost host)
    {
        boolean any = false;
        for (Iterator<Integer> pending = prefilling.iterator(); pending.hasNext(); ) {
            int request = pending.next();
            if (!host.paramsReady(request)) {
                continue;
            }
            pending.remove();
            ObjectNode params = WorkerProtocol.message("ev", "params").put("request", request);
            params.set("params", WorkerProtocol.params(host.params(request)));
            send(params);
            any = true;
        }
        return any;
    }

    @Override
    public void decodeReady(int request)
    {
        send(WorkerProtocol.message("ev", "decodeReady").put("request", request));
    }

    @Override
    public void freed(String requestId, FreeReason reason)
    {
        send(WorkerProtocol.message("ev", "freed").put("id", requestId).put("reason", reason.name()));
    }

    @Override
    public void checked(int request, long parityErrors, List<String> failures)
    {
        ObjectNode checked = WorkerProtocol.message("ev", "checked").put("request", request).put("parityErrors", parityErrors);
        ArrayNode list = checked.putArray("failures");
        failures.forEach(list::add);
        send(checked);
    }

    @Override
    public void quarantined(int request, String reason)
    {
        send(WorkerProtocol.message("ev", "quarantined").put("request", request).put("reason", reason));
    }

    @Override
    public void released(int request, String reason)
    {
        send(WorkerProtocol.message("ev", "released").put("request", request).put("reason", reason));
    }

    private void error(Exception e)
    {
        String code = e instanceof KvBridgeException typed ? typed.code().id() + " " : "";
        send(WorkerProtocol.message("ev", "error").put("message", code + e.getMessage()));
    }

    private void send(ObjectNode event)
    {
        out.println(WorkerProtocol.line(event));
        out.flush();
    }
}
