package io.rollcount.job.ops;

import io.rollcount.job.model.Resolution;
import java.util.Arrays;

/**
 * Everything the job keeps for one counter: the all-time total and the windows that may still change
 * (open, or closed but within the allowed lateness), as parallel primitive arrays so that Flink's POJO
 * serializer writes them compactly and without Kryo. One RocksDB value per counter, read when the
 * counter is first needed and written back at checkpoints or on eviction ({@link CounterStore} keeps
 * the counters in use on the heap): a counter that gets an event every few seconds holds about 20 slots
 * (13 of 5 s, 2 of each coarser resolution), a quiet one 5 to 10, each 30 bytes.
 */
public class CounterState {
    /** Slot flag: changed since the window was last emitted. */
    public static final byte DIRTY = 1;
    /** Slot flag: revision 0 emitted (the watermark passed the window's end). */
    public static final byte CLOSED = 2;
    /** Slot flag: changed after closing; the next revision is due. */
    public static final byte REVISE = 4;
    /** Slot flag: a negative delta went in, so the value may go down. */
    public static final byte NEGATIVE = 8;
    /** Slot flag (1h and 1d): the window has a unique-users sketch. */
    public static final byte HAS_USERS = 32;

    public long total;
    public long totalEvents;
    public boolean negative;
    /** The total changed since it was last emitted. */
    public boolean totalDirty;
    /** Unused (users are emitted as they arrive); a field still, so that the checkpointed POJO keeps its layout. */
    public boolean usersDirty;
    /** The counter's earliest entry in the due index ({@link DueIndex}; Long.MAX_VALUE: none). */
    public long nextTimer = Long.MAX_VALUE;

    public int size;
    public byte[] res = new byte[0];
    public long[] start = new long[0];
    public long[] sum = new long[0];
    public long[] events = new long[0];
    public int[] revision = new int[0];
    public byte[] flags = new byte[0];

    public CounterState() {}

    public int find(Resolution r, long windowStart) {
        byte o = (byte) r.ordinal();
        for (int i = 0; i < size; i++) {
            if (start[i] == windowStart && res[i] == o) return i;
        }
        return -1;
    }

    public int add(Resolution r, long windowStart) {
        if (size == start.length) grow();
        int i = size++;
        res[i] = (byte) r.ordinal();
        start[i] = windowStart;
        sum[i] = 0;
        events[i] = 0;
        revision[i] = 0;
        flags[i] = 0;
        return i;
    }

    /** A deep copy. */
    public CounterState copy() {
        CounterState c = new CounterState();
        c.total = total;
        c.totalEvents = totalEvents;
        c.negative = negative;
        c.totalDirty = totalDirty;
        c.usersDirty = usersDirty;
        c.nextTimer = nextTimer;
        c.size = size;
        c.res = res.clone();
        c.start = start.clone();
        c.sum = sum.clone();
        c.events = events.clone();
        c.revision = revision.clone();
        c.flags = flags.clone();
        return c;
    }

    public Resolution resolution(int i) {
        return Resolution.all()[res[i]];
    }

    public long end(int i) {
        return start[i] + resolution(i).sizeMillis;
    }

    public boolean has(int i, byte flag) {
        return (flags[i] & flag) != 0;
    }

    public void set(int i, byte flag) {
        flags[i] |= flag;
    }

    public void clear(int i, byte flag) {
        flags[i] &= (byte) ~flag;
    }

    /** Removes slot {@code i} by moving the last slot into its place. */
    public void remove(int i) {
        int last = --size;
        res[i] = res[last];
        start[i] = start[last];
        sum[i] = sum[last];
        events[i] = events[last];
        revision[i] = revision[last];
        flags[i] = flags[last];
        if (size * 4 < start.length && start.length > 8) shrink();
    }

    private void grow() {
        int n = Math.max(8, start.length * 2);
        resize(n);
    }

    private void shrink() {
        resize(Math.max(8, start.length / 2));
    }

    private void resize(int n) {
        res = Arrays.copyOf(res, n);
        start = Arrays.copyOf(start, n);
        sum = Arrays.copyOf(sum, n);
        events = Arrays.copyOf(events, n);
        revision = Arrays.copyOf(revision, n);
        flags = Arrays.copyOf(flags, n);
    }
}
