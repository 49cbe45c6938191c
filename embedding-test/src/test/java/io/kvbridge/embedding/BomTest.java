package io.kvbridge.embedding;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;

import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;

import static io.kvbridge.embedding.BuildFiles.children;
import static io.kvbridge.embedding.BuildFiles.path;
import static io.kvbridge.embedding.BuildFiles.text;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The BOM has no parent (so that importing it manages kvbridge and nothing else), which leaves its
 * version and its list to be kept by hand: this checks both against the build.
 */
class BomTest
{
    private static final Path ROOT = Path.of(BuildFiles.require("kvbridge.root"));

    @Test
    void managesEveryPublishedModuleAtTheBuildsVersion()
    {
        Element parent = BuildFiles.parse(ROOT.resolve("pom.xml")).getDocumentElement();
        Element bom = BuildFiles.parse(ROOT.resolve("bom/pom.xml")).getDocumentElement();
        assertEquals(text(parent, "version"), text(bom, "version"), "bom/pom.xml's version must be the parent's; set both together");

        Set<String> published = new TreeSet<>();
        for (Element module : children(path(parent, "modules"), "module")) {
            Element pom = BuildFiles.parse(ROOT.resolve(module.getTextContent().strip()).resolve("pom.xml")).getDocumentElement();
            Element properties = path(pom, "properties");
            boolean skipped = properties != null && "true".equals(text(properties, "maven.deploy.skip"));
            if (!skipped && !"pom".equals(text(pom, "packaging"))) {
                published.add(text(pom, "artifactId"));
            }
        }
        Set<String> managed = new TreeSet<>();
        for (Element dependency : children(path(bom, "dependencyManagement", "dependencies"), "dependency")) {
            assertEquals("io.kvbridge", text(dependency, "groupId"), "the BOM manages kvbridge's own artifacts only");
            assertEquals("${project.version}", text(dependency, "version"), () -> text(dependency, "artifactId") + " must be managed at the BOM's own version");
            managed.add(text(dependency, "artifactId"));
        }
        assertEquals(published, managed, "bom/pom.xml must list every module that is published (not maven.deploy.skip) and nothing else");
    }
}
