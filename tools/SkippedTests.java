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
    /** A phrase of a reason that says something is missing here, and what brings it. */
    private static final Map<String, String> REMEDIES = Map.ofEntries(
            Map.entry("ucx is not installed", "libucx0 (apt-get install libucx0)"),
            Map.entry("libucx-dev", "libucx-dev (apt-get install libucx-dev)"),
            Map.entry("the ucx transport cannot run here", "libucx0 (apt-get install libucx0)"),
            Map.entry("the ucx transport is not available here", "libucx0 (apt-get install libucx0)"),
            Map.entry("(debian's libucx0)", "libucx0 (apt-get install libucx0)"),
            Map.entry("no etcd binary", "etcd-server (apt-get install etcd-server)"),
            Map.entry("gcc", "gcc (apt-get install gcc)"),
            Map.entry("needs root", "root, with iproute2 (network namespaces)"),
            Map.entry("namespaces need root", "root, with iproute2 (network namespaces)"),
            Map.entry("no installed nixl", "a NIXL installation (see backend-nixl/README.md)"),
            Map.entry("no usable cuda driver", "an NVIDIA GPU with its driver"),
            Map.entry("no cuda headers", "the CUDA toolkit's headers (cuda.h, under /usr/local/cuda/include or where -Dkvbridge.cuda-ipc.test.headers points)"),
            Map.entry("setpriv", "util-linux's setpriv"));

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
                String reason = reason((Element) skips.item(0));
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

    /**
     * The skip's reason: Surefire writes it as the {@code message} attribute, or, keeping stack
     * traces, as the first line of the element's text, behind the assumption's exception class.
     */
    private static String reason(Element skipped)
    {
        String text = skipped.getAttribute("message");
        if (text.isBlank()) {
            text = skipped.getTextContent();
        }
        String first = text == null ? "" : text.strip().lines().findFirst().orElse("");
        for (String prefix : List.of("org.opentest4j.TestAbortedException: ", "Assumption failed: ")) {
            if (first.startsWith(prefix)) {
                first = first.substring(prefix.length());
            }
        }
        return first.isBlank() ? "(no reason given)" : first;
    }

    private static long count(Element suite, String attribute)
    {
        String value = suite.getAttribute(attribute);
        return value.isEmpty() ? 0 : Long.parseLong(value);
    }
}
