package io.kvbridge.embedding;

import io.kvbridge.api.KvBridge;
import io.kvbridge.json.TransferParamsJson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.kvbridge.embedding.BuildFiles.require;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Runs the README's two-JVM example as the README gives it: its code block compiled against
 * {@code kvbridge-api} and {@code kvbridge-json} alone (so it names nothing else of kvbridge and nothing undefined), then a
 * prefill JVM, a decode JVM and the router JVM started with the README's flags and one secret file,
 * requests sent through the router over {@code tcp}, every byte checked by the decoder, and no warning
 * in any log.
 */
@Timeout(600)
class TwoJvmExampleTest
{
    private static final String README = "README.md";
    private static final String MAIN = "TwoJvmExample";
    private static final long READY_SECONDS = 180;
    /** The example's cache: 2 layers, blocks of 16 tokens of 4 KV heads x (K, V) x 64 elements x bf16. */
    private static final long BYTES_PER_BLOCK = 2L * 4 * 16 * 2 * 64 * 2;

    @TempDir
    Path work;

    @Test
    void movesRequestsBetweenTwoEngineJvmsThroughTheRouter()
            throws Exception
    {
        String readme = Files.readString(Path.of(require("kvbridge.root"), README));
        Path classes = compileAgainstApiAndJsonOnly(ReadmeSnippets.block(readme, "two-jvm", README));
        List<String> java = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        java.addAll(runFlags(ReadmeSnippets.block(readme, "two-jvm-run", README)));
        java.addAll(List.of("-cp", classes + File.pathSeparator + System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")), MAIN));

        Path secret = work.resolve("secret");
        Files.write(secret, new SecureRandom().generateSeed(32));
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        int[] ports = freePorts(3);
        List<Process> processes = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        try {
            for (List<String> role : List.of(List.of("prefill", "" + ports[1]), List.of("decode", "" + ports[2]),
                    List.of("router", "" + ports[0], "" + ports[1], "" + ports[2]))) {
                List<String> command = new ArrayList<>(java);
                command.addAll(role);
                Path log = work.resolve(role.getFirst() + ".log");
                ProcessBuilder builder = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
                builder.environment().put("KVBRIDGE_SECRET_FILE", secret.toString());
                processes.add(builder.start());
                logs.add(log);
            }
            awaitReady(processes, logs);

            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build();
            int[] tokens = {1, 16, 17, 100, 250, 400, 520, 1000};
            List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
            for (int i = 0; i < tokens.length; i++) {
                answers.add(client.sendAsync(generate(ports[0], "req-" + i, tokens[i]), HttpResponse.BodyHandlers.ofString()));
            }
            for (int i = 0; i < tokens.length; i++) {
                HttpResponse<String> answer = answers.get(i).get(300, TimeUnit.SECONDS);
                long bytes = (tokens[i] + 15) / 16 * BYTES_PER_BLOCK;
                assertEquals("req-" + i + ": " + bytes + " bytes checked, 0 wrong", answer.body(),
                        "request req-" + i + " of " + tokens[i] + " tokens (status " + answer.statusCode() + ")\n" + logsOf(logs));
                assertEquals(200, answer.statusCode());
            }
            HttpResponse<String> tooLong = client.send(generate(ports[0], "too-long", 64 * 16 + 1), HttpResponse.BodyHandlers.ofString());
            assertEquals(500, tooLong.statusCode(), tooLong.body());
            assertTrue(tooLong.body().contains("65 blocks asked for; give 1 to 64"), tooLong.body());
        }
        finally {
            for (Process process : processes) {
                process.destroy();
            }
            for (Process process : processes) {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor();
                }
            }
        }
        for (Path log : logs) {
            List<String> warnings = Files.readAllLines(log).stream()
                    .filter(line -> line.contains(" WARN ") || line.contains(" ERROR ") || line.startsWith("WARNING:") || line.contains("Exception"))
                    .toList();
            assertEquals(List.of(), warnings, "the example logged warnings or errors in " + log.getFileName() + ":\n" + logsOf(logs));
        }
    }

    private static HttpRequest generate(int routerPort, String id, int tokens)
    {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + routerPort + "/generate?id=" + id + "&tokens=" + tokens))
                .timeout(Duration.ofSeconds(300)).POST(HttpRequest.BodyPublishers.noBody()).build();
    }

    /** Compiles the example with nothing of kvbridge but its API and its JSON codec on the class path. */
    private Path compileAgainstApiAndJsonOnly(String source)
            throws IOException, URISyntaxException
    {
        Path sources = Files.createDirectories(work.resolve("src"));
        Path classes = Files.createDirectories(work.resolve("classes"));
        Path file = Files.writeString(sources.resolve(MAIN + ".java"), source);
        Path api = Path.of(KvBridge.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path json = Path.of(TransferParamsJson.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager files = compiler.getStandardFileManager(diagnostics, null, null)) {
            List<String> options = List.of("-cp", api + File.pathSeparator + json, "-d", classes.toString(), "-Xlint:all", "-Werror");
            boolean compiled = compiler.getTask(null, files, diagnostics, options, null, files.getJavaFileObjects(file)).call();
            if (!compiled) {
                StringBuilder problems = new StringBuilder();
                for (Diagnostic<? extends JavaFileObject> diagnostic : diagnostics.getDiagnostics()) {
                    problems.append("line ").append(diagnostic.getLineNumber()).append(": ").append(diagnostic.getMessage(null)).append('\n');
                }
                fail(README + "'s two-jvm example does not compile against kvbridge-api (" + api + ") and kvbridge-json (" + json + ") alone:\n" + problems);
            }
        }
        return classes;
    }

    /** The JVM options of the first java line of the README's run block, up to the class path. */
    private static List<String> runFlags(String runBlock)
    {
        for (String line : runBlock.lines().toList()) {
            List<String> words = Arrays.asList(line.strip().split("\\s+"));
            if (words.getFirst().equals("java") && words.contains("-cp")) {
                return words.subList(1, words.indexOf("-cp"));
            }
        }
        return fail(README + "'s two-jvm-run block has no 'java ... -cp' line");
    }

    private static void awaitReady(List<Process> processes, List<Path> logs)
            throws IOException, InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(READY_SECONDS);
        for (int i = 0; i < processes.size(); i++) {
            while (!Files.readString(logs.get(i)).contains(" ready on port ")) {
                if (!processes.get(i).isAlive() || System.nanoTime() > deadline) {
                    fail(logs.get(i).getFileName() + ": not ready within " + READY_SECONDS + " s (alive: " + processes.get(i).isAlive() + ")\n" + logsOf(logs));
                }
                Thread.sleep(100);
            }
        }
    }

    private static int[] freePorts(int count)
            throws IOException
    {
        int[] ports = new int[count];
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0);
                sockets.add(socket);
                ports[i] = socket.getLocalPort();
            }
        }
        finally {
            for (ServerSocket socket : sockets) {
                socket.close();
            }
        }
        return ports;
    }

    private static String logsOf(List<Path> logs)
    {
        StringBuilder text = new StringBuilder();
        for (Path log : logs) {
            try {
                List<String> lines = Files.readAllLines(log);
                text.append("--- ").append(log.getFileName()).append(" (last 40 lines)\n");
                lines.subList(Math.max(0, lines.size() - 40), lines.size()).forEach(line -> text.append(line).append('\n'));
            }
            catch (IOException e) {
                text.append("--- ").append(log.getFileName()).append(": ").append(e).append('\n');
            }
        }
        return text.toString();
    }
}
