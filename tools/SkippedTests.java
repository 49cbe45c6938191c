import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * What {@code ./kvbridge test} prints after Maven: every test class with skipped tests and why,
 * read from the Surefire and Failsafe reports of every module, and one line naming what to install
 * to run them. Usage: {@code java SkippedTests.java PROJECT_ROOT [SINCE_EPOCH_MILLIS]}: only
 * reports written since then count, so a module an earlier run tested and this one did not reach
 * is not reported as if it ran.
 */
public final class SkippedTests
{
    /** A reason's keyword, and what brings the missing piece. */
    private static final Map<String, String> REMEDIES = Map.of(
            "ucx", "libucx0 (apt-get install libucx0 libucx-dev)",
            "etcd", "etcd-server (apt-get install etcd-server)",
            "gcc", "gcc (apt-get install gcc)",
            "namespace", "root and iproute2 (network namespaces)",
            "root", "root and iproute2 (network namespaces)",
            "nixl", "a NIXL installation (see backend-nixl/README.md)",
            "gpu", "an NVIDIA GPU with its driver",
            "cuda", "an NVIDIA GPU with its driver");

    private SkippedTests()
    {
    }

    public static void main(String[] args)
            throws Exception
    {
        Path root = Path.of(args.length == 0 ? "." : args[0]);
        long since = args.length < 2 ? 0 : Long.parseLong(args[1]);
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        DocumentBuilder parser = factory.newDocumentBuilder();
        // class -> reason -> count
        Map<String, Map<String, Integer>> skipped = new TreeMap<>();
        long[] totals = new long[4];
        for (Path report : reports(root)) {
            if (Files.getLastModifiedTime(report).toMillis() < since) {
                continue;
            }
            Document document = parser.parse(report.toFile());
            Element suite = document.getDocumentElement();
            totals[0] += count(suite, "tests");
            totals[1] += count(suite, "failures");
            totals[2] += count(suite, "errors");
            totals[3] += count(suite, "skipped");
            NodeList cases = suite.getElementsByTagName("testcase");
            for (int i = 0; i < cases.getLength(); i++) {
                Element testCase = (Element) cases.item(i);
                NodeList skips = testCase.getElementsByTagName("skipped");
                if (skips.getLength() == 0) {
                    continue;
                }
                String message = ((Element) skips.item(0)).getAttribute("message");
                String reason = message.isBlank() ? "(no reason given)" : message.strip().lines().findFirst().orElse("");
                String module = root.relativize(report).getName(0).toString();
                String className = module + ": " + testCase.getAttribute("classname");
                skipped.computeIfAbsent(className, key -> new TreeMap<>()).merge(reason, 1, Integer::sum);
            }
        }
        System.out.printf("%nkvbridge test: %d tests, %d failures, %d errors, %d skipped%n", totals[0], totals[1], totals[2], totals[3]);
        if (skipped.isEmpty()) {
            System.out.println("kvbridge test: no test was skipped");
            return;
        }
        System.out.println("kvbridge test: skipped tests, by class and reason");
        int width = skipped.keySet().stream().mapToInt(String::length).max().orElse(0);
        Set<String> remedies = new LinkedHashSet<>();
        for (Map.Entry<String, Map<String, Integer>> entry : skipped.entrySet()) {
            for (Map.Entry<String, Integer> reason : entry.getValue().entrySet()) {
                System.out.printf("  %-" + width + "s  %3d  %s%n", entry.getKey(), reason.getValue(), reason.getKey());
                String lower = reason.getKey().toLowerCase(Locale.ROOT);
                REMEDIES.entrySet().stream()
                        .filter(remedy -> lower.contains(remedy.getKey()))
                        .map(Map.Entry::getValue)
                        .sorted()
                        .forEach(remedies::add);
            }
        }
        if (!remedies.isEmpty()) {
            System.out.println("kvbridge test: to run what was skipped, install " + String.join("; ", remedies));
        }
    }

    private static List<Path> reports(Path root)
            throws IOException
    {
        List<Path> reports = new ArrayList<>();
        try (Stream<Path> modules = Files.list(root)) {
            for (Path module : modules.sorted().toList()) {
                for (String folder : List.of("surefire-reports", "failsafe-reports")) {
                    Path dir = module.resolve("target").resolve(folder);
                    if (!Files.isDirectory(dir)) {
                        continue;
                    }
                    try (Stream<Path> files = Files.list(dir)) {
                        files.filter(file -> file.getFileName().toString().matches("TEST-.*\\.xml")).sorted().forEach(reports::add);
                    }
                }
            }
        }
        return reports;
    }

    private static long count(Element suite, String attribute)
    {
        String value = suite.getAttribute(attribute);
        return value.isEmpty() ? 0 : Long.parseLong(value);
    }
}
