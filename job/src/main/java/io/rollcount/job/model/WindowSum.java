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
 * The sum of one counter in one closed window (1m, 1h, 1d), for the window top-K per namespace. Not changed once
 * emitted: its {@link Serializer} passes it on between chained operators without a copy.
 */
@TypeInfo(WindowSum.Info.Factory.class)
public class WindowSum {
    public String counter;
    public String res;
    public long start;
    public long sum;

    public WindowSum() {}

    public WindowSum(String counter, String res, long start, long sum) {
        this.counter = counter;
        this.res = res;
        this.start = start;
        this.sum = sum;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof WindowSum w
                && start == w.start
                && sum == w.sum
                && Objects.equals(counter, w.counter)
                && Objects.equals(res, w.res);
    }

    @Override
    public int hashCode() {
        return Objects.hash(counter, res, start);
    }

    @Override
    public String toString() {
        return "WindowSum{" + counter + " " + res + "@" + start + "=" + sum + "}";
    }

    /** Flink's serializer of {@link WindowSum}: the counter and the resolution by {@link StringValue}, the start and the sum. */
    public static final class Serializer extends ImmutableRecordSerializer<WindowSum> {
        private static final long serialVersionUID = 1L;
        public static final Serializer INSTANCE = new Serializer();

        @Override
        public WindowSum createInstance() {
            return new WindowSum();
        }

        @Override
        public void serialize(WindowSum r, DataOutputView out) throws IOException {
            StringValue.writeString(r.counter, out);
            StringValue.writeString(r.res, out);
            out.writeLong(r.start);
            out.writeLong(r.sum);
        }

        @Override
        public WindowSum deserialize(DataInputView in) throws IOException {
            String counter = StringValue.readString(in);
            String res = StringValue.readString(in);
            long start = in.readLong();
            return new WindowSum(counter, res, start, in.readLong());
        }

        @Override
        public TypeSerializerSnapshot<WindowSum> snapshotConfiguration() {
            return new Snapshot();
        }

        /** No configuration: the snapshot only names the serializer. */
        public static final class Snapshot extends SimpleTypeSerializerSnapshot<WindowSum> {
            public Snapshot() {
                super(() -> INSTANCE);
            }
        }
    }

    /** Flink's type information for {@link WindowSum} ({@link HandSerializedTypeInfo}): its {@link Serializer}. */
    public static final class Info extends HandSerializedTypeInfo<WindowSum> {
        private static final long serialVersionUID = 1L;
        public static final Info INSTANCE = new Info();

        /** What the {@code @TypeInfo} annotation names. */
        public static final class Factory extends TypeInfoFactory<WindowSum> {
            @Override
            public TypeInformation<WindowSum> createTypeInfo(
                    Type t, Map<String, TypeInformation<?>> genericParameters) {
                return INSTANCE;
            }
        }

        private Info() {
            super(WindowSum.class, Serializer.INSTANCE);
        }
    }
}
