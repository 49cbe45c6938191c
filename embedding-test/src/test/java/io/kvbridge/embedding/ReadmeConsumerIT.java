package io.kvbridge.embedding;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.kvbridge.embedding.BuildFiles.require;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Builds an engine that knows kvbridge from the embedding guide ({@code docs/embedding.md}) only, as
 * a separate Maven project against the artifacts this build installed into a private repository:
 * its pom is the guide's dependency snippet (the BOM and what the snippet names), its module
 * descriptor the guide's, its code the guide's engine. It then runs it on the class path and on the
 * module path with the JVM flags the guide gives, and expects it to finish healthy and without a
 * JVM warning. So the guide's coordinates, scopes, flags and code cannot drift from what the build
 * publishes. The guide's engine hands its {@code TransferParams} through {@code TransferParamsJson},
 * so both runs also prove that {@code kvbridge-json} brings its parser, {@code jackson-core}, and
 * that both resolve as the guide's descriptor and {@code io.kvbridge.json} require them.
 */
@Timeout(600)
class ReadmeConsumerIT
{
    private static final long MAVEN_SECONDS = 300;
    private static final long RUN_SECONDS = 60;
    private static final String MODULE = "com.example.engine";
    private static final String MAIN = "com.example.engine.Main";

    private static Path project;
    private static String readme;

    @BeforeAll
    static void buildConsumer()
            throws IOException, InterruptedException
    {
        Path mavenHome = Path.of(require("kvbridge.mavenHome"));
        Path mvn = mavenHome.resolve("bin/mvn");
        assumeTrue(Files.isExecutable(mvn), "no Maven at " + mvn + " to build the consumer project with");

        Path root = Path.of(require("kvbridge.root"));
        readme = Files.readString(root.resolve(ReadmeSnippets.GUIDE));
        project = Path.of(require("kvbridge.workDirectory"));
        BuildFiles.deleteTree(project);
        Path sources = project.resolve("src/main/java/com/example/engine");
        Files.createDirectories(sources);

        String pom = resource("consumer-pom.xml").replace("@README_POM@", ReadmeSnippets.block(readme, "pom"));
        for (String plugin : List.of("maven-resources-plugin", "maven-compiler-plugin", "maven-dependency-plugin")) {
            pom = pom.replace("@" + plugin + "@", BuildFiles.managedPluginVersion(root.resolve("pom.xml"), plugin));
        }
        Files.writeString(project.resolve("pom.xml"), pom);
        Files.writeString(project.resolve("src/main/java/module-info.java"), ReadmeSnippets.block(readme, "module-info"));
        Files.writeString(sources.resolve("Main.java"), resource("ConsumerMain.java.txt").replace("@README_JAVA@", ReadmeSnippets.block(readme, "java")));
        Path buildRepository = Path.of(require("kvbridge.buildRepository"));
        Files.writeString(project.resolve("settings.xml"), resource("consumer-settings.xml").replace("@BUILD_REPOSITORY_URL@", buildRepository.toUri().toString()));

        // offline first: the build's repository is a file: remote, which answers offline too; only
        // when it lacks something (a plugin this build never ran) is Maven Central asked
        List<String> command = List.of(mvn.toString(), "-B", "-q", "-s", "settings.xml", "-Dmaven.repo.local=" + require("kvbridge.consumerRepository"), "compile");
        List<String> offline = new ArrayList<>(command);
        offline.addAll(1, List.of("-o", "-Daether.offline.protocols=file"));
        Map<String, String> environment = Map.of("MAVEN_OPTS", "--sun-misc-unsafe-memory-access=allow");
        ProcessRun.Result offlineBuild = ProcessRun.run(offline, project, environment, MAVEN_SECONDS);
        ProcessRun.Result build = offlineBuild.exitCode() != 0 && offlineBuild.output().contains("offline mode")
                ? ProcessRun.run(command, project, environment, MAVEN_SECONDS)
                : offlineBuild;
        assertEquals(0, build.exitCode(), () -> "the consumer project built from the embedding guide failed to build:\n" + build.output());
    }

    @Test
    void runsOnTheClassPath()
            throws IOException, InterruptedException
    {
        List<String> command = new ArrayList<>(javaWithReadmeFlags("class path"));
        command.addAll(List.of("-cp", classes() + java.io.File.pathSeparator + runtimeClasspath(), MAIN));
        expectHealthy(ProcessRun.run(command, project, Map.of(), RUN_SECONDS));
    }

    @Test
    void runsOnTheModulePath()
            throws IOException, InterruptedException
    {
        List<String> command = new ArrayList<>(javaWithReadmeFlags("module path"));
        command.addAll(List.of("-p", classes() + java.io.File.pathSeparator + runtimeClasspath(), "--add-modules", "ALL-MODULE-PATH", "-m", MODULE + "/" + MAIN));
        expectHealthy(ProcessRun.run(command, project, Map.of(), RUN_SECONDS));
    }

    @Test
    void modulePathWithoutItsDependenciesSaysHowToAddThem()
            throws IOException, InterruptedException
    {
        List<String> command = new ArrayList<>(javaWithReadmeFlags("module path"));
        command.addAll(List.of("-p", classes() + java.io.File.pathSeparator + runtimeClasspath(), "-m", MODULE + "/" + MAIN));
        ProcessRun.Result run = ProcessRun.run(command, project, Map.of(), RUN_SECONDS);
        assertFalse(run.exitCode() == 0, () -> "the embedding started without core's dependencies in the module graph:\n" + run.output());
        assertTrue(run.output().contains("KVB/PluginUnknown") && run.output().contains("add --add-modules ALL-MODULE-PATH"),
                () -> "the failure does not name the missing flag:\n" + run.output());
    }

    private static void expectHealthy(ProcessRun.Result run)
    {
        assertEquals(0, run.exitCode(), () -> "the embedding guide's engine failed:\n" + run.output());
        assertTrue(run.output().contains("kvbridge healthy"), () -> "the embedding guide's engine did not report a healthy bridge:\n" + run.output());
        assertFalse(run.output().contains("WARNING:"), () -> "the embedding guide's JVM flags left a JVM warning:\n" + run.output());
    }

    /** The java command and the flags the guide's run line gives for this path, minus what names the program. */
    private static List<String> javaWithReadmeFlags(String path)
    {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(ReadmeSnippets.jvmFlags(readme, path));
        return command;
    }

    private static String classes()
    {
        return project.resolve("target/classes").toString();
    }

    private static String runtimeClasspath()
            throws IOException
    {
        return Files.readString(project.resolve("target/runtime-classpath.txt")).strip();
    }

    private static String resource(String name)
            throws IOException
    {
        try (InputStream in = ReadmeConsumerIT.class.getResourceAsStream(name)) {
            assertTrue(in != null, "missing test resource " + name);
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
