package io.rollcount.bench;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.redis.RedisKeys;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple4;
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
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

/**
 * The fair references: the textbook DataStream job and Flink SQL, each written the way its
 * documentation shows, delivering Rollcount's count outputs to the same servers: every window sum of the
 * five resolutions and every counter's total to Redis, in the contract's key layout ({@link RedisKeys}),
 * with {@code SET key value PXAT <window end + retention>} ({@link PipelinedSetSink}); and, in Kafka mode, the
 * closed windows of the rollup resolutions to {@code counter-rollups} through the exactly-once
 * {@code KafkaSink} Rollcount uses. What they leave out, in their favour: deduplication by
 * {@code event_id}, unique users, trending and window top-K lists, revisions of late events (the bench's
 * input has none), dead letters; their rollups carry {@code uniques} null.
 */
final class FairReferences {
    private FairReferences() {}

    /** The outputs of a reference: where Redis is, the key layout, and the Kafka rollups (null: none). */
    record Outputs(
            String redisHost, int redisPort, RedisKeys keys, Sink<Rollup> rollups, Set<Resolution> rollupResolutions)
            implements java.io.Serializable {}

    // ------------------------------------------------------------------ (a) textbook DataStream

    /**
     * keyBy(counter), one tumbling event-time window per resolution with an incremental
     * {@link AggregateFunction} (sum and number of events) and a {@link ProcessWindowFunction} for the
     * window's start; each fired window is a Redis write and, for the rollup resolutions, a rollup. The
     * running total is a rolling {@code reduce} over the fired 5-second windows of the counter (the
     * documentation's keyed rolling aggregation), each new total a Redis write.
     *
     * @return the number of stamping sink subtasks that will report their end
     */
    static int textbook(StreamExecutionEnvironment env, Source<Event, ?, ?> source, Outputs out) {
        DataStream<Tuple2<String, Long>> increments = env.fromSource(
                        source, References.watermarks(), "events", TypeInformation.of(Event.class))
                .filter(e -> !e.isDeadLetter())
                .name("valid")
                .map(e -> Tuple2.of(e.counter, e.delta))
                .returns(Types.TUPLE(Types.STRING, Types.LONG))
                .name("project");
        KeyedStream<Tuple2<String, Long>, String> byCounter = increments.keyBy(t -> t.f0, Types.STRING);
        RedisKeys keys = out.keys();
        List<DataStream<CountWrite>> writes = new ArrayList<>();
        List<DataStream<Rollup>> rollups = new ArrayList<>();
        DataStream<Tuple4<String, Long, Long, Long>> fiveSeconds = null;
        for (Resolution r : Resolution.all()) {
            DataStream<Tuple4<String, Long, Long, Long>> windows = byCounter
                    .window(TumblingEventTimeWindows.of(java.time.Duration.ofMillis(r.sizeMillis)))
                    .aggregate(
                            new SumAndCount(),
                            new Closed(),
                            Types.TUPLE(Types.LONG, Types.LONG),
                            Types.TUPLE(Types.LONG, Types.LONG),
                            Types.<Tuple4<String, Long, Long, Long>>TUPLE(
                                    Types.STRING, Types.LONG, Types.LONG, Types.LONG))
                    .name("window-" + r.label);
            if (r == Resolution.S5) fiveSeconds = windows;
            writes.add(windows.map(
                            w -> new CountWrite(keys.window(w.f0, r, w.f1), w.f2, w.f1 + r.sizeMillis + r.ttlMillis))
                    .returns(CountWrite.class)
                    .name("redis-" + r.label));
            if (out.rollups() != null && out.rollupResolutions().contains(r)) {
                rollups.add(windows.map(w -> new Rollup(w.f0, r.label, w.f1, w.f1 + r.sizeMillis, w.f2, w.f3, null, 0))
                        .returns(Rollup.class)
                        .name("rollup-" + r.label));
            }
        }
        writes.add(fiveSeconds
                .keyBy(w -> w.f0, Types.STRING)
                .reduce((a, b) -> Tuple4.of(a.f0, b.f1, a.f2 + b.f2, a.f3 + b.f3))
                .name("running-total")
                .map(t -> new CountWrite(keys.total(t.f0), t.f2, 0))
                .returns(CountWrite.class)
                .name("redis-total"));
        return sink(env, writes, rollups, out);
    }

    static final class SumAndCount
            implements AggregateFunction<Tuple2<String, Long>, Tuple2<Long, Long>, Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;

        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Tuple2<String, Long> v, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + v.f1, acc.f1 + 1);
        }

        @Override
        public Tuple2<Long, Long> getResult(Tuple2<Long, Long> acc) {
            return acc;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    /** (counter, window start, sum, events) of a fired window. */
    static final class Closed
            extends ProcessWindowFunction<Tuple2<Long, Long>, Tuple4<String, Long, Long, Long>, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(
                String key,
                Context ctx,
                Iterable<Tuple2<Long, Long>> sums,
                Collector<Tuple4<String, Long, Long, Long>> out) {
            Tuple2<Long, Long> s = sums.iterator().next();
            out.collect(Tuple4.of(key, ctx.window().getStart(), s.f0, s.f1));
        }
    }

    // ------------------------------------------------------------------ (b) Flink SQL

    /**
     * Flink SQL with mini-batch (1 s, 10,000 rows) and two-phase (local-global) aggregation, as its
     * performance-tuning page recommends for skew: per resolution a group aggregation per counter and
     * bucket ({@code GROUP BY counter, ts - MOD(ts, size)}) and one per counter for the total, each
     * emitting an upsert stream ({@code toChangelogStream(..., ChangelogMode.upsert())}) whose every row is
     * a Redis write; and, in Kafka mode, a {@code TUMBLE} window aggregation per rollup resolution whose
     * final rows are the closed windows written to Kafka.
     */
    static int sql(StreamExecutionEnvironment env, Source<Event, ?, ?> source, Outputs out) {
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        References.tuneSql(tEnv);
        DataStream<Row> rows = env.fromSource(
                        source, References.watermarks(), "events", TypeInformation.of(Event.class))
                .filter(e -> !e.isDeadLetter())
                .name("valid")
                .map(e -> Row.of(e.counter, e.delta, e.ts))
                .returns(Types.ROW_NAMED(new String[] {"counter", "delta", "ts"}, Types.STRING, Types.LONG, Types.LONG))
                .name("project");
        Table events = tEnv.fromDataStream(
                rows,
                Schema.newBuilder()
                        .column("counter", DataTypes.STRING())
                        .column("delta", DataTypes.BIGINT())
                        .column("ts", DataTypes.BIGINT())
                        .columnByMetadata("rt", DataTypes.TIMESTAMP_LTZ(3), "rowtime")
                        .watermark("rt", "SOURCE_WATERMARK()")
                        .build());
        tEnv.createTemporaryView("events", events);
        RedisKeys keys = out.keys();
        List<DataStream<CountWrite>> writes = new ArrayList<>();
        List<DataStream<Rollup>> rollups = new ArrayList<>();
        for (Resolution r : Resolution.all()) {
            String bucket = "ts - MOD(ts, " + r.sizeMillis + ")";
            Table sums = tEnv.sqlQuery("SELECT `counter`, " + bucket
                    + " AS bucket, SUM(delta) AS s FROM events GROUP BY `counter`, " + bucket);
            writes.add(upserts(
                            tEnv,
                            sums,
                            Schema.newBuilder()
                                    .column("counter", DataTypes.STRING().notNull())
                                    .column("bucket", DataTypes.BIGINT().notNull())
                                    .column("s", DataTypes.BIGINT())
                                    .primaryKey("counter", "bucket")
                                    .build())
                    .map(row -> new CountWrite(
                            keys.window(row.<String>getFieldAs("counter"), r, row.<Long>getFieldAs("bucket")),
                            row.<Long>getFieldAs("s"),
                            row.<Long>getFieldAs("bucket") + r.sizeMillis + r.ttlMillis))
                    .returns(CountWrite.class)
                    .name("redis-" + r.label));
            if (out.rollups() != null && out.rollupResolutions().contains(r)) {
                Table closed = tEnv.sqlQuery(
                        "SELECT `counter`, window_start, SUM(delta) AS s, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(rt), "
                                + References.sqlInterval(r) + ")) GROUP BY `counter`, window_start, window_end");
                rollups.add(tEnv.toDataStream(closed)
                        .map(row -> {
                            long start = epochMillis(row.getField("window_start"));
                            return new Rollup(
                                    row.<String>getFieldAs("counter"),
                                    r.label,
                                    start,
                                    start + r.sizeMillis,
                                    row.<Long>getFieldAs("s"),
                                    row.<Long>getFieldAs("n"),
                                    null,
                                    0);
                        })
                        .returns(Rollup.class)
                        .name("rollup-" + r.label));
            }
        }
        Table totals = tEnv.sqlQuery("SELECT `counter`, SUM(delta) AS s FROM events GROUP BY `counter`");
        writes.add(upserts(
                        tEnv,
                        totals,
                        Schema.newBuilder()
                                .column("counter", DataTypes.STRING().notNull())
                                .column("s", DataTypes.BIGINT())
                                .primaryKey("counter")
                                .build())
                .map(row -> new CountWrite(keys.total(row.<String>getFieldAs("counter")), row.<Long>getFieldAs("s"), 0))
                .returns(CountWrite.class)
                .name("redis-total"));
        return sink(env, writes, rollups, out);
    }

    /** The inserts and updates of {@code table} as an upsert stream (deletes, which SUM over inserts never makes, dropped). */
    private static DataStream<Row> upserts(StreamTableEnvironment tEnv, Table table, Schema schema) {
        return tEnv.toChangelogStream(table, schema, ChangelogMode.upsert())
                .filter(row -> row.getKind() != RowKind.DELETE)
                .name("upserts");
    }

    static long epochMillis(Object time) {
        if (time instanceof Instant i) return i.toEpochMilli();
        if (time instanceof LocalDateTime t) return t.toInstant(ZoneOffset.UTC).toEpochMilli();
        throw new IllegalArgumentException("not a time: " + time);
    }

    // ------------------------------------------------------------------ outputs

    private static int sink(
            StreamExecutionEnvironment env,
            List<DataStream<CountWrite>> writes,
            List<DataStream<Rollup>> rollups,
            Outputs out) {
        DataStream<CountWrite> all = writes.get(0);
        for (int i = 1; i < writes.size(); i++) all = all.union(writes.get(i));
        all.sinkTo(new StampingSink<>(new PipelinedSetSink(out.redisHost(), out.redisPort())))
                .name("redis");
        if (!rollups.isEmpty()) {
            DataStream<Rollup> r = rollups.get(0);
            for (int i = 1; i < rollups.size(); i++) r = r.union(rollups.get(i));
            r.sinkTo(out.rollups()).name("rollups");
        }
        return env.getParallelism();
    }
}
