package io.rollcount.sketches.bench;

import io.rollcount.sketches.RankedItem;
import io.rollcount.sketches.RedisHyperLogLog;
import io.rollcount.sketches.TrendingSketch;
import io.rollcount.sketches.Zipf;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.datasketches.common.ArrayOfStringsSerDe;
import org.apache.datasketches.frequencies.ErrorType;
import org.apache.datasketches.frequencies.ItemsSketch;
import org.apache.datasketches.hll.HllSketch;
import org.apache.datasketches.hll.TgtHllType;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.util.Statistics;

/**
 * Runs {@link HllBench}, {@link HllSparseBench} and {@link FrequencyBench} in one JMH run (ours and the references on the
 * same inputs, same JVM flags, one after the other), adds the size and recall figures that need no
 * timing, and prints the RESULT lines of shared/BENCHMARKS.md. Times are the median of the measured
 * iterations; {@code spread} is (max - min) / 2 of those iterations relative to the median.
 *
 * <p>Arguments: {@code --quick} (1 warm-up and 3 measured iterations instead of 3 and 5),
 * {@code --only REGEX} (benchmarks to run).
 */
public final class SketchBench {
    private SketchBench() {}

    public static void main(String[] args) throws Exception {
        boolean quick = Arrays.asList(args).contains("--quick");
        int only = Arrays.asList(args).indexOf("--only");
        ChainedOptionsBuilder options = new OptionsBuilder()
                .include(
                        only >= 0
                                ? args[only + 1]
                                : "io\\.rollcount\\.sketches\\.bench\\.(HllBench|HllSparseBench|FrequencyBench)\\.");
        if (quick) {
            options.warmupIterations(1).measurementIterations(3);
        }
        String loadBefore = loadAverage();
        Collection<RunResult> results = new Runner(options.build()).run();
        String loadAfter = loadAverage();
        Map<String, Statistics> stats = new HashMap<>();
        for (RunResult r : results) {
            BenchmarkParams params = r.getParams();
            String name = params.getBenchmark()
                    .substring(params.getBenchmark()
                                    .lastIndexOf('.', params.getBenchmark().lastIndexOf('.') - 1)
                            + 1);
            stats.put(name, r.getPrimaryResult().getStatistics());
        }
        System.out.println();
        Map<String, double[]> interleaved = only >= 0 ? Map.of() : interleaved();
        printTimes(stats, interleaved);
        printSizes();
        printRecall();
        System.out.printf(
                "RESULT bench.env cpus=%d load_before=%s load_after=%s java=%s%n",
                Runtime.getRuntime().availableProcessors(), loadBefore, loadAfter, System.getProperty("java.version"));
    }

    /** The 1-minute load average, to judge how busy the shared machine was. */
    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg"))
                    .split(" ")[0];
        } catch (java.io.IOException | RuntimeException e) {
            return "unknown";
        }
    }

    private static double median(Statistics s) {
        return s.getPercentile(50);
    }

    private static String spread(Statistics s) {
        return String.format(Locale.ROOT, "%.1f%%", 100 * (s.getMax() - s.getMin()) / 2 / median(s));
    }

    private static void compare(
            Map<String, Statistics> stats,
            Map<String, double[]> interleaved,
            String figure,
            String ours,
            String ref,
            String refName) {
        Statistics o = stats.get(ours);
        Statistics r = stats.get(ref);
        if (o == null || r == null) {
            return;
        }
        double[] i = interleaved.get(figure);
        String alternating =
                i == null ? "" : String.format(Locale.ROOT, " ratio_interleaved=%.2f iqr=%.2f-%.2f", i[0], i[1], i[2]);
        System.out.printf(
                Locale.ROOT,
                "RESULT %s ours_ns=%.2f ref_ns=%.2f ratio=%.2f%s ref=%s ours_spread=%s ref_spread=%s%n",
                figure,
                median(o),
                median(r),
                median(o) / median(r),
                alternating,
                refName,
                spread(o),
                spread(r));
    }

    /** The same benchmark methods, timed in alternating rounds in this JVM (see {@link Interleaved}). */
    private static Map<String, double[]> interleaved() {
        HllBench hll = new HllBench();
        hll.setUp();
        FrequencyBench freq = new FrequencyBench();
        freq.setUp();
        Map<String, double[]> out = new HashMap<>();
        out.put("hll.add", Interleaved.ratio(hll::oursBytes, hll::refHll8Bytes, 500));
        out.put("hll.add_vs_hll6", Interleaved.ratio(hll::oursBytes, hll::refHll6Bytes, 500));
        out.put("hll.add_string", Interleaved.ratio(hll::oursString, hll::refHll8String, 500));
        out.put("topk.update", Interleaved.ratio(freq::oursTrending, freq::refItems2048, 300));
        out.put("topk.update_space_saving_only", Interleaved.ratio(freq::oursTopK, freq::refItems2048, 300));
        out.put("exact.update", Interleaved.ratio(freq::oursTrending, freq::refHashMap, 300));
        return out;
    }

    private static void printTimes(Map<String, Statistics> stats, Map<String, double[]> interleaved) {
        compare(
                stats,
                interleaved,
                "hll.add",
                "HllBench.oursBytes",
                "HllBench.refHll8Bytes",
                "datasketches-6.2.0-HLL_8");
        compare(
                stats,
                interleaved,
                "hll.add_vs_hll6",
                "HllBench.oursBytes",
                "HllBench.refHll6Bytes",
                "datasketches-6.2.0-HLL_6");
        compare(
                stats,
                interleaved,
                "hll.add_string",
                "HllBench.oursString",
                "HllBench.refHll8String",
                "datasketches-6.2.0-HLL_8");
        Statistics sparse20 = stats.get("HllSparseBench.ours20");
        Statistics sparse200 = stats.get("HllSparseBench.ours200");
        Statistics sparse1000 = stats.get("HllSparseBench.ours1000");
        if (sparse20 != null && sparse200 != null && sparse1000 != null) {
            System.out.printf(
                    Locale.ROOT,
                    "RESULT hll.add_sparse items20_ns=%.2f items200_ns=%.2f items1000_ns=%.2f ours_spread=%s/%s/%s%n",
                    median(sparse20),
                    median(sparse200),
                    median(sparse1000),
                    spread(sparse20),
                    spread(sparse200),
                    spread(sparse1000));
        }
        Statistics cms = stats.get("FrequencyBench.oursCms");
        Statistics cmsHash = stats.get("FrequencyBench.oursCmsHash");
        if (cms != null && cmsHash != null) {
            System.out.printf(
                    Locale.ROOT,
                    "RESULT cms.update ours_ns=%.2f hashed_ns=%.2f target_ns=25 depth=5 width=2719"
                            + " conservative=true decay=1h ours_spread=%s%n",
                    median(cms),
                    median(cmsHash),
                    spread(cms));
        }
        String ref = "FrequencyBench.refItems2048";
        Statistics r1024 = stats.get("FrequencyBench.refItems1024");
        String refName = "datasketches-6.2.0-ItemsSketch-2048"
                + (r1024 == null ? "" : String.format(Locale.ROOT, " ref1024_ns=%.2f", median(r1024)));
        compare(
                stats,
                interleaved,
                "topk.update",
                "FrequencyBench.oursTrending",
                ref,
                refName + " ours=cms+space-saving-400");
        compare(
                stats,
                interleaved,
                "topk.update_space_saving_only",
                "FrequencyBench.oursTopK",
                ref,
                refName + " ours=space-saving-400");
        compare(
                stats,
                interleaved,
                "exact.update",
                "FrequencyBench.oursTrending",
                "FrequencyBench.refHashMap",
                "java.util.HashMap-exact");
    }

    private static void printSizes() {
        RedisHyperLogLog ours = new RedisHyperLogLog();
        HllSketch ref = new HllSketch(14, TgtHllType.HLL_8);
        for (int i = 0; i < 10; i++) {
            ours.add("user-" + i);
            ref.update("user-" + i);
        }
        System.out.printf(
                "RESULT hll.sparse ours_bytes=%d ref_bytes=%d target_bytes=100 items=10 ours_estimate=%d"
                        + " ref=datasketches-6.2.0-HLL_8-compact%n",
                ours.serializedSizeBytes(), ref.toCompactByteArray().length, ours.count());
    }

    private static void printRecall() {
        String[] names = Zipf.names(1_000_000);
        int[] stream = new Zipf(names.length, 1.1).sample(10_000_000, 2026);
        long[] truth = new long[names.length];
        TrendingSketch ours = new TrendingSketch(400, 0.001, 0.01, 7, 3_600_000L);
        ItemsSketch<String> ref = new ItemsSketch<>(2048);
        long t = 1_796_000_000_000L;
        for (int r : stream) {
            truth[r]++;
            ours.update(names[r], 1, t);
            ref.update(names[r]);
        }
        Integer[] ranks = new Integer[names.length];
        Arrays.setAll(ranks, i -> i);
        Arrays.sort(ranks, (a, b) -> Long.compare(truth[b], truth[a]));
        Set<String> top = new HashSet<>();
        for (int i = 0; i < 100; i++) {
            top.add(names[ranks[i]]);
        }
        long oursHits = ours.topK(100, t).stream()
                .map(RankedItem::item)
                .filter(top::contains)
                .count();
        ItemsSketch.Row<String>[] rows = ref.getFrequentItems(ErrorType.NO_FALSE_NEGATIVES);
        Arrays.sort(rows, (a, b) -> Long.compare(b.getEstimate(), a.getEstimate()));
        long refHits = Arrays.stream(rows)
                .limit(100)
                .map(ItemsSketch.Row::getItem)
                .filter(top::contains)
                .count();
        System.out.printf(
                Locale.ROOT,
                "RESULT topk.recall ours=%.2f ref=%.2f k=100 events=10000000 items=1000000 zipf=1.1"
                        + " ours_bytes=%d ref_bytes=%d ref=datasketches-6.2.0-ItemsSketch-2048%n",
                oursHits / 100.0,
                refHits / 100.0,
                ours.toBytes().length,
                ref.toByteArray(new ArrayOfStringsSerDe()).length);
    }
}
