package io.rollcount.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link of the documentation resolves: a file or folder of the repository, and a {@code #section}
 * a heading of the file it points into (GitHub's anchors: lower case, punctuation dropped, spaces as dashes).
 */
class DocsLinksTest {
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.+?)\\s*$", Pattern.MULTILINE);

    @Test
    void everyRelativeLinkOfTheDocumentationResolves() throws IOException {
        Path root = RepoFiles.root();
        List<Path> docs = new ArrayList<>(
                List.of(root.resolve("README.md"), root.resolve("deploy/README.md"), root.resolve("k8s/README.md")));
        if (Files.isDirectory(root.resolve("docs"))) {
            try (Stream<Path> s = Files.list(root.resolve("docs"))) {
                s.filter(p -> p.toString().endsWith(".md")).forEach(docs::add);
            }
        }
        List<String> broken = new ArrayList<>();
        int links = 0;
        for (Path doc : docs) {
            if (!Files.exists(doc)) continue;
            Matcher m = LINK.matcher(withoutCode(Files.readString(doc)));
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("^[a-z][a-z0-9+.-]*:.*")) continue; // https:, mailto: ...
                links++;
                String problem = problem(doc, target);
                if (problem != null) broken.add(root.relativize(doc) + ": (" + target + ") " + problem);
            }
        }
        assertThat(links).as("relative links read").isPositive();
        assertThat(broken).as("broken relative links").isEmpty();
    }

    private static String problem(Path doc, String target) throws IOException {
        int hash = target.indexOf('#');
        String file = hash < 0 ? target : target.substring(0, hash);
        Path to = file.isEmpty() ? doc : doc.getParent().resolve(file).normalize();
        if (!Files.exists(to)) return "no such file";
        if (hash < 0) return null;
        if (!Files.isRegularFile(to)) return "an anchor into a folder";
        String anchor = target.substring(hash + 1);
        return anchors(Files.readString(to)).contains(anchor) ? null : "no heading with anchor #" + anchor;
    }

    /** GitHub's anchors of a Markdown file's headings (a repeated one gets -1, -2 ...). */
    static Set<String> anchors(String markdown) {
        Set<String> out = new HashSet<>();
        Matcher h = HEADING.matcher(withoutCode(markdown));
        while (h.find()) {
            String a = h.group(1)
                    .toLowerCase(Locale.ROOT)
                    .replaceAll("[`*_\\[\\]()]", "")
                    .replaceAll("[^\\p{L}\\p{N} -]", "")
                    .replace(' ', '-');
            String unique = a;
            for (int i = 1; !out.add(unique); i++) unique = a + "-" + i;
        }
        return out;
    }

    /** The text without its fenced code blocks, where a '#' starts a comment, not a heading. */
    private static String withoutCode(String markdown) {
        return markdown.replaceAll("(?ms)^```.*?^```", "");
    }
}
