package io.rollcount.job;

import java.util.Collection;
import org.apache.flink.state.rocksdb.RocksDBOptionsFactory;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;

/**
 * RocksDB's whole-key Bloom filter in every memtable, on top of the options Flink configures
 * ({@code state.backend.rocksdb.options-factory}, set by {@link FlinkSettings} where the cluster sets none).
 *
 * <p>Deduplication looks up, for almost every event, a {@code (counter, event_id)} it has never seen. The SST
 * files' Bloom filters already answer such a get without reading a block; a memtable has no filter by
 * default, so each get walks its skip list down to the missing key, a cache miss per level (without this filter
 * the largest share of the deduplication thread's CPU in a profile of {@code bench peers}). With it, a get of a
 * key a memtable does not hold mostly costs a few hashes there. Exact: a Bloom filter has no false negatives, and a false
 * positive only walks the skip list as before.
 *
 * <p>Size: {@value #SIZE_RATIO} of the memtable's configured size (RocksDB's
 * {@code memtable_prefix_bloom_size_ratio}), 330 KB for a 64 MB memtable, allocated with each memtable of every
 * column family (the options have no name to choose by) and counted against the write buffers Flink sizes from
 * managed memory. That is about 4 bits per entry in a full memtable of deduplication's pairs (some 15% false
 * positives), more while it fills. A larger filter costs more than it saves: at 0.1 {@code bench peers} runs
 * several times slower.
 */
public final class MemtableBloomFilters implements RocksDBOptionsFactory {
    private static final long serialVersionUID = 1L;

    /** The filter's size as a share of the memtable's (RocksDB's {@code memtable_prefix_bloom_size_ratio}). */
    static final double SIZE_RATIO = 0.005;

    @Override
    public DBOptions createDBOptions(DBOptions currentOptions, Collection<AutoCloseable> handlesToClose) {
        return currentOptions;
    }

    @Override
    public ColumnFamilyOptions createColumnOptions(
            ColumnFamilyOptions currentOptions, Collection<AutoCloseable> handlesToClose) {
        return currentOptions.setMemtablePrefixBloomSizeRatio(SIZE_RATIO).setMemtableWholeKeyFiltering(true);
    }
}
