package io.rollcount.deploy;

import java.nio.file.Files;
import java.nio.file.Path;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;

/** The repository's files as the deployment tests read them: its root, and properties of its poms. */
final class RepoFiles {
    private RepoFiles() {}

    /** The repository root: the first folder above the working directory (the job module) with deploy/Dockerfile. */
    static Path root() {
        Path p = Path.of("").toAbsolutePath();
        while (p != null && !Files.isRegularFile(p.resolve("deploy/Dockerfile"))) p = p.getParent();
        if (p == null)
            throw new IllegalStateException(
                    "no deploy/Dockerfile above " + Path.of("").toAbsolutePath());
        return p;
    }

    /** A property of the root pom, e.g. {@code flink.version}. */
    static String rootPomProperty(String name) throws Exception {
        Document pom = pom(root().resolve("pom.xml"));
        var nodes = pom.getElementsByTagName(name);
        if (nodes.getLength() != 1)
            throw new IllegalStateException("root pom.xml has " + nodes.getLength() + " <" + name + "> elements");
        return nodes.item(0).getTextContent().trim();
    }

    static Document pom(Path file) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        return f.newDocumentBuilder().parse(file.toFile());
    }
}
