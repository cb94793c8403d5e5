package io.rollcount.bench;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.redis.RedisKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamStatementSet;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

/**
 * {@code sql-exact} of {@code bench peers}: the work of ours without unique users and lists, in Flink SQL as a
 * competent engineer writes it. The first row per ({@code counter}, {@code event_id}) by
 * {@code ROW_NUMBER() OVER (PARTITION BY counter, event_id ORDER BY proctime) = 1}, its state kept for the
 * dedup horizon ({@code table.exec.state.ttl}); then, in one {@code StatementSet} over the deduplicated rows,
 * with mini-batch (1 s, 10,000 rows) and two-phase aggregation: per resolution a group aggregation per counter
 * and bucket whose upserts are written to Redis ({@code SET key value PXAT <window end + retention>}, its state
 * kept for the horizon too by a {@code STATE_TTL} hint), one per counter for the total (kept for ever), and a
 * {@code TUMBLE} window aggregation per rollup resolution (1m, 1h, 1d) whose final rows go to
 * {@code counter-rollups} through the exactly-once Kafka sink.
 *
 * <p>The deduplication is planned on its own, with mini-batch off: Flink 2.2 marks a first-row deduplication
 * insert-only only without mini-batch (with it, the aggregations after it would take retractions), so it is
 * translated first ({@code toDataStream}, insert-only) and the statement set reads its rows, with their event
 * time and watermarks, as its one shared source.
 */
final class SqlPeer {
    private SqlPeer() {}

    /** Where the peer writes: Redis (key layout of {@code keys}) and the {@code counter-rollups} sink. */
    record Outputs(String redisHost, int redisPort, RedisKeys keys, Sink<Rollup> rollups) {}

    /** The resolutions whose closed windows go to {@code counter-rollups}, as ours by default. */
    static final List<Resolution> ROLLUPS = List.of(Resolution.M1, Resolution.H1, Resolution.D1);

    /**
     * Builds the peer in {@code env}; returns its plan ({@code EXPLAIN} of the statement set) and the number of
     * stamping sink subtasks that will report their end.
     */
    static Built build(StreamExecutionEnvironment env, Source<Event, ?, ?> source, Outputs out, Duration horizon) {
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        References.tuneSql(tEnv);
        DataStream<Row> rows = env.fromSource(
                        source, References.watermarks(), "events", TypeInformation.of(Event.class))
                .filter(e -> !e.isDeadLetter())
                .name("valid")
                .map(e -> Row.of(e.counter, e.eventId, e.delta, e.ts))
                .returns(Types.ROW_NAMED(
                        new String[] {"counter", "event_id", "delta", "ts"},
                        Types.STRING,
                        Types.STRING,
                        Types.LONG,
                        Types.LONG))
                .name("project");
        tEnv.createTemporaryView(
                "events",
                tEnv.fromDataStream(
                        rows,
                        Schema.newBuilder()
                                .column("counter", DataTypes.STRING())
                                .column("event_id", DataTypes.STRING())
                                .column("delta", DataTypes.BIGINT())
                                .column("ts", DataTypes.BIGINT())
                                .columnByMetadata("rt", DataTypes.TIMESTAMP_LTZ(3), "rowtime")
                                .columnByExpression("pt", "PROCTIME()")
                                .watermark("rt", "SOURCE_WATERMARK()")
                                .build()));
        String ttl = horizon.toMillis() + " ms";
        tEnv.getConfig().set("table.exec.mini-batch.enabled", "false");
        tEnv.getConfig().set("table.exec.state.ttl", ttl);
        Table first = tEnv.sqlQuery(DEDUP);
        String dedupPlan = first.explain();
        DataStream<Row> deduped = tEnv.toDataStream(first); // planned now: insert-only
        tEnv.getConfig().set("table.exec.mini-batch.enabled", "true");
        tEnv.getConfig().set("table.exec.state.ttl", "0 ms"); // totals are kept for ever
        tEnv.createTemporaryView(
                "deduped",
                tEnv.fromDataStream(
                        deduped,
                        Schema.newBuilder()
                                .column("counter", DataTypes.STRING())
                                .column("delta", DataTypes.BIGINT())
                                .column("ts", DataTypes.BIGINT())
                                .column("rt", DataTypes.TIMESTAMP_LTZ(3))
                                .columnByMetadata("et", DataTypes.TIMESTAMP_LTZ(3), "rowtime")
                                .watermark("et", "SOURCE_WATERMARK()")
                                .build()));
        Built built = statements(tEnv, out, ttl, env.getParallelism());
        return new Built(dedupPlan + "\n" + built.plan(), built.stampingSinks());
    }

    static final String DEDUP = "SELECT `counter`, delta, ts, rt FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY"
            + " `counter`, event_id ORDER BY pt) AS rn FROM events) WHERE rn = 1";

    /** The peer's plan and its number of stamping sink subtasks. */
    record Built(String plan, int stampingSinks) {}

    private static Built statements(StreamTableEnvironment tEnv, Outputs out, String ttl, int parallelism) {
        String run = UUID.randomUUID().toString().substring(0, 8);
        List<String> names = new ArrayList<>();
        StreamStatementSet set = tEnv.createStatementSet();
        try {
            int redisSinks = redisStatements(tEnv, set, names, out, ttl, run);
            rollupsStatement(tEnv, set, names, out, run);
            String plan = set.explain();
            set.attachAsDataStream();
            return new Built(plan, redisSinks * parallelism);
        } finally {
            names.forEach(StreamTableSinks::unregister);
        }
    }

    /**
     * The inserts of the five resolutions' bucket sums and of the totals into Redis tables, each table's upserts to
     * a Redis writer of its own; returns their number.
     */
    private static int redisStatements(
            StreamTableEnvironment tEnv,
            StreamStatementSet set,
            List<String> names,
            Outputs out,
            String ttl,
            String run) {
        RedisKeys keys = out.keys();
        int redisSinks = 0;
        for (Resolution r : Resolution.all()) {
            String name = "redis-" + r.label + "-" + run;
            long size = r.sizeMillis;
            long ttlMillis = r.ttlMillis;
            register(
                    names,
                    name,
                    rows -> redis(rows, out, "redis-" + r.label, row -> {
                        long bucket = row.getLong(1);
                        return new CountWrite(
                                keys.window(row.getString(0).toString(), r, bucket),
                                row.getLong(2),
                                bucket + size + ttlMillis);
                    }));
            table(
                    tEnv,
                    name,
                    "`counter` STRING, bucket BIGINT, s BIGINT, PRIMARY KEY (`counter`, bucket) NOT ENFORCED");
            String bucket = "ts - MOD(ts, " + size + ")";
            set.addInsertSql("INSERT INTO `" + name + "` SELECT /*+ STATE_TTL('deduped' = '" + ttl + "') */ `counter`, "
                    + bucket + ", SUM(delta) FROM deduped GROUP BY `counter`, " + bucket);
            redisSinks++;
        }
        String totals = "redis-total-" + run;
        register(
                names,
                totals,
                rows -> redis(
                        rows,
                        out,
                        "redis-total",
                        row -> new CountWrite(keys.total(row.getString(0).toString()), row.getLong(1), 0)));
        table(tEnv, totals, "`counter` STRING, s BIGINT, PRIMARY KEY (`counter`) NOT ENFORCED");
        set.addInsertSql("INSERT INTO `" + totals + "` SELECT `counter`, SUM(delta) FROM deduped GROUP BY `counter`");
        return redisSinks + 1;
    }

    /** The insert of the closed 1m, 1h and 1d windows, together, into the {@code counter-rollups} table. */
    private static void rollupsStatement(
            StreamTableEnvironment tEnv, StreamStatementSet set, List<String> names, Outputs out, String run) {
        String rollups = "rollups-" + run;
        register(
                names,
                rollups,
                rows -> rows.map(SqlPeer::rollup)
                        .returns(Rollup.class)
                        .name("to-rollup")
                        .sinkTo(out.rollups())
                        .name("rollups"));
        table(tEnv, rollups, "`counter` STRING, res STRING, window_start TIMESTAMP_LTZ(3), s BIGINT, n BIGINT");
        List<String> closed = new ArrayList<>();
        for (Resolution r : ROLLUPS) {
            closed.add("SELECT `counter`, '" + r.label + "', window_start, SUM(delta), COUNT(*) FROM TABLE(TUMBLE(TABLE"
                    + " deduped, DESCRIPTOR(et), " + References.sqlInterval(r) + ")) GROUP BY `counter`, window_start,"
                    + " window_end");
        }
        set.addInsertSql("INSERT INTO `" + rollups + "` " + String.join(" UNION ALL ", closed));
    }

    /** A closed window's row as a {@code counter-rollups} record ({@code uniques} null: the peer has none). */
    private static Rollup rollup(RowData row) {
        Resolution r = Resolution.ofLabel(row.getString(1).toString());
        long start = row.getTimestamp(2, 3).getMillisecond();
        return new Rollup(
                row.getString(0).toString(),
                r.label,
                start,
                start + r.sizeMillis,
                row.getLong(3),
                row.getLong(4),
                null,
                0);
    }

    private static void register(List<String> names, String name, StreamTableSinks.Body body) {
        names.add(name);
        StreamTableSinks.register(name, body);
    }

    private static void table(StreamTableEnvironment tEnv, String name, String columns) {
        tEnv.executeSql("CREATE TEMPORARY TABLE `" + name + "` (" + columns + ") WITH ('connector' = '"
                + StreamTableSinks.IDENTIFIER + "', 'name' = '" + name + "')");
    }

    /** A row of an upsert table as a Redis write. */
    private interface ToWrite extends java.io.Serializable {
        CountWrite of(RowData row);
    }

    /** The upserts of a table (deletes, which sums over inserts never make, dropped) to a pipelined Redis writer. */
    private static org.apache.flink.streaming.api.datastream.DataStreamSink<?> redis(
            DataStream<RowData> rows, Outputs out, String name, ToWrite toWrite) {
        return rows.filter(row -> row.getRowKind() != RowKind.DELETE)
                .name("upserts")
                .map(toWrite::of)
                .returns(CountWrite.class)
                .name(name)
                .sinkTo(new StampingSink<>(new PipelinedSetSink(out.redisHost(), out.redisPort())))
                .name(name);
    }
}
