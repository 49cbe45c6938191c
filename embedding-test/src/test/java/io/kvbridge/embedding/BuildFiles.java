package io.kvbridge.embedding;

import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

import javax.xml.parsers.DocumentBuilderFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.fail;

/** The build's own files and settings, as the tests of this module read them. */
final class BuildFiles
{
    private BuildFiles()
    {
    }

    /** {@return the system property the build passes to this test, failing when it is missing} */
    static String require(String property)
    {
        String value = System.getProperty(property);
        if (value == null || value.isBlank()) {
            fail("system property " + property + " is not set: run this test through Maven (mvn verify -pl embedding-test -am)");
        }
        return value;
    }

    static Document parse(Path pom)
    {
        try {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            return factory.newDocumentBuilder().parse(pom.toFile());
        }
        catch (Exception e) {
            return fail("cannot read " + pom + ": " + e);
        }
    }

    /** {@return the direct child elements of {@code parent} named {@code name}} */
    static List<Element> children(Element parent, String name)
    {
        List<Element> found = new ArrayList<>();
        NodeList nodes = parent.getChildNodes();
        for (int i = 0; i < nodes.getLength(); i++) {
            if (nodes.item(i) instanceof Element element && element.getTagName().equals(name)) {
                found.add(element);
            }
        }
        return found;
    }

    /** {@return the text of the first direct child named {@code name}, or null} */
    static String text(Element parent, String name)
    {
        List<Element> found = children(parent, name);
        return found.isEmpty() ? null : found.getFirst().getTextContent().strip();
    }

    /** {@return the element at a path of direct children, or null} */
    static Element path(Element from, String... names)
    {
        Element at = from;
        for (String name : names) {
            List<Element> found = children(at, name);
            if (found.isEmpty()) {
                return null;
            }
            at = found.getFirst();
        }
        return at;
    }

    /** {@return the version the root pom's pluginManagement gives a plugin of org.apache.maven.plugins} */
    static String managedPluginVersion(Path rootPom, String artifactId)
    {
        Element plugins = path(parse(rootPom).getDocumentElement(), "build", "pluginManagement", "plugins");
        for (Element plugin : children(plugins, "plugin")) {
            if (artifactId.equals(text(plugin, "artifactId"))) {
                return text(plugin, "version");
            }
        }
        return fail(rootPom + " manages no version of " + artifactId + ", which the consumer project uses");
    }

    static void deleteTree(Path root)
    {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
