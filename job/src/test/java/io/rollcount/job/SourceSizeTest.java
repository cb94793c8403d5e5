package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The size rule on the job's main sources: no class over {@value #MAX_CLASS_LINES} lines unless its class
 * Javadoc has a sentence starting "Large because" (which {@link #NO_ESCAPE} may not use), and no method,
 * constructor or initializer over {@value #MAX_MEMBER_LINES} lines. The sources are palantir-formatted: a
 * member starts at its declaration (annotations aside) and ends at the {@code }} with the declaration's
 * indentation; lambdas and anonymous classes inside a member count within it.
 */
class SourceSizeTest {
    private static final int MAX_CLASS_LINES = 500;
    private static final int MAX_MEMBER_LINES = 60;
    private static final Set<String> NO_ESCAPE =
            Set.of("RedisSinkWriter", "CountPerCounter", "RedisEndpoint", "RollcountJob");

    private static final Pattern TYPE = Pattern.compile("\\b(class|interface|enum|record)\\s+\\w+");
    private static final Pattern MEMBER_NAME = Pattern.compile("(\\w+)\\s*(\\(|=)");
    private static final Pattern LARGE_BECAUSE = Pattern.compile("(^|[.!?:]\\s+)Large because\\b");

    @Test
    void noClassOverTheLimitWithoutAReason() throws IOException {
        List<String> offenders = new ArrayList<>();
        for (Path file : mainSources()) {
            List<String> lines = Files.readAllLines(file);
            String name = className(file);
            if (lines.size() <= MAX_CLASS_LINES) continue;
            boolean excused = !NO_ESCAPE.contains(name)
                    && LARGE_BECAUSE.matcher(classJavadoc(lines)).find();
            if (!excused) offenders.add(name + " (" + lines.size() + " lines)");
        }
        assertThat(offenders)
                .as("classes over %d lines whose class Javadoc says no \"Large because ...\"", MAX_CLASS_LINES)
                .isEmpty();
    }

    @Test
    void noMemberOverTheLimit() throws IOException {
        List<String> offenders = new ArrayList<>();
        for (Path file : mainSources()) {
            for (Member m : members(Files.readAllLines(file))) {
                if (m.lines() > MAX_MEMBER_LINES)
                    offenders.add(className(file) + "." + m.name() + " (line " + m.firstLine() + ", " + m.lines()
                            + " lines)");
            }
        }
        assertThat(offenders)
                .as("methods and constructors over %d lines", MAX_MEMBER_LINES)
                .isEmpty();
    }

    /** A method, constructor, initializer or field with a body: its name, first line (1-based) and length. */
    record Member(String name, int firstLine, int lines) {}

    /** The members of a palantir-formatted source, those of nested classes included. */
    static List<Member> members(List<String> lines) {
        List<Member> found = new ArrayList<>();
        int i = 0;
        while (i < lines.size()) {
            String line = lines.get(i);
            if (!line.stripTrailing().endsWith("{") || isComment(line)) {
                i++;
                continue;
            }
            int start = declarationStart(lines, i);
            String declaration = String.join(" ", lines.subList(start, i + 1)).strip();
            if (TYPE.matcher(beforeParenthesis(declaration)).find()) {
                i++; // a type: its members are found as the scan goes on
                continue;
            }
            int end = closingLine(lines, start, i);
            found.add(new Member(memberName(declaration), start + 1, end - start + 1));
            i = end + 1;
        }
        return found;
    }

    /** The first line of the declaration that ends at {@code braceLine}: wrapped lines joined, annotations not. */
    private static int declarationStart(List<String> lines, int braceLine) {
        int start = braceLine;
        while (start > 0) {
            String previous = lines.get(start - 1).strip();
            if (previous.isEmpty()
                    || previous.endsWith(";")
                    || previous.endsWith("{")
                    || previous.endsWith("}")
                    || previous.startsWith("@")
                    || isComment(previous)) break;
            start--;
        }
        return start;
    }

    /** The line of the {@code }} that closes the member declared at {@code start}, indented as the declaration. */
    private static int closingLine(List<String> lines, int start, int braceLine) {
        String indent = indentation(lines.get(start));
        for (int j = braceLine + 1; j < lines.size(); j++) {
            String l = lines.get(j);
            if (l.startsWith(indent + "}")) return j;
        }
        throw new IllegalStateException("no closing brace for the member at line " + (start + 1));
    }

    private static String memberName(String declaration) {
        if (declaration.startsWith("static {") || declaration.equals("{")) return "<init block>";
        Matcher m = MEMBER_NAME.matcher(declaration);
        return m.find() ? m.group(1) : declaration;
    }

    private static String beforeParenthesis(String declaration) {
        int p = declaration.indexOf('(');
        return p < 0 ? declaration : declaration.substring(0, p);
    }

    private static boolean isComment(String line) {
        String s = line.strip();
        return s.startsWith("//") || s.startsWith("*") || s.startsWith("/*");
    }

    private static String indentation(String line) {
        return line.substring(0, line.length() - line.stripLeading().length());
    }

    /** The text of the Javadoc just above the file's top-level type declaration, without its stars. */
    private static String classJavadoc(List<String> lines) {
        int type = 0;
        while (type < lines.size()
                && !(indentation(lines.get(type)).isEmpty()
                        && TYPE.matcher(lines.get(type)).find())) type++;
        int end = type - 1;
        while (end >= 0 && lines.get(end).strip().startsWith("@")) end--;
        if (end < 0 || !lines.get(end).strip().endsWith("*/")) return "";
        int begin = end;
        while (begin >= 0 && !lines.get(begin).strip().startsWith("/**")) begin--;
        StringBuilder text = new StringBuilder();
        for (String l : lines.subList(Math.max(begin, 0), end + 1))
            text.append(l.strip()
                            .replaceFirst("^/\\*\\*|^\\*/|^\\*", "")
                            .replace("*/", "")
                            .strip())
                    .append(' ');
        return text.toString().strip();
    }

    private static String className(Path file) {
        String f = file.getFileName().toString();
        return f.substring(0, f.length() - ".java".length());
    }

    /** Every .java file under job/src/main/java, found from the working directory (the job module or above). */
    private static List<Path> mainSources() throws IOException {
        Path p = Path.of("").toAbsolutePath();
        while (p != null && !Files.isDirectory(p.resolve("job/src/main/java"))) p = p.getParent();
        assertThat(p)
                .as("a folder with job/src/main/java above the working directory")
                .isNotNull();
        try (Stream<Path> files = Files.walk(p.resolve("job/src/main/java"))) {
            List<Path> sources =
                    files.filter(f -> f.toString().endsWith(".java")).sorted().toList();
            assertThat(sources).as("the job's main sources").hasSizeGreaterThan(50);
            return sources;
        }
    }
}
