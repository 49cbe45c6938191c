package io.kvbridge.embedding;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Reads the code blocks the embedding guide ({@link #GUIDE}) marks for this test:
 * {@code <!-- embedding-test:NAME -->}, then the next fenced block. An HTML comment renders as
 * nothing, so the guide reads as usual.
 */
final class ReadmeSnippets
{
    /** The embedding guide, relative to the repository root. */
    static final String GUIDE = "docs/embedding.md";

    private ReadmeSnippets()
    {
    }

    /** {@return the content of the fenced block after the marker {@code embedding-test:name} in the guide} */
    static String block(String readme, String name)
    {
        return block(readme, name, GUIDE);
    }

    /** {@return the content of the fenced block after the marker {@code embedding-test:name} in {@code document}, named {@code source}} */
    static String block(String document, String name, String source)
    {
        String marker = "<!-- embedding-test:" + name + " -->";
        int at = document.indexOf(marker);
        if (at < 0) {
            fail(source + " has no '" + marker + "' before the block this test builds from; put it back above that block");
        }
        int fence = document.indexOf("```", at + marker.length());
        int start = document.indexOf('\n', fence) + 1;
        int end = document.indexOf("\n```", start);
        if (fence < 0 || start == 0 || end < 0) {
            fail(source + " has no fenced code block after '" + marker + "'");
        }
        return document.substring(start, end + 1);
    }

    /**
     * Returns the JVM options of the guide's {@code java} line that follows the comment
     * {@code # <path>} in its {@code jvm-flags} block: every word after {@code java} up to the
     * class path or module path option.
     */
    static List<String> jvmFlags(String readme, String path)
    {
        List<String> lines = block(readme, "jvm-flags").lines().toList();
        int comment = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith("# " + path)) {
                comment = i;
            }
        }
        if (comment < 0 || comment + 1 >= lines.size() || !lines.get(comment + 1).startsWith("java ")) {
            fail(GUIDE + "'s jvm-flags block has no '# " + path + "' comment followed by a java command line");
        }
        List<String> words = Arrays.asList(lines.get(comment + 1).split("\\s+"));
        List<String> flags = new ArrayList<>();
        for (String word : words.subList(1, words.size())) {
            if (word.equals("-cp") || word.equals("-p") || word.equals("--module-path") || word.equals("--class-path")) {
                return flags;
            }
            flags.add(word);
        }
        return fail(GUIDE + "'s " + path + " java line has no -cp or -p");
    }
}
