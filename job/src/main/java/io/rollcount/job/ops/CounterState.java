package io.rollcount.job.ops;

import io.rollcount.job.model.HandSerializedTypeInfo;
import io.rollcount.job.model.HandSerializer;
import io.rollcount.job.model.Resolution;
import java.io.IOException;
import java.lang.reflect.Type;
import java.util.Arrays;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Everything the job keeps for one counter: the all-time total and the windows that may still change
 * (open, or closed but within the allowed lateness), as parallel primitive arrays of which the first
 * {@link #size} entries are slots. One RocksDB value per counter ({@link Serializer}), read when the
 * counter is first needed and written back at checkpoints or on eviction ({@link CounterStore} keeps
 * the counters in use on the heap): a counter that gets an event every few seconds holds about 20 slots
 * (13 of 5 s, 2 of each coarser resolution), a quiet one 5 to 10, each 30 bytes.
 */
@TypeInfo(CounterState.Info.Factory.class)
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
    /**
     * Unused (users are emitted as they arrive); a field still, so that state written by Flink's POJO serializer
     * (before {@link Serializer}) can be read for its migration.
     */
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

    /**
     * The bytes of a counter's state: a byte of flags (1 {@link #negative}, 2 {@link #totalDirty}, 4
     * {@link #usersDirty}), {@link #total}, {@link #totalEvents} and {@link #nextTimer} (int64 each), {@link #size}
     * (int32), then per slot its resolution (byte), start, sum and events (int64), revision (int32) and flags
     * (byte): 29 + 30 bytes per slot. Only the slots are written, not the arrays' spare room. State written by
     * Flink's POJO serializer (earlier versions) is migrated on restore: {@link Snapshot} reports it compatible
     * after migration, so the state backend reads it with that serializer and writes it with this one.
     */
    public static final class Serializer extends HandSerializer<CounterState> {
        private static final long serialVersionUID = 1L;
        public static final Serializer INSTANCE = new Serializer();

        private static final int NEGATIVE_TOTAL = 1;
        private static final int TOTAL_DIRTY = 2;
        private static final int USERS_DIRTY = 4;

        @Override
        public boolean isImmutableType() {
            return false;
        }

        @Override
        public CounterState createInstance() {
            return new CounterState();
        }

        @Override
        public CounterState copy(CounterState from) {
            return from.copy();
        }

        @Override
        public void serialize(CounterState c, DataOutputView out) throws IOException {
            out.writeByte((c.negative ? NEGATIVE_TOTAL : 0)
                    | (c.totalDirty ? TOTAL_DIRTY : 0)
                    | (c.usersDirty ? USERS_DIRTY : 0));
            out.writeLong(c.total);
            out.writeLong(c.totalEvents);
            out.writeLong(c.nextTimer);
            out.writeInt(c.size);
            for (int i = 0; i < c.size; i++) {
                out.writeByte(c.res[i]);
                out.writeLong(c.start[i]);
                out.writeLong(c.sum[i]);
                out.writeLong(c.events[i]);
                out.writeInt(c.revision[i]);
                out.writeByte(c.flags[i]);
            }
        }

        @Override
        public CounterState deserialize(DataInputView in) throws IOException {
            CounterState c = new CounterState();
            int bits = in.readByte();
            c.negative = (bits & NEGATIVE_TOTAL) != 0;
            c.totalDirty = (bits & TOTAL_DIRTY) != 0;
            c.usersDirty = (bits & USERS_DIRTY) != 0;
            c.total = in.readLong();
            c.totalEvents = in.readLong();
            c.nextTimer = in.readLong();
            int n = in.readInt();
            if (n < 0) throw new IOException("corrupt counter state: " + n + " slots");
            c.size = n;
            c.res = new byte[n];
            c.start = new long[n];
            c.sum = new long[n];
            c.events = new long[n];
            c.revision = new int[n];
            c.flags = new byte[n];
            for (int i = 0; i < n; i++) {
                c.res[i] = in.readByte();
                c.start[i] = in.readLong();
                c.sum[i] = in.readLong();
                c.events[i] = in.readLong();
                c.revision[i] = in.readInt();
                c.flags[i] = in.readByte();
            }
            return c;
        }

        @Override
        public TypeSerializerSnapshot<CounterState> snapshotConfiguration() {
            return new Snapshot();
        }

        /** No configuration; state of Flink's POJO serializer (earlier versions) is migrated. */
        public static final class Snapshot extends SimpleTypeSerializerSnapshot<CounterState> {
            public Snapshot() {
                super(() -> INSTANCE);
            }

            @Override
            public TypeSerializerSchemaCompatibility<CounterState> resolveSchemaCompatibility(
                    TypeSerializerSnapshot<CounterState> old) {
                if (old instanceof PojoSerializerSnapshot)
                    return TypeSerializerSchemaCompatibility.compatibleAfterMigration();
                return super.resolveSchemaCompatibility(old);
            }
        }
    }

    /** Flink's type information for {@link CounterState} ({@link HandSerializedTypeInfo}): its {@link Serializer}. */
    public static final class Info extends HandSerializedTypeInfo<CounterState> {
        private static final long serialVersionUID = 1L;
        public static final Info INSTANCE = new Info();

        /** What the {@code @TypeInfo} annotation names. */
        public static final class Factory extends TypeInfoFactory<CounterState> {
            @Override
            public TypeInformation<CounterState> createTypeInfo(
                    Type t, Map<String, TypeInformation<?>> genericParameters) {
                return INSTANCE;
            }
        }

        private Info() {
            super(CounterState.class, Serializer.INSTANCE);
        }
    }
}
