package io.rollcount.job.policy;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.util.Durations;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Reads a {@code --policies} file (contract section 6): a YAML sequence of rules, each a mapping with
 * {@code match} and any of {@code resolutions}, {@code retention}, {@code uniques}, {@code trending},
 * {@code topk}, {@code dedup}. Every mistake is a {@link PoliciesException} of one line naming the file, the
 * rule's position (from 1, with its line) and the field.
 *
 * <pre>
 * - match: ad                  # billing: exact, long dedup
 *   resolutions: [1m, 1h, 1d]
 *   retention: {1d: 800d}
 *   uniques: false
 *   trending: false
 *   dedup: 7d
 * - match: "api*"
 *   resolutions: [5s, 1m]
 *   uniques: off
 *   topk: 20
 * </pre>
 */
public final class PoliciesFile {
    static final List<String> FIELDS =
            List.of("match", "resolutions", "retention", "uniques", "trending", "topk", "dedup");
    private static final String RESOLUTIONS = "5s, 1m, 5m, 1h, 1d";
    /** The longest window top-K list (as {@code --topk}). */
    static final int MAX_TOPK = 10_000;
    /** The largest file read: a list of rules is a few KiB, and YAML of megabytes takes long to parse. */
    static final int MAX_BYTES = 1 << 20;
    /** The longest retention or dedup horizon: 100 years (a window's expiry stays far from overflowing). */
    static final Duration MAX_DURATION = Duration.ofDays(36_500);

    private PoliciesFile() {}

    /**
     * The policies of {@code file}; what a rule leaves out gets {@code defaultTopk} (the job's {@code --topk})
     * and {@code defaultDedupMillis} ({@code --dedup-horizon}) and the defaults of contract sections 3 and 6.
     */
    public static Policies load(Path file, int defaultTopk, long defaultDedupMillis) {
        return parse(file.toString(), read(file), defaultTopk, defaultDedupMillis);
    }

    /** The text of {@code file}, refused when it is over {@link #MAX_BYTES} before any of it is parsed. */
    private static String read(Path file) {
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            bytes = in.readNBytes(MAX_BYTES + 1);
            if (bytes.length > MAX_BYTES)
                throw new PoliciesException(file + ": larger than 1 MiB, the most a policies file may hold"
                        + " (a list of rules is a few KiB): not read");
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (PoliciesException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw new PoliciesException(file + ": cannot read the policies file ("
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()) + ")");
        }
    }

    /** The policies of a file's text; {@code name} names it in errors. */
    public static Policies parse(String name, String text, int defaultTopk, long defaultDedupMillis) {
        Node root;
        try (Reader r = new java.io.StringReader(text)) {
            LoaderOptions options = new LoaderOptions();
            options.setAllowDuplicateKeys(false);
            options.setAllowRecursiveKeys(false);
            options.setMaxAliasesForCollections(10);
            root = new Yaml(options).compose(r);
        } catch (MarkedYAMLException e) {
            Mark m = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
            String problem = e.getProblem() != null ? e.getProblem() : e.getMessage();
            throw new PoliciesException(name + ": not YAML: " + oneLine(problem)
                    + (m == null ? "" : " (line " + (m.getLine() + 1) + ", column " + (m.getColumn() + 1) + ")"));
        } catch (YAMLException | IOException e) {
            throw new PoliciesException(name + ": not YAML: " + oneLine(e.getMessage()));
        }
        if (root == null)
            throw new PoliciesException(name + ": holds no rules: expected a YAML list of rules, each with 'match'");
        if (!(root instanceof SequenceNode list)) {
            throw new PoliciesException(name + ": expected a YAML list of rules (- match: ...), found " + kind(root)
                    + " (line " + line(root) + ")");
        }
        NamespacePolicy defaults = NamespacePolicy.defaults(defaultTopk, defaultDedupMillis);
        List<Policies.Rule> rules = new ArrayList<>();
        int position = 0;
        for (Node item : list.getValue()) {
            position++;
            Policies.Rule rule = new RuleReader(name, position, item, defaults).read();
            for (Policies.Rule earlier : rules) {
                if (earlier.glob().covers(rule.glob())) {
                    throw new PoliciesException(
                            name + ": rule " + position + " (line " + line(item) + "): field 'match': '" + rule.glob()
                                    + "' can never match: rule " + earlier.policy().position + " ('" + earlier.glob()
                                    + "') comes first and matches every namespace it does");
                }
            }
            rules.add(rule);
        }
        if (rules.isEmpty())
            throw new PoliciesException(name + ": holds no rules: expected a YAML list of rules, each with 'match'");
        return new Policies(name, rules, defaults);
    }

    /** One rule's fields, checked one by one. */
    private static final class RuleReader {
        private final String file;
        private final int position;
        private final Node node;
        private final NamespacePolicy defaults;

        RuleReader(String file, int position, Node node, NamespacePolicy defaults) {
            this.file = file;
            this.position = position;
            this.node = node;
            this.defaults = defaults;
        }

        private PoliciesException error(String field, Node at, String message) {
            return new PoliciesException(file + ": rule " + position + " (line " + line(at) + "): "
                    + (field == null ? "" : "field '" + field + "': ") + message);
        }

        Policies.Rule read() {
            if (!(node instanceof MappingNode map)) {
                throw error(
                        null,
                        node,
                        "expected a mapping with 'match' and any of "
                                + String.join(", ", FIELDS.subList(1, FIELDS.size())) + ", found " + kind(node));
            }
            refuseDuplicateKeys(null, map);
            String match = null;
            int resolutions = defaults.resolutionMask;
            Node resolutionsNode = null;
            long[] retention = new long[Resolution.all().length];
            for (Resolution r : Resolution.all()) retention[r.ordinal()] = defaults.retentionMillis(r);
            int retentionSet = 0;
            Node retentionNode = null;
            int uniques = defaults.uniquesMask;
            boolean trending = defaults.trending;
            int topk = defaults.topk;
            long dedup = defaults.dedupMillis;
            for (NodeTuple t : map.getValue()) {
                String field = t.getKeyNode() instanceof ScalarNode k ? k.getValue() : null;
                Node v = t.getValueNode();
                if (field == null || !FIELDS.contains(field)) {
                    throw error(
                            field == null ? kind(t.getKeyNode()) : field,
                            t.getKeyNode(),
                            "unknown field; a rule has " + String.join(", ", FIELDS));
                }
                switch (field) {
                    case "match" -> match = readMatch(v);
                    case "resolutions" -> {
                        resolutions = readResolutions(field, v);
                        resolutionsNode = v;
                    }
                    case "retention" -> {
                        retentionSet |= readRetention(field, v, retention);
                        retentionNode = v;
                    }
                    case "uniques" -> uniques = readUniques(field, v);
                    case "trending" -> trending = bool(field, v);
                    case "topk" -> topk = readTopk(field, v);
                    case "dedup" -> dedup = readDedup(field, v);
                    default -> throw new IllegalStateException(field);
                }
            }
            if (match == null)
                throw error("match", node, "missing: every rule needs a namespace or a glob such as 'ad*'");
            refuseRetentionOfUnwritten(
                    resolutions | (uniques & NamespacePolicy.ALL_RESOLUTIONS), retentionSet, retentionNode);
            return new Policies.Rule(
                    new Glob(match),
                    new NamespacePolicy(match, position, resolutions, retention, uniques, trending, topk, dedup));
        }

        /** Reads the {@code retention} mapping into {@code retention}; returns the bits of the resolutions it sets. */
        private int readRetention(String field, Node v, long[] retention) {
            if (!(v instanceof MappingNode m))
                throw error(field, v, "expected a mapping of resolution to duration, e.g. {1m: 30d}, found " + kind(v));
            int set = 0;
            for (NodeTuple e : m.getValue()) {
                Resolution r = resolution(field, e.getKeyNode());
                long ms = duration(field + "." + r.label, e.getValueNode(), Duration.ofSeconds(1));
                retention[r.ordinal()] = ms;
                set |= 1 << r.ordinal();
            }
            return set;
        }

        /** A retention for a resolution the rule writes nothing of ({@code written}) is a mistake, not a no-op. */
        private void refuseRetentionOfUnwritten(int written, int retentionSet, Node retentionNode) {
            for (Resolution r : Resolution.all()) {
                if ((retentionSet & (1 << r.ordinal())) != 0 && (written & (1 << r.ordinal())) == 0) {
                    throw error(
                            "retention",
                            retentionNode,
                            "'" + r.label + "' is neither among the rule's resolutions nor its uniques");
                }
            }
        }

        /**
         * Refuses a key given twice in {@code map} or in any mapping inside it (YAML leaves that to the reader,
         * which would keep the last); {@code path} is the field of {@code map}, null for the rule itself.
         */
        private void refuseDuplicateKeys(String path, MappingNode map) {
            refuseDuplicateKeys(path, map, Collections.newSetFromMap(new IdentityHashMap<>()));
        }

        /** {@code visited}: the nodes seen, as an alias may make a list or a mapping hold itself. */
        private void refuseDuplicateKeys(String path, Node n, Set<Node> visited) {
            if (!visited.add(n)) return;
            if (n instanceof SequenceNode seq) {
                for (Node item : seq.getValue()) refuseDuplicateKeys(path, item, visited);
            } else if (n instanceof MappingNode map) {
                Set<String> keys = new HashSet<>();
                for (NodeTuple t : map.getValue()) {
                    String key = t.getKeyNode() instanceof ScalarNode k ? k.getValue() : null;
                    String field = path == null ? key : path + "." + key;
                    if (key != null && !keys.add(key)) throw error(field, t.getKeyNode(), "given twice");
                    refuseDuplicateKeys(field, t.getValueNode(), visited);
                }
            }
        }

        private String readMatch(Node v) {
            if (!(v instanceof ScalarNode s) || s.getTag().equals(Tag.NULL))
                throw error("match", v, "expected a namespace or a glob such as 'ad*', found " + kind(v));
            String m = s.getValue();
            if (m.isEmpty()) throw error("match", v, "empty: give a namespace or a glob such as 'ad*'");
            for (int i = 0; i < m.length(); i++) {
                char c = m.charAt(i);
                if (c == ':')
                    throw error(
                            "match",
                            v,
                            "'" + m
                                    + "' holds ':', which no namespace does (a namespace is a counter's text before its first ':')");
                if (Character.isWhitespace(c) || Character.isISOControl(c) || c == '{' || c == '}') {
                    throw error(
                            "match",
                            v,
                            "'" + m + "' holds whitespace, a control character or a brace, which no counter id does");
                }
            }
            if (m.getBytes(StandardCharsets.UTF_8).length > 256)
                throw error("match", v, "longer than a counter id may be (256 bytes)");
            return m;
        }

        private int readResolutions(String field, Node v) {
            if (!(v instanceof SequenceNode seq))
                throw error(
                        field, v, "expected a list, a subset of " + RESOLUTIONS + ", e.g. [1m, 1h], found " + kind(v));
            int mask = 0;
            for (Node n : seq.getValue()) {
                Resolution r = resolution(field, n);
                if ((mask & (1 << r.ordinal())) != 0) throw error(field, n, "'" + r.label + "' is listed twice");
                mask |= 1 << r.ordinal();
            }
            return mask;
        }

        private int readUniques(String field, Node v) {
            if (v instanceof ScalarNode s && isBool(s)) return bool(field, v) ? NamespacePolicy.DEFAULT_UNIQUES : 0;
            if (!(v instanceof SequenceNode seq))
                throw error(field, v, "expected false, true or a list of 1h, 1d, all, found " + kind(v));
            int mask = 0;
            for (Node n : seq.getValue()) {
                String label = n instanceof ScalarNode s ? s.getValue() : null;
                int bit;
                if ("all".equals(label)) bit = NamespacePolicy.UNIQUES_ALL;
                else if ("1h".equals(label)) bit = 1 << Resolution.H1.ordinal();
                else if ("1d".equals(label)) bit = 1 << Resolution.D1.ordinal();
                else
                    throw error(
                            field,
                            n,
                            "unknown value '" + (label == null ? kind(n) : label)
                                    + "': unique users are kept for 1h, 1d and all");
                if ((mask & bit) != 0) throw error(field, n, "'" + label + "' is listed twice");
                mask |= bit;
            }
            return mask;
        }

        private int readTopk(String field, Node v) {
            if (v instanceof ScalarNode s && isBool(s)) return bool(field, v) ? defaults.topk : 0;
            if (v instanceof ScalarNode s && s.getTag().equals(Tag.INT)) {
                long k;
                try {
                    k = Long.parseLong(s.getValue().replace("_", ""));
                } catch (NumberFormatException e) {
                    k = -1;
                }
                if (k < 1 || k > MAX_TOPK)
                    throw error(field, v, "'" + s.getValue() + "': expected 1 to " + MAX_TOPK + ", or false for none");
                return (int) k;
            }
            throw error(field, v, "expected a list length (1 to " + MAX_TOPK + ") or false, found " + describe(v));
        }

        private long readDedup(String field, Node v) {
            if (v instanceof ScalarNode s && isBool(s)) {
                if (bool(field, v)) return defaults.dedupMillis;
                return 0;
            }
            return duration(field, v, Duration.ofSeconds(1));
        }

        private Resolution resolution(String field, Node n) {
            String label = n instanceof ScalarNode s ? s.getValue() : null;
            for (Resolution r : Resolution.all()) {
                if (r.label.equals(label)) return r;
            }
            throw error(
                    field,
                    n,
                    "unknown resolution '" + (label == null ? kind(n) : label) + "': expected " + RESOLUTIONS);
        }

        private long duration(String field, Node n, Duration min) {
            if (!(n instanceof ScalarNode s) || s.getTag().equals(Tag.NULL))
                throw error(field, n, "expected a duration such as 30d, found " + kind(n));
            Duration d;
            try {
                d = Durations.parse(s.getValue());
            } catch (ArithmeticException | NumberFormatException e) {
                throw tooLong(field, s);
            } catch (IllegalArgumentException e) {
                throw error(field, n, "unknown duration '" + s.getValue() + "': use for example 90s, 30m, 12h, 7d");
            }
            if (d.compareTo(min) < 0)
                throw error(field, n, "'" + s.getValue() + "' is shorter than " + Durations.format(min));
            if (d.compareTo(MAX_DURATION) > 0) throw tooLong(field, s);
            return d.toMillis();
        }

        private PoliciesException tooLong(String field, ScalarNode s) {
            return error(field, s, "'" + s.getValue() + "' is longer than " + Durations.format(MAX_DURATION));
        }

        private boolean bool(String field, Node n) {
            if (n instanceof ScalarNode s && isBool(s)) {
                String v = s.getValue().toLowerCase(java.util.Locale.ROOT);
                return v.equals("true") || v.equals("on") || v.equals("yes");
            }
            throw error(field, n, "expected true or false (on or off), found " + describe(n));
        }
    }

    private static final Set<String> BOOLEANS = new HashSet<>(List.of("true", "false", "on", "off", "yes", "no"));

    private static boolean isBool(ScalarNode s) {
        return s.getTag().equals(Tag.BOOL) || BOOLEANS.contains(s.getValue().toLowerCase(java.util.Locale.ROOT));
    }

    private static String describe(Node n) {
        return n instanceof ScalarNode s ? "'" + s.getValue() + "'" : kind(n);
    }

    private static String kind(Node n) {
        if (n instanceof SequenceNode) return "a list";
        if (n instanceof MappingNode) return "a mapping";
        if (n instanceof ScalarNode s) return s.getTag().equals(Tag.NULL) ? "nothing" : "'" + s.getValue() + "'";
        return "something else";
    }

    private static int line(Node n) {
        return n == null || n.getStartMark() == null ? 0 : n.getStartMark().getLine() + 1;
    }

    private static String oneLine(String s) {
        return s == null ? "" : s.replaceAll("\\s+", " ").trim();
    }
}
