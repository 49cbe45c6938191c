package io.kvbridge.embedding;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import static io.kvbridge.embedding.BuildFiles.children;
import static io.kvbridge.embedding.BuildFiles.path;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Every module builds from its own folder: no module's pom names a path into a sibling module (its
 * sources or its target folder), which would tie the build to the order and layout of the checkout.
 * What one module makes for another (the fake native libraries) travels as a build artifact the owner
 * attaches.
 */
class ModuleBoundaryTest
{
    private static final Path ROOT = Path.of(BuildFiles.require("kvbridge.root"));

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
