package io.rollcount.job.ops;

import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;

/**
 * The counters of one {@link CountPerCounter} subtask kept on the heap, least recently used first, within
 * a budget of bytes (each entry weighed by {@link CachedCounter#weigh}). The owner writes an evicted
 * entry back to keyed state; eviction is its call ({@link #pollEldestOverBudget}), never a side effect.
 */
final class CounterCache {
    private final LinkedHashMap<String, CachedCounter> entries = new LinkedHashMap<>(1 << 12, 0.75f, true);
    private final long budgetBytes;
    private long bytes;

    CounterCache(long budgetBytes) {
        if (budgetBytes <= 0)
            throw new IllegalArgumentException("counter cache budget must be > 0 bytes, got " + budgetBytes);
        this.budgetBytes = budgetBytes;
    }

    /** The entry of {@code id}, now the most recently used, or null. */
    CachedCounter get(String id) {
        return entries.get(id);
    }

    void put(CachedCounter c) {
        c.weight = c.weigh();
        bytes += c.weight;
        entries.put(c.id, c);
    }

    /** Counts the entry's current weight after it changed. */
    void reweigh(CachedCounter c) {
        long w = c.weigh();
        bytes += w - c.weight;
        c.weight = w;
    }

    /** Removes and returns the least recently used entry if the cache is over budget and it is not {@code keep}. */
    CachedCounter pollEldestOverBudget(CachedCounter keep) {
        if (bytes <= budgetBytes) return null;
        Iterator<CachedCounter> it = entries.values().iterator();
        CachedCounter eldest = it.next();
        if (eldest == keep) return null;
        it.remove();
        bytes -= eldest.weight;
        return eldest;
    }

    Collection<CachedCounter> all() {
        return entries.values();
    }

    int size() {
        return entries.size();
    }

    long bytes() {
        return bytes;
    }
}
