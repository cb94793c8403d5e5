package io.rollcount.job.model;

/**
 * What a counter id says of itself: its namespace is its text before the first {@code ':'} ({@link #namespaceOf},
 * contract section 1); and {@value #ALL_NAMESPACES}, the pseudo-namespace of the lists that rank the counters of
 * every namespace together (trending and window top-K, contract section 3).
 */
public final class CounterId {
    /** The pseudo-namespace of the lists over every namespace. */
    public static final String ALL_NAMESPACES = "_all";

    private CounterId() {}

    /** The namespace of a counter: its text before the first ':' (the whole id if there is none). */
    public static String namespaceOf(String counter) {
        int i = counter.indexOf(':');
        return i < 0 ? counter : counter.substring(0, i);
    }
}
