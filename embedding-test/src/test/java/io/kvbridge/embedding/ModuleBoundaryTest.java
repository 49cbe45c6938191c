package io.kvbridge.embedding;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static io.kvbridge.embedding.BuildFiles.children;
import static io.kvbridge.embedding.BuildFiles.path;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Every module builds from its own folder: no module's pom names a path into a sibling module (its
 * sources or its target folder), which would tie the build to the order and layout of the checkout.
 * What one module makes for another (the fake native libraries) travels as a build artifact the owner
 * attaches. And no code outside core uses a core package that core's module descriptor does not
 * export: on the class path nothing else would stop it, and on the module path it would not run.
 */
class ModuleBoundaryTest
{
    private static final Path ROOT = Path.of(BuildFiles.require("kvbridge.root"));
    // string literals, character literals and comments, which name classes without using them
    private static final Pattern NOT_CODE = Pattern.compile("\"\"\"[\\s\\S]*?\"\"\"|\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\\\n])+'|//[^\\n]*|/\\*[\\s\\S]*?\\*/");
    private static final Pattern CORE_TYPE = Pattern.compile("\\bio\\.kvbridge\\.core((?:\\.[a-z][a-z0-9_]*)*)\\.[A-Z]");
    private static final Pattern EXPORTS = Pattern.compile("\\bexports\\s+([\\w.]+)\\s*;");

    @Test
    void noPomReachesIntoASiblingModule()
    {
        Element parent = BuildFiles.parse(ROOT.resolve("pom.xml")).getDocumentElement();
        List<String> modules = children(path(parent, "modules"), "module").stream().map(module -> module.getTextContent().strip()).toList();
        List<String> reaches = new ArrayList<>();
        for (String module : modules) {
            List<String> values = new ArrayList<>();
            collectText(BuildFiles.parse(ROOT.resolve(module).resolve("pom.xml")).getDocumentElement(), values);
            for (String sibling : modules) {
                Pattern into = Pattern.compile("\\.\\./+" + Pattern.quote(sibling) + "(?![A-Za-z0-9_.-])");
                if (sibling.equals(module)) {
                    continue;
                }
                values.stream().filter(value -> into.matcher(value).find())
                        .forEach(value -> reaches.add(module + "/pom.xml reaches into " + sibling + ": " + value.strip()));
            }
        }
        assertEquals(List.of(), reaches,
                "a module's pom must not name a path inside a sibling module; let the sibling attach what it makes as an artifact (as backend-nixl and backend-cuda-ipc attach native-fakes) and depend on that");
    }

    @Test
    void nothingOutsideCoreUsesAPackageCoreDoesNotExport()
    {
        Set<String> exported = coreExports();
        Map<String, Set<String>> internal = new TreeMap<>();
        for (String module : modules()) {
            Path sources = ROOT.resolve(module).resolve("src");
            if (module.equals("core") || !Files.isDirectory(sources)) {
                continue;
            }
            for (Path file : javaFiles(sources)) {
                Set<String> packages = internalCorePackages(read(file), exported);
                if (!packages.isEmpty()) {
                    internal.put(ROOT.relativize(file).toString().replace('\\', '/'), packages);
                }
            }
        }
        // code that times or checks an internal part belongs in core beside it (its tests, its JMH benchmarks in
        // core/src/jmh/java): exporting that part only to measure or test it would make it API
        List<String> newUses = internal.entrySet().stream().map(entry -> entry.getKey() + " uses " + entry.getValue()).toList();
        assertEquals(List.of(), newUses, "code outside core may use only the packages core/src/main/java/module-info.java exports " + exported
                + ": use the public API (io.kvbridge.api, io.kvbridge.spi.*) or those packages, or add a narrow type to an exported package");
    }

    @Test
    void theBoundaryScanSeesImportsAndQualifiedNamesButNotTextAboutThem()
    {
        Set<String> exported = Set.of("io.kvbridge.core.config");
        String code = """
                import io.kvbridge.core.config.Sizes;
                import static io.kvbridge.core.wire.WireLimits.DEFAULT;
                // io.kvbridge.core.planner.TransferPlan in a comment
                /** {@link io.kvbridge.core.engine.Engine} in javadoc */
                class Probe { String name = "io.kvbridge.core.layout.PerLayerCacheLayoutFactory"; Object o = new io.kvbridge.core.sidechannel.RankKey(); }
                """;
        assertEquals(Set.of("io.kvbridge.core.wire", "io.kvbridge.core.sidechannel"), internalCorePackages(code, exported));
        assertEquals(Set.of("io.kvbridge.core"), internalCorePackages("import io.kvbridge.core.CoreKvBridgeRuntime;", exported));
    }

    /** The packages core's descriptor exports to every module (qualified exports aside). */
    private static Set<String> coreExports()
    {
        String descriptor = NOT_CODE.matcher(read(ROOT.resolve("core/src/main/java/module-info.java"))).replaceAll(" ");
        Set<String> exported = new TreeSet<>();
        for (Matcher matcher = EXPORTS.matcher(descriptor); matcher.find(); ) {
            exported.add(matcher.group(1));
        }
        return exported;
    }

    private static Set<String> internalCorePackages(String source, Set<String> exported)
    {
        Set<String> packages = new TreeSet<>();
        for (Matcher matcher = CORE_TYPE.matcher(NOT_CODE.matcher(source).replaceAll(" ")); matcher.find(); ) {
            String name = "io.kvbridge.core" + matcher.group(1);
            if (!exported.contains(name)) {
                packages.add(name);
            }
        }
        return packages;
    }

    private static List<String> modules()
    {
        Element parent = BuildFiles.parse(ROOT.resolve("pom.xml")).getDocumentElement();
        return children(path(parent, "modules"), "module").stream().map(module -> module.getTextContent().strip()).toList();
    }

    private static List<Path> javaFiles(Path root)
    {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(file -> file.toString().endsWith(".java")).sorted().toList();
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path file)
    {
        try {
            return Files.readString(file);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    /** Element text only: comments may name a sibling's path to explain where something comes from. */
    private static void collectText(Node node, List<String> values)
    {
        for (Node child = node.getFirstChild(); child != null; child = child.getNextSibling()) {
            switch (child.getNodeType()) {
                case Node.TEXT_NODE, Node.CDATA_SECTION_NODE -> values.add(child.getNodeValue());
                case Node.ELEMENT_NODE -> collectText(child, values);
                default -> { }
            }
        }
    }
}
