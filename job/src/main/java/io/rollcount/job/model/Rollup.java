package io.rollcount.job.model;

import java.io.IOException;
import java.lang.reflect.Type;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.types.StringValue;

/**
 * A window result for the {@code counter-rollups} topic (contract section 4): written when the watermark
 * passes the window's end (revision 0), and again with revision 1, 2, ... each time a late event within
 * the allowed lateness changes the closed window. Not changed once emitted: its {@link Serializer} passes it on
 * between chained operators without a copy.
 */
@TypeInfo(Rollup.Info.Factory.class)
public class Rollup {
    public String counter;
    /** Resolution name: 5s, 1m, 5m, 1h or 1d. */
    public String res;
    /** Window start and end, epoch milliseconds. */
    public long start;

    public long end;
    public long sum;
    public long events;
    /** Distinct users (HyperLogLog estimate) for 1h and 1d windows with users; null otherwise. */
    public Long uniques;

    public int revision;

    public Rollup() {}

    public Rollup(String counter, String res, long start, long end, long sum, long events, Long uniques, int revision) {
        this.counter = counter;
        this.res = res;
        this.start = start;
        this.end = end;
        this.sum = sum;
        this.events = events;
        this.uniques = uniques;
        this.revision = revision;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof Rollup r)) return false;
        return start == r.start
                && end == r.end
                && sum == r.sum
                && events == r.events
                && revision == r.revision
                && Objects.equals(counter, r.counter)
                && Objects.equals(res, r.res)
                && Objects.equals(uniques, r.uniques);
    }

    @Override
    public int hashCode() {
        return Objects.hash(counter, res, start, revision);
    }

    @Override
    public String toString() {
        return "Rollup{" + counter + " " + res + "@" + start + " sum=" + sum + " events=" + events + " uniques="
                + uniques + " rev=" + revision + "}";
    }

    /** Flink's serializer of {@link Rollup}: the strings by {@link StringValue}, the longs, {@link #uniques} as a presence byte and a long, the revision. */
    public static final class Serializer extends ImmutableRecordSerializer<Rollup> {
        private static final long serialVersionUID = 1L;
        public static final Serializer INSTANCE = new Serializer();

        @Override
        public Rollup createInstance() {
            return new Rollup();
        }

        @Override
        public void serialize(Rollup r, DataOutputView out) throws IOException {
            StringValue.writeString(r.counter, out);
            StringValue.writeString(r.res, out);
            out.writeLong(r.start);
            out.writeLong(r.end);
            out.writeLong(r.sum);
            out.writeLong(r.events);
            out.writeBoolean(r.uniques != null);
            if (r.uniques != null) out.writeLong(r.uniques);
            out.writeInt(r.revision);
        }

        @Override
        public Rollup deserialize(DataInputView in) throws IOException {
            String counter = StringValue.readString(in);
            String res = StringValue.readString(in);
            long start = in.readLong();
            long end = in.readLong();
            long sum = in.readLong();
            long events = in.readLong();
            Long uniques = in.readBoolean() ? in.readLong() : null;
            return new Rollup(counter, res, start, end, sum, events, uniques, in.readInt());
        }

        @Override
        public TypeSerializerSnapshot<Rollup> snapshotConfiguration() {
            return new Snapshot();
        }

        /** No configuration: the snapshot only names the serializer. */
        public static final class Snapshot extends SimpleTypeSerializerSnapshot<Rollup> {
            public Snapshot() {
                super(() -> INSTANCE);
            }
        }
    }

    /** Flink's type information for {@link Rollup} ({@link HandSerializedTypeInfo}): its {@link Serializer}. */
    public static final class Info extends HandSerializedTypeInfo<Rollup> {
        private static final long serialVersionUID = 1L;
        public static final Info INSTANCE = new Info();

        /** What the {@code @TypeInfo} annotation names. */
        public static final class Factory extends TypeInfoFactory<Rollup> {
            @Override
            public TypeInformation<Rollup> createTypeInfo(Type t, Map<String, TypeInformation<?>> genericParameters) {
                return INSTANCE;
            }
        }

        private Info() {
            super(Rollup.class, Serializer.INSTANCE);
        }
    }
}
