package io.rollcount.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * The figures of {@code bench peers} and the fields of its RESULT lines: per variant the medians over its
 * measured runs of events/s and of the CPU per event of the job, Redis and the broker ({@code all_us} their sum),
 * the keyed state per distinct counter, and whether every run's Redis values were exact; and the ratios of the
 * variants' all-in and job CPU.
 */
final class PeerFigures {
    private PeerFigures() {}

    /**
     * One measured run of a variant.
     *
     * @param stateBytesPerCounter the last checkpoint's full size over the input's distinct counters; -1 without a
     *     checkpoint
     * @param exact whether the sampled Redis values equalled the input's exact sums
     */
    record Run(double eps, double jobUs, double redisUs, double brokerUs, long stateBytesPerCounter, boolean exact) {
        double allUs() {
            return jobUs + redisUs + brokerUs;
        }
    }

    /**
     * A variant's figures over its runs: medians, and exact only if every run was; {@code allUsByRound} each run's
     * all-in CPU per event, in the order of the rounds.
     */
    record Variant(
            double eps,
            double jobUs,
            double redisUs,
            double brokerUs,
            long stateBytesPerCounter,
            boolean exact,
            List<Double> allUsByRound) {
        static Variant of(List<Run> runs) {
            if (runs.isEmpty()) throw new IllegalArgumentException("no runs");
            boolean exact = runs.stream().allMatch(Run::exact);
            return new Variant(
                    median(runs, Run::eps),
                    median(runs, Run::jobUs),
                    median(runs, Run::redisUs),
                    median(runs, Run::brokerUs),
                    Math.round(median(runs, r -> r.stateBytesPerCounter)),
                    exact,
                    runs.stream().map(Run::allUs).toList());
        }

        /** Job, Redis and broker CPU per event together. */
        double allUs() {
            return jobUs + redisUs + brokerUs;
        }
    }

    /** The fields of {@code RESULT peers.<variant>}, in order. */
    static String[] variantFields(String workload, long events, Variant v) {
        return new String[] {
            "workload", workload,
            "events", String.valueOf(events),
            "eps", String.valueOf(Math.round(v.eps())),
            "job_us", us(v.jobUs()),
            "redis_us", us(v.redisUs()),
            "broker_us", us(v.brokerUs()),
            "all_us", us(v.allUs()),
            "state_bytes_per_counter", String.valueOf(v.stateBytesPerCounter()),
            "values_exact", String.valueOf(v.exact())
        };
    }

    /**
     * The fields of {@code RESULT peers.ratio}: sql-exact's all-in CPU over ours-exact's, ours-full's over
     * ours-exact's, and sql-exact's job CPU over ours-exact's (each of the variants' medians); then the first two
     * round by round ({@code ..._by_round}, comma-separated), where a machine whose speed drifts between rounds
     * moves both variants of a round alike.
     */
    static String[] ratioFields(String workload, Variant sqlExact, Variant oursExact, Variant oursFull) {
        return new String[] {
            "workload", workload,
            "sql_vs_ours_exact", ratio(sqlExact.allUs(), oursExact.allUs()),
            "ours_full_vs_exact", ratio(oursFull.allUs(), oursExact.allUs()),
            "job_sql_vs_ours_exact", ratio(sqlExact.jobUs(), oursExact.jobUs()),
            "sql_vs_ours_exact_by_round", byRound(sqlExact, oursExact),
            "ours_full_vs_exact_by_round", byRound(oursFull, oursExact)
        };
    }

    /** The ratio of {@code a}'s all-in CPU to {@code b}'s in each round both ran, comma-separated. */
    private static String byRound(Variant a, Variant b) {
        int rounds = Math.min(a.allUsByRound().size(), b.allUsByRound().size());
        List<String> out = new ArrayList<>(rounds);
        for (int i = 0; i < rounds; i++)
            out.add(ratio(a.allUsByRound().get(i), b.allUsByRound().get(i)));
        return String.join(",", out);
    }

    static String us(double v) {
        return Double.isNaN(v) ? "NaN" : String.format(Locale.ROOT, "%.2f", v);
    }

    static String ratio(double a, double b) {
        return b <= 0 || Double.isNaN(a) || Double.isNaN(b) ? "NaN" : String.format(Locale.ROOT, "%.2f", a / b);
    }

    static double median(List<Run> runs, ToDoubleFunction<Run> field) {
        List<Double> values = new ArrayList<>();
        for (Run r : runs) values.add(field.applyAsDouble(r));
        return BenchReport.median(values);
    }
}
