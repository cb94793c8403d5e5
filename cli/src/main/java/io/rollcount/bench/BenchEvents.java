package io.rollcount.bench;

import io.rollcount.job.gen.EventGenerator.Workload;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The benchmark's events as a pure function of their index: event {@code i} of a workload is the same
 * JSON line wherever it is made (the Flink generator source of any variant, the Redis reference's
 * threads, the limit's loop), so every variant counts exactly the same input.
 *
 * <p>Shapes as in BENCHMARKS.md and {@link io.rollcount.job.gen.EventGenerator}: uniform, Zipf 1.1 over
 * the counters, or one counter with 30% of the events and Zipf 1.1 for the rest; 70% carry a {@code user},
 * 50% an {@code event_id} (every event with {@link #withEventIdOnEvery}), 3% are redeliveries of a recent event
 * with an id. The index range is cut into
 * {@code parallelism} equal contiguous parts (as Flink's number-sequence splits are); event time advances
 * with the position inside a part, so that all source subtasks move through event time together, at
 * {@code eventsPerSecond} in total, with up to {@code jitterMillis} of disorder.
 */
public final class BenchEvents implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final String[] NAMESPACES = {"post", "video", "api", "user"};
    private static final ConcurrentHashMap<Integer, double[]> ZIPF = new ConcurrentHashMap<>();

    public final long seed;
    public final Workload workload;
    public final int counters;
    public final int users;
    /** Events in all, a multiple of the parallelism. */
    public final long count;

    public final int parallelism;
    public final long startTs;
    public final double eventsPerSecond;
    public final long jitterMillis;
    /** Share of events that redeliver a recent event with an id (0.03; 0 for an input every job counts alike). */
    public final double redeliveryRate;
    /**
     * Whether the workload opens with a pass over every counter ({@link #withTouchPass}): the first
     * {@code ceil(counters / parallelism)} events of part {@code p} go to ranks {@code p, p + parallelism, ...}.
     */
    public final boolean touchPass;
    /** Share of events that carry an {@code event_id}: 0.5, or 1 ({@link #withEventIdOnEvery}). */
    public final double eventIdShare;

    private transient double[] cdf;
    private transient StringBuilder sb;

    public BenchEvents(
            long seed,
            Workload workload,
            int counters,
            int users,
            long count,
            int parallelism,
            long startTs,
            double eventsPerSecond,
            long jitterMillis) {
        this(
                seed,
                workload,
                counters,
                users,
                count,
                parallelism,
                startTs,
                eventsPerSecond,
                jitterMillis,
                0.03,
                false,
                0.5);
    }

    private BenchEvents(
            long seed,
            Workload workload,
            int counters,
            int users,
            long count,
            int parallelism,
            long startTs,
            double eventsPerSecond,
            long jitterMillis,
            double redeliveryRate,
            boolean touchPass,
            double eventIdShare) {
        this.redeliveryRate = redeliveryRate;
        this.touchPass = touchPass;
        this.eventIdShare = eventIdShare;
        this.seed = seed;
        this.workload = workload;
        this.counters = counters;
        this.users = users;
        this.parallelism = parallelism;
        this.count = count / parallelism * parallelism;
        this.startTs = startTs;
        this.eventsPerSecond = eventsPerSecond;
        this.jitterMillis = jitterMillis;
    }

    /** The events of {@code from} with another share of redeliveries, touch pass and ids; a buffer of its own. */
    private BenchEvents(BenchEvents from, double redeliveryRate, boolean touchPass, double eventIdShare) {
        this.redeliveryRate = redeliveryRate;
        this.touchPass = touchPass;
        this.eventIdShare = eventIdShare;
        this.seed = from.seed;
        this.workload = from.workload;
        this.counters = from.counters;
        this.users = from.users;
        this.parallelism = from.parallelism;
        this.count = from.count;
        this.startTs = from.startTs;
        this.eventsPerSecond = from.eventsPerSecond;
        this.jitterMillis = from.jitterMillis;
    }

    /** A copy for another thread (the instance keeps a reusable buffer). */
    public BenchEvents copy() {
        return new BenchEvents(this, redeliveryRate, touchPass, eventIdShare);
    }

    /**
     * The same events without redeliveries: every event_id once, so deduplication changes nothing and a
     * job that does not deduplicate counts the same sums (the "same outputs" test of the references).
     */
    public BenchEvents withoutRedeliveries() {
        return new BenchEvents(this, 0, touchPass, eventIdShare);
    }

    /**
     * The same events, except that each part opens with a pass over its share of the counters, one event
     * each (then the workload's own draws): every counter is touched once at least, whatever the skew
     * (the growth bench, where zipf alone would leave most of a large tail untouched). Needs at least
     * {@code counters} events.
     */
    public BenchEvents withTouchPass() {
        if (count / parallelism < (counters + parallelism - 1) / parallelism)
            throw new IllegalArgumentException(count + " events cannot touch " + counters + " counters");
        return new BenchEvents(this, redeliveryRate, true, eventIdShare);
    }

    /**
     * The same events, each with an {@code event_id} (a producer that sends ids sends them on every event), the
     * same 3% redeliveries (the same line, id included, sent again); the draws of every event stay the same.
     */
    public BenchEvents withEventIdOnEvery() {
        return new BenchEvents(this, redeliveryRate, touchPass, 1.0);
    }

    /** Events of each part that belong to the touch pass (0 without one). */
    public long touchPerPart() {
        return touchPass ? (counters + parallelism - 1) / parallelism : 0;
    }

    public long partSize() {
        return count / parallelism;
    }

    /** The event time of index {@code i} before jitter. */
    public long baseTs(long i) {
        long local = i % partSize();
        return startTs + (long) (local * parallelism * 1000.0 / eventsPerSecond);
    }

    private SplittableRandom random(long i) {
        return new SplittableRandom(mix(seed * 0x9E3779B97F4A7C15L + i));
    }

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** The rank of the counter of event {@code i} (0 is the hottest under zipf and viral). */
    public int rank(long i) {
        long j = redeliveryOf(i);
        SplittableRandom r = random(j);
        r.nextDouble(); // the redelivery draw
        return nextRank(j, r);
    }

    /** The rank of event {@code j}: its place in the touch pass, or the workload's draw. */
    private int nextRank(long j, SplittableRandom r) {
        int drawn = nextRank(r); // drawn anyway, so that the draws after it are those of the event without a pass
        if (!touchPass) return drawn;
        long local = j % partSize();
        if (local >= touchPerPart()) return drawn;
        long rank = local * parallelism + j / partSize();
        return rank < counters ? (int) rank : drawn;
    }

    private int nextRank(SplittableRandom r) {
        return switch (workload) {
            case uniform -> r.nextInt(counters);
            case zipf -> zipfRank(r);
            case viral -> r.nextDouble() < 0.3 ? 0 : zipfRank(r);
        };
    }

    private int zipfRank(SplittableRandom r) {
        if (cdf == null) cdf = ZIPF.computeIfAbsent(counters, BenchEvents::zipfCdf);
        int k = Arrays.binarySearch(cdf, r.nextDouble());
        return Math.min(counters - 1, k >= 0 ? k : -k - 1);
    }

    private static double[] zipfCdf(int n) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += 1.0 / Math.pow(i + 1, 1.1);
            cdf[i] = sum;
        }
        for (int i = 0; i < n; i++) cdf[i] /= sum;
        return cdf;
    }

    /** The counter id of a rank, as {@link io.rollcount.job.gen.EventGenerator#counterId} makes it. */
    public static String counterId(int rank) {
        return NAMESPACES[rank % NAMESPACES.length] + ":" + rank
                + (rank % 3 == 0 ? ":likes" : rank % 3 == 1 ? ":views" : ":clicks");
    }

    /** {@code i} itself, or the earlier index (same part, with an event_id) that event {@code i} redelivers. */
    public long redeliveryOf(long i) {
        SplittableRandom r = random(i);
        long local = i % partSize();
        if (local < touchPerPart()) return i; // the touch pass redelivers nothing: it touches every counter
        if (local == 0 || r.nextDouble() >= redeliveryRate) return i;
        for (int attempt = 0; attempt < 8; attempt++) {
            long j = i - 1 - r.nextInt((int) Math.min(local, 2000));
            if (hasEventId(j)) return j;
        }
        return i;
    }

    private boolean hasEventId(long j) {
        SplittableRandom r = random(j);
        r.nextDouble();
        nextRank(r);
        r.nextDouble(); // delta
        r.nextLong(); // jitter
        r.nextDouble(); // user?
        r.nextInt(users);
        return r.nextDouble() < eventIdShare;
    }

    /** The JSON line of event {@code i}. */
    public byte[] line(long i) {
        long j = redeliveryOf(i);
        return build(j, Long.MIN_VALUE, null);
    }

    /**
     * A line for a paced run: event time {@code ts} (its creation), and for a probe the given counter, with
     * no user and no event_id.
     */
    public byte[] pacedLine(long i, long ts, String probeCounter) {
        return build(probeCounter != null ? i : redeliveryOf(i), ts, probeCounter);
    }

    private byte[] build(long j, long fixedTs, String probeCounter) {
        SplittableRandom r = random(j);
        r.nextDouble();
        int rank = nextRank(j, r);
        double d = r.nextDouble();
        long delta = d < 0.9 ? 1 : 1 + (long) ((d - 0.9) * 100); // 1..10
        long jitter = r.nextLong(jitterMillis + 1);
        boolean hasUser = r.nextDouble() < 0.7;
        int user = r.nextInt(users);
        boolean hasId = r.nextDouble() < eventIdShare;
        long id = r.nextLong();
        boolean writeDelta = delta != 1 || r.nextBoolean();
        long ts = fixedTs != Long.MIN_VALUE ? fixedTs : baseTs(j) - jitter;
        if (sb == null) sb = new StringBuilder(128);
        StringBuilder b = sb;
        b.setLength(0);
        b.append("{\"counter\":\"");
        if (probeCounter != null) {
            b.append(probeCounter).append("\",\"ts\":").append(ts).append('}');
            return b.toString().getBytes(StandardCharsets.UTF_8);
        }
        b.append(NAMESPACES[rank % NAMESPACES.length])
                .append(':')
                .append(rank)
                .append(rank % 3 == 0 ? ":likes" : rank % 3 == 1 ? ":views" : ":clicks")
                .append('"');
        if (writeDelta) b.append(",\"delta\":").append(delta);
        b.append(",\"ts\":").append(ts);
        if (hasId) b.append(",\"event_id\":\"").append(Long.toHexString(id)).append('"');
        if (hasUser) b.append(",\"user\":\"u").append(user).append('"');
        b.append('}');
        return b.toString().getBytes(StandardCharsets.ISO_8859_1);
    }
}
