package io.rollcount.job.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.TopList;
import io.rollcount.job.pipeline.TrendingIT;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.resps.Tuple;

/**
 * {@code counter-trending} from the whole job, read with {@code read_committed}: exactly one record of
 * kind {@code window} per closed 1m/1h/1d window and namespace (byte for byte the exact top 100 the test
 * computes), and records of kind {@code trending} whose latest per namespace is the list Redis holds.
 */
class TrendingTopicIT {
    /** A broker of this class's own, started before its {@code @BeforeAll} methods. */
    @RegisterExtension
    static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    @TempDir
    static Path dir;

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(KafkaTestSupport::miniCluster);

    @Test
    void windowListsExactlyOnceAndTheLatestTrendingListsMatchRedis() throws Exception {
        List<TrendingIT.Ev> events = TrendingIT.generate(30_000, 3);
        Path input = dir.resolve("events.jsonl");
        TrendingIT.write(events, input);
        try (RedisTestSupport redis = new RedisTestSupport()) {
            JobSettings o = JobSettings.builder()
                    .set("--input", input.toString())
                    .set("--redis", redis.url())
                    .set("--redis.key-prefix", redis.prefix)
                    .set("--checkpoint.interval", Duration.ofMillis(500))
                    .set("--trending.half-life", Duration.ofMinutes(10))
                    .set("--kafka.bootstrap", KAFKA.broker().bootstrap())
                    .set("--kafka.transactional-id-prefix", "trending-topic-it")
                    .build();
            JobConnectors.ensureOutputTopics(o);
            StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.getExecutionEnvironment(FlinkSettings.configuration(o));
            env.setParallelism(2);
            Pipeline.build(
                    env,
                    o,
                    JobConnectors.fileSource(o),
                    new Pipeline.Outputs(
                            JobConnectors.redisSink(o),
                            JobConnectors.deadLetterSink(o),
                            0,
                            JobConnectors.rollupsSink(o),
                            JobConnectors.trendingSink(o)));
            env.execute("trending-topic-it");

            List<ConsumerRecord<byte[], byte[]>> records = KafkaTestSupport.readCommitted(
                    KAFKA.broker().adminProperties(), KafkaIO.TRENDING_TOPIC, Map.<TopicPartition, Long>of());
            List<String> windows = new ArrayList<>();
            Map<String, String> latestTrending = new HashMap<>();
            int trendingRecords = 0;
            records.sort((a, b) -> a.partition() != b.partition()
                    ? Integer.compare(a.partition(), b.partition())
                    : Long.compare(a.offset(), b.offset()));
            for (ConsumerRecord<byte[], byte[]> r : records) {
                String key = new String(r.key(), StandardCharsets.UTF_8);
                String value = new String(r.value(), StandardCharsets.UTF_8);
                assertThat(value).startsWith("{\"prefix\":\"" + o.redis.keyPrefix() + "\",\"ns\":\"" + key + "\",");
                assertThat(new String(
                                r.headers().lastHeader(KafkaIO.PREFIX_HEADER).value(), StandardCharsets.UTF_8))
                        .isEqualTo(o.redis.keyPrefix());
                if (value.contains("\"kind\":\"window\"")) {
                    windows.add(value);
                } else {
                    assertThat(value).contains("\"kind\":\"trending\",\"res\":null,\"start\":null,");
                    latestTrending.put(key, value);
                    trendingRecords++;
                }
            }

            // Window lists: exactly once each, exactly the expected bytes.
            List<String> expected = new ArrayList<>();
            for (Map.Entry<String, LinkedHashMap<String, Long>> e :
                    TrendingIT.windowTops(events).entrySet()) {
                String[] parts = e.getKey().split(":");
                Resolution res = Resolution.ofLabel(parts[1]);
                TopList t = new TopList();
                t.ns = parts[0];
                t.kind = TopList.WINDOW;
                t.res = res.label;
                t.start = Long.parseLong(parts[2]) * 1000;
                t.at = t.start + res.sizeMillis - 1;
                t.counters = e.getValue().keySet().toArray(String[]::new);
                t.scores = e.getValue().values().stream()
                        .mapToDouble(Long::doubleValue)
                        .toArray();
                t.estimates = t.scores.clone();
                expected.add(new String(Json.topList(o.redis.keyPrefix(), t), StandardCharsets.UTF_8));
            }
            assertThat(windows).hasSize(expected.size()).containsExactlyInAnyOrderElementsOf(expected);

            // Trending lists: the latest record of each namespace is the list in Redis, at its version.
            assertThat(latestTrending.keySet()).containsExactlyInAnyOrder("post", "video", "user", "tail", "_all");
            Pattern item = Pattern.compile("\\{\"counter\":\"([^\"]+)\",\"score\":([^,]+),\"estimate\":([^}]+)}");
            for (Map.Entry<String, String> e : latestTrending.entrySet()) {
                String ns = e.getKey();
                String at = redis.jedis.get(redis.prefix + ":_v:{" + redis.prefix + ":trending:" + ns + "}");
                assertThat(e.getValue()).contains("\"at\":" + at + ",");
                List<String> counters = new ArrayList<>();
                Matcher m = item.matcher(e.getValue());
                while (m.find()) {
                    counters.add(m.group(1));
                    assertThat(Double.parseDouble(m.group(3)))
                            .as("estimate <= score")
                            .isLessThanOrEqualTo(Double.parseDouble(m.group(2)));
                }
                List<String> inRedis = redis.jedis.zrevrangeWithScores(redis.prefix + ":trending:" + ns, 0, -1).stream()
                        .map(Tuple::getElement)
                        .toList();
                assertThat(counters).as("trending list of " + ns).isEqualTo(inRedis);
            }
            System.out.printf(
                    "TrendingTopicIT: %d window lists, %d trending lists committed%n", windows.size(), trendingRecords);
        }
    }
}
