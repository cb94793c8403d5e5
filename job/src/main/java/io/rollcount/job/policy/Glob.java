package io.rollcount.job.policy;

import java.io.Serializable;

/**
 * A namespace or a glob of namespaces: {@code *} stands for any run of characters (also none), {@code ?}
 * for one character; every other character stands for itself.
 */
final class Glob implements Serializable {
    private static final long serialVersionUID = 1L;

    final String pattern;
    private final boolean literal;

    Glob(String pattern) {
        this.pattern = pattern;
        this.literal = pattern.indexOf('*') < 0 && pattern.indexOf('?') < 0;
    }

    boolean matches(String ns) {
        return literal ? pattern.equals(ns) : match(pattern, 0, ns, 0, false);
    }

    /**
     * Whether every namespace {@code later} matches is matched by this glob too: then a rule of {@code later}
     * after one of this can never apply. Decided by matching {@code later}'s text against this glob with its
     * {@code *} and {@code ?} as symbols that only a {@code *} (and, for {@code ?}, a {@code ?}) of this glob
     * covers: exact for the globs of namespaces.
     */
    boolean covers(Glob later) {
        return match(pattern, 0, later.pattern, 0, true);
    }

    /** Glob matching with backtracking over {@code *}; in symbolic mode the text's wildcards are symbols. */
    private static boolean match(String p, int pi, String t, int ti, boolean symbolic) {
        int star = -1;
        int starText = 0;
        while (ti < t.length()) {
            char tc = t.charAt(ti);
            boolean textWild = symbolic && (tc == '*' || tc == '?');
            if (pi < p.length()) {
                char pc = p.charAt(pi);
                if (pc == '*') {
                    star = pi++;
                    starText = ti;
                    continue;
                }
                boolean one = pc == '?' ? !(textWild && tc == '*') : (!textWild && pc == tc);
                if (one) {
                    pi++;
                    ti++;
                    continue;
                }
            }
            if (star < 0) return false;
            pi = star + 1;
            ti = ++starText;
        }
        while (pi < p.length() && p.charAt(pi) == '*') pi++;
        return pi == p.length();
    }

    @Override
    public String toString() {
        return pattern;
    }
}
