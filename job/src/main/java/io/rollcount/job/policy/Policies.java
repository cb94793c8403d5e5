package io.rollcount.job.policy;

import io.rollcount.job.model.CounterId;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The namespace policies of {@code --policies} (contract section 6), parsed and validated
 * ({@link PoliciesFile}): an ordered list of rules; the first whose match covers a counter's namespace
 * applies, and a counter no rule matches gets {@link #defaults()}. Immutable and Serializable: read once
 * at submission and shipped in the job graph, so no TaskManager needs the file.
 *
 * <p>{@link #forNamespace} caches its answer per namespace (up to {@value #CACHE_LIMIT} namespaces per
 * instance, each operator instance its own copy), so the hot path does a map lookup, not a glob match.
 */
public final class Policies implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Namespaces whose rule is cached per instance; beyond, the rules are matched per call. */
    static final int CACHE_LIMIT = 10_000;

    private final String source;
    private final List<Rule> rules;
    private final NamespacePolicy defaults;
    private transient ConcurrentHashMap<String, NamespacePolicy> cache;

    /** A rule: its glob and what it keeps. */
    record Rule(Glob glob, NamespacePolicy policy) implements Serializable {}

    Policies(String source, List<Rule> rules, NamespacePolicy defaults) {
        this.source = source;
        this.rules = List.copyOf(rules);
        this.defaults = defaults;
    }

    /** No rules: every counter gets the defaults (today's behaviour), with the job's window top-K length and dedup horizon. */
    public static Policies none(int topk, long dedupMillis) {
        return new Policies(null, List.of(), NamespacePolicy.defaults(topk, dedupMillis));
    }

    /** The policy of the counters of namespace {@code ns}. */
    public NamespacePolicy forNamespace(String ns) {
        if (rules.isEmpty()) return defaults;
        ConcurrentHashMap<String, NamespacePolicy> c = cache;
        if (c == null) cache = c = new ConcurrentHashMap<>();
        NamespacePolicy p = c.get(ns);
        if (p != null) return p;
        p = match(ns);
        if (c.size() < CACHE_LIMIT) c.put(ns, p);
        return p;
    }

    /** The policy of a counter, by its namespace (the text before its first ':'). */
    public NamespacePolicy forCounter(String counter) {
        return rules.isEmpty() ? defaults : forNamespace(CounterId.namespaceOf(counter));
    }

    private NamespacePolicy match(String ns) {
        for (Rule r : rules) {
            if (r.glob().matches(ns)) return r.policy();
        }
        return defaults;
    }

    /** What a counter no rule matches gets. */
    public NamespacePolicy defaults() {
        return defaults;
    }

    /** The rules, in order. */
    public List<NamespacePolicy> rules() {
        List<NamespacePolicy> out = new ArrayList<>(rules.size());
        for (Rule r : rules) out.add(r.policy());
        return out;
    }

    /** Whether no rule was given. */
    public boolean isEmpty() {
        return rules.isEmpty();
    }

    /** The longest dedup horizon of any rule or of the defaults, ms (0: none deduplicates). */
    public long maxDedupMillis() {
        long max = defaults.dedupMillis;
        for (Rule r : rules) max = Math.max(max, r.policy().dedupMillis);
        return max;
    }

    /** The longest window top-K length of any rule or of the defaults. */
    public int maxTopk() {
        int max = defaults.topk;
        for (Rule r : rules) max = Math.max(max, r.policy().topk);
        return max;
    }

    /** The rules in force, a line each, then the defaults; what {@code run} and the demo print and the job logs. */
    public List<String> describe() {
        List<String> lines = new ArrayList<>();
        lines.add(
                source == null
                        ? "namespace policies: none given; every counter gets the defaults"
                        : "namespace policies from " + source
                                + " (the first rule that matches a counter's namespace applies):");
        for (Rule r : rules) lines.add("  " + r.policy().describe());
        lines.add("  " + defaults.describe());
        return lines;
    }
}
