package io.rollcount.sketches;

/**
 * One item of a top-K report, its counts decayed to the report's time: the true decayed count lies
 * in {@code [lower, upper]}; {@code score} is the estimate used for ranking (the upper bound, as
 * Space-Saving reports counts, tightened by the Count-Min estimate where there is one).
 */
public record RankedItem(String item, double score, double lower, double upper) {}
