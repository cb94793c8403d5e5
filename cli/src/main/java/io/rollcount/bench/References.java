package io.rollcount.bench;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.parse.EventParser;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.sketches.CountMinSketch;
import io.rollcount.sketches.RedisHyperLogLog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;

/**
 * The references, each written the way its own documentation teaches, counting sums only.
 * The two Flink ones read the same source as Rollcount, with the same watermarks, and discard their
 * results (so they pay nothing for output: they measure the job's own cost only). Their counterparts
 * that deliver the same outputs as Rollcount are {@link FairReferences}.
 */
final class References {
    private References() {}

    static WatermarkStrategy<Event> watermarks() {
        return io.rollcount.job.Pipeline.watermarks(Duration.ofSeconds(5), Duration.ofSeconds(10));
    }

    // ------------------------------------------------------------------ (a) textbook DataStream

    /**
     * keyBy(counter) and one tumbling event-time window per resolution, with an incremental
     * {@link AggregateFunction} and a {@link ProcessWindowFunction} for the window's start (the
     * documentation's "incremental aggregation with ProcessWindowFunction"). The events are first
     * projected to (counter, delta), so the shuffles carry no more than a sum needs.
     *
     * @return the number of sink subtasks that will report their end
     */
    static int textbook(StreamExecutionEnvironment env, Source<Event, ?, ?> source) {
        DataStream<Tuple2<String, Long>> increments = env.fromSource(
                        source, watermarks(), "events", TypeInformation.of(Event.class))
                .map(e -> Tuple2.of(e.counter, e.delta))
                .returns(Types.TUPLE(Types.STRING, Types.LONG))
                .name("project");
        KeyedStream<Tuple2<String, Long>, String> byCounter = increments.keyBy(t -> t.f0, Types.STRING);
        int sinks = 0;
        for (Resolution r : Resolution.all()) {
            byCounter
                    .window(TumblingEventTimeWindows.of(Duration.ofMillis(r.sizeMillis)))
                    .aggregate(
                            new Sum(),
                            new WithStart(),
                            Types.LONG,
                            Types.LONG,
                            Types.<Tuple3<String, Long, Long>>TUPLE(Types.STRING, Types.LONG, Types.LONG))
                    .name("window-" + r.label)
                    .sinkTo(new StampingSink<>(null))
                    .name("discard-" + r.label);
            sinks++;
        }
        return sinks * env.getParallelism();
    }

    static final class Sum implements AggregateFunction<Tuple2<String, Long>, Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Tuple2<String, Long> value, Long acc) {
            return acc + value.f1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    static final class WithStart extends ProcessWindowFunction<Long, Tuple3<String, Long, Long>, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(String key, Context ctx, Iterable<Long> sums, Collector<Tuple3<String, Long, Long>> out) {
            out.collect(Tuple3.of(key, ctx.window().getStart(), sums.iterator().next()));
        }
    }

    // ------------------------------------------------------------------ (b) Flink SQL

    static final String[][] SQL_WINDOWS = {
        {"5s", "INTERVAL '5' SECOND"},
        {"1m", "INTERVAL '1' MINUTE"},
        {"5m", "INTERVAL '5' MINUTE"},
        {"1h", "INTERVAL '1' HOUR"},
        {"1d", "INTERVAL '1' DAY"},
    };

    /**
     * A window TVF aggregation ({@code TUMBLE}) per resolution over the same events, with mini-batch and
     * two-phase (local-global) aggregation on, as Flink's performance-tuning page recommends for skew.
     */
    static int sql(StreamExecutionEnvironment env, Source<Event, ?, ?> source) {
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tuneSql(tEnv);
        DataStream<Row> rows = env.fromSource(source, watermarks(), "events", TypeInformation.of(Event.class))
                .map(e -> Row.of(e.counter, e.delta))
                .returns(Types.ROW_NAMED(new String[] {"counter", "delta"}, Types.STRING, Types.LONG))
                .name("project");
        Table events = tEnv.fromDataStream(
                rows,
                Schema.newBuilder()
                        .column("counter", DataTypes.STRING())
                        .column("delta", DataTypes.BIGINT())
                        .columnByMetadata("rt", DataTypes.TIMESTAMP_LTZ(3), "rowtime")
                        .watermark("rt", "SOURCE_WATERMARK()")
                        .build());
        tEnv.createTemporaryView("events", events);
        int sinks = 0;
        for (String[] w : SQL_WINDOWS) {
            Table sums = tEnv.sqlQuery(
                    "SELECT `counter`, window_start, SUM(delta) AS total FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(rt), "
                            + w[1] + ")) GROUP BY `counter`, window_start, window_end");
            tEnv.toDataStream(sums).sinkTo(new StampingSink<>(null)).name("discard-" + w[0]);
            sinks++;
        }
        return sinks * env.getParallelism();
    }

    /** Mini-batch (1 s, 10,000 rows) and two-phase aggregation: the skew settings of Flink's performance-tuning page. */
    static void tuneSql(StreamTableEnvironment tEnv) {
        tEnv.getConfig().set("table.local-time-zone", "UTC");
        tEnv.getConfig().set("table.exec.mini-batch.enabled", "true");
        tEnv.getConfig().set("table.exec.mini-batch.allow-latency", "1 s");
        tEnv.getConfig().set("table.exec.mini-batch.size", "10000");
        tEnv.getConfig().set("table.optimizer.agg-phase-strategy", "TWO_PHASE");
    }

    /** The SQL interval literal of a resolution's window size. */
    static String sqlInterval(Resolution r) {
        for (String[] w : SQL_WINDOWS) if (w[0].equals(r.label)) return w[1];
        throw new IllegalArgumentException("no SQL interval for " + r.label);
    }

    // ------------------------------------------------------------------ (c) the seeds' Redis design

    /**
     * Each event one {@code INCRBY} on one of 16 shard keys of its counter (the shard drawn per event, so a
     * hot counter spreads over 16 keys), pipelined 1,000 commands per round trip, from {@code threads}
     * threads (one connection each) that each make and parse their part of the events, as the job's
     * source does.
     *
     * @return events per second
     */
    static double redis(BenchEvents events, long limit, String host, int port, String prefix, int threads)
            throws Exception {
        long perThread = Math.min(events.partSize(), limit / threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Long>> parts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long from = (long) t * events.partSize();
                BenchEvents ev = events.copy();
                Callable<Long> part = () -> {
                    EventParser parser = new EventParser(0);
                    RedisKeys keys = new RedisKeys(prefix);
                    try (Jedis jedis = new Jedis(host, port)) {
                        long start = System.nanoTime();
                        Pipeline p = jedis.pipelined();
                        for (long i = from; i < from + perThread; i++) {
                            Event e = parser.parse(ev.line(i), null, null, 0, 0);
                            int shard = (int) (BenchEvents.mix(i) & 15);
                            p.incrBy(keys.counterBase(e.counter) + shard, e.delta);
                            if ((i - from) % 1000 == 999) p.sync();
                        }
                        p.sync();
                        return System.nanoTime() - start;
                    }
                };
                parts.add(pool.submit(part));
            }
            long slowest = 0;
            for (Future<Long> f : parts) slowest = Math.max(slowest, f.get());
            return perThread * threads / (slowest / 1e9);
        } finally {
            pool.shutdownNow();
        }
    }

    // ------------------------------------------------------------------ (d) the limit

    /** The per-counter state of the limit loop: a sum and the counter's unique users. */
    private static final class Acc {
        long sum;
        RedisHyperLogLog users;
    }

    /**
     * One thread doing only the per-event work, no Flink: parse the line, hash the counter, add the delta
     * into a hash map, add the user to the counter's Redis-format HyperLogLog, update a Count-Min sketch
     * (trending) with the counter. Lines are made before the clock starts. Median of {@code passes} passes
     * (a fresh map each) after one warm-up pass.
     *
     * @return events per second of one thread
     */
    static double limitOneThread(BenchEvents events, int lines, int passes) {
        byte[][] input = new byte[lines][];
        BenchEvents ev = events.copy();
        long part = events.partSize();
        for (int k = 0; k < lines; k++) {
            // both parts interleaved, as the job's subtasks see them together
            long i = (k % events.parallelism) * part + k / events.parallelism;
            input[k] = ev.line(i);
        }
        EventParser parser = new EventParser(0);
        double[] rates = new double[passes];
        long sink = 0;
        for (int pass = -1; pass < passes; pass++) {
            HashMap<String, Acc> map = new HashMap<>();
            CountMinSketch cms = new CountMinSketch(0.001, 0.01, 42, 3_600_000L);
            long start = System.nanoTime();
            for (byte[] line : input) {
                Event e = parser.parse(line, null, null, 0, 0);
                long h = CountMinSketch.hash(e.counter);
                Acc a = map.get(e.counter);
                if (a == null) map.put(e.counter, a = new Acc());
                a.sum += e.delta;
                if (e.user != null) {
                    if (a.users == null) a.users = new RedisHyperLogLog();
                    a.users.addHash(RedisHyperLogLog.hash(e.user));
                }
                if (e.delta > 0) cms.updateHash(h, e.delta, e.ts);
            }
            long elapsed = System.nanoTime() - start;
            sink += map.size();
            if (pass >= 0) rates[pass] = lines / (elapsed / 1e9);
        }
        if (sink == 42) System.out.print("");
        java.util.Arrays.sort(rates);
        return rates[passes / 2];
    }
}
