package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Event;
import io.rollcount.job.ops.DropDuplicates;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The RocksDB the job's settings open has a whole-key Bloom filter in its memtables ({@link MemtableBloomFilters})
 * and keeps the SST files' partitioned Bloom filters Flink's own options set: read from the OPTIONS file RocksDB
 * writes for the deduplication's state.
 */
class MemtableBloomFiltersTest {
    @Test
    void theJobsRocksDbHasMemtableAndSstBloomFilters(@TempDir Path dir) throws Exception {
        Configuration conf = FlinkSettings.configuration(JobSettingsTest.parse());
        EmbeddedRocksDBStateBackend backend = new EmbeddedRocksDBStateBackend()
                .configure(conf, Thread.currentThread().getContextClassLoader());
        backend.setDbStoragePath(dir.toString());
        try (var h = new KeyedOneInputStreamOperatorTestHarness<>(
                DropDuplicates.operator(new DropDuplicates(60_000)), DropDuplicates::keyOf, Types.STRING)) {
            h.setStateBackend(backend);
            h.open();
            Event e = new Event();
            e.counter = "a";
            e.eventId = "1";
            e.ts = 1_000;
            h.processElement(e, e.ts);
            String options = optionsFile(dir);
            String dedup = columnFamily(options, "id-overflow");
            assertThat(dedup).contains("memtable_whole_key_filtering=true");
            assertThat(dedup).containsPattern("memtable_prefix_bloom_size_ratio=0\\.0050*\\b");
            assertThat(dedup).containsPattern("filter_policy=bloomfilter");
            assertThat(dedup).contains("partition_filters=true");
            // the job's compression reaches RocksDB (FlinkSettings.COMPRESSION)
            assertThat(dedup).contains("compression_per_level=kLZ4Compression");
        }
    }

    /** The newest OPTIONS file under {@code dir}. */
    private static String optionsFile(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            List<Path> options = files.filter(p -> p.getFileName().toString().startsWith("OPTIONS-"))
                    .sorted()
                    .toList();
            assertThat(options).as("RocksDB's OPTIONS files under %s", dir).isNotEmpty();
            return Files.readString(options.get(options.size() - 1), StandardCharsets.UTF_8);
        }
    }

    /** The options of one column family and its table: from its [CFOptions "name"] to the next column family's. */
    private static String columnFamily(String options, String name) {
        int from = options.indexOf("[CFOptions \"" + name + "\"]");
        assertThat(from).as("column family %s in the OPTIONS file", name).isNotNegative();
        int next = options.indexOf("[CFOptions \"", from + 1);
        return next < 0 ? options.substring(from) : options.substring(from, next);
    }
}
