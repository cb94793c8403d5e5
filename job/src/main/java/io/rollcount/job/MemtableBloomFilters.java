package io.rollcount.job;

import java.util.Collection;
import org.apache.flink.state.rocksdb.RocksDBOptionsFactory;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;

/**
 * RocksDB's whole-key Bloom filter in every memtable, on top of the options Flink configures
 * ({@code state.backend.rocksdb.options-factory}, set by {@link FlinkSettings}).
 *
 * <p>Deduplication looks up, for almost every event, a {@code (counter, event_id)} it has never seen. The SST
 * files' Bloom filters already answer such a get without reading a block; the memtables had no filter, so each
 * get walked the memtable's skip list down to the missing key, a cache miss per level (the largest share of the
 * deduplication thread's CPU in {@code bench peers}). With this filter a get of a key a memtable does not hold
 * costs a few hashes there. Exact: a Bloom filter has no false negatives, and a false positive (about 1% at
 * this size) only walks the skip list as before.
 *
 * <p>Memory: {@value #SIZE_RATIO} of each memtable's size, allocated with the memtable and counted against the
 * write buffers Flink sizes from managed memory. Every column family gets it (the options have no name to
 * choose by); the counting state's gets of counters not in a memtable gain as well.
 */
public final class MemtableBloomFilters implements RocksDBOptionsFactory {
    private static final long serialVersionUID = 1L;

    /** The filter's size as a share of the memtable's (RocksDB's {@code memtable_prefix_bloom_size_ratio}). */
    static final double SIZE_RATIO = 0.1;

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
