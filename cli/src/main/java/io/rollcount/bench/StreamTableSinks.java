package io.rollcount.bench;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSink;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DataStreamSinkProvider;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;

/**
 * A SQL table connector ({@code 'connector' = 'rollcount-bench-stream'}) whose rows go to DataStream sinks the
 * benchmark registers under a name ({@code 'name' = '...'}), so that one {@code StatementSet} can write the SQL
 * peer's results to the same Redis writer and Kafka sink as the other variants. A table with a primary key takes
 * an upsert stream (inserts, updates after, deletes); one without, inserts only. Discovered by Flink through
 * {@code META-INF/services/org.apache.flink.table.factories.Factory}; the job is planned in this JVM, so the
 * registry is only read while the statement set is planned.
 */
public final class StreamTableSinks implements DynamicTableSinkFactory {
    static final String IDENTIFIER = "rollcount-bench-stream";
    static final ConfigOption<String> NAME =
            ConfigOptions.key("name").stringType().noDefaultValue().withDescription("the registered sink's name");

    /** What a table's rows become: the operators that consume them and their sink. */
    interface Body {
        DataStreamSink<?> consume(DataStream<RowData> rows);
    }

    private static final Map<String, Body> BODIES = new ConcurrentHashMap<>();

    /** Makes {@code body} the sink of the tables whose option {@code name} is {@code name}. */
    static void register(String name, Body body) {
        BODIES.put(name, body);
    }

    static void unregister(String name) {
        BODIES.remove(name);
    }

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(NAME);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of();
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        String name = helper.getOptions().get(NAME);
        Body body = BODIES.get(name);
        if (body == null) throw new IllegalStateException("no sink registered as '" + name + "'");
        boolean keyed =
                context.getCatalogTable().getResolvedSchema().getPrimaryKey().isPresent();
        return new Table(name, keyed, body);
    }

    private record Table(String name, boolean keyed, Body body) implements DynamicTableSink {
        @Override
        public ChangelogMode getChangelogMode(ChangelogMode requested) {
            return keyed ? ChangelogMode.upsert() : ChangelogMode.insertOnly();
        }

        @Override
        public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
            return (DataStreamSinkProvider) (providerContext, rows) -> body.consume(rows);
        }

        @Override
        public DynamicTableSink copy() {
            return new Table(name, keyed, body);
        }

        @Override
        public String asSummaryString() {
            return IDENTIFIER + ":" + name;
        }
    }
}
