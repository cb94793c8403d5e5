package io.rollcount.job.model;

import java.io.IOException;
import java.lang.reflect.Type;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * What trending reads of a partial sum, and all that crosses the shuffle to the trending shards: the
 * counter, its 5-second bucket and the bucket's forward-decayed trending weight ({@link PartialSum#trend}).
 * Written by its own {@link Serializer} (counter, two longs' worth), not by a reflective one.
 */
@TypeInfo(TrendWeight.Info.Factory.class)
public final class TrendWeight {
    public final String counter;
    /** Start of the 5-second bucket, epoch ms. */
    public final long bucket;

    public final double trend;

    public TrendWeight(String counter, long bucket, double trend) {
        this.counter = counter;
        this.bucket = bucket;
        this.trend = trend;
    }

    public static TrendWeight of(PartialSum p) {
        return new TrendWeight(p.counter, p.bucket, p.trend);
    }

    @Override
    public String toString() {
        return "TrendWeight{" + counter + "@" + bucket + " " + trend + "}";
    }

    /** Counter as {@link WireStrings} writes it, then bucket and weight; immutable, so copies are the record itself. */
    public static final class Serializer extends ImmutableRecordSerializer<TrendWeight> {
        private static final long serialVersionUID = 1L;
        public static final Serializer INSTANCE = new Serializer();

        @Override
        public TrendWeight createInstance() {
            return new TrendWeight("", 0, 0);
        }

        @Override
        public void serialize(TrendWeight w, DataOutputView out) throws IOException {
            WireStrings.write(w.counter, out);
            out.writeLong(w.bucket);
            out.writeDouble(w.trend);
        }

        @Override
        public TrendWeight deserialize(DataInputView in) throws IOException {
            return new TrendWeight(WireStrings.read(in), in.readLong(), in.readDouble());
        }

        @Override
        public void copy(DataInputView in, DataOutputView out) throws IOException {
            WireStrings.copy(in, out);
            out.writeLong(in.readLong());
            out.writeDouble(in.readDouble());
        }

        @Override
        public TypeSerializerSnapshot<TrendWeight> snapshotConfiguration() {
            return new Snapshot();
        }

        /** No configuration: the snapshot only names the serializer. */
        public static final class Snapshot extends SimpleTypeSerializerSnapshot<TrendWeight> {
            public Snapshot() {
                super(() -> INSTANCE);
            }
        }
    }

    /** Flink's type information for {@link TrendWeight} ({@link HandSerializedTypeInfo}): its {@link Serializer}. */
    public static final class Info extends HandSerializedTypeInfo<TrendWeight> {
        private static final long serialVersionUID = 1L;
        public static final Info INSTANCE = new Info();

        /** What the {@code @TypeInfo} annotation names. */
        public static final class Factory extends TypeInfoFactory<TrendWeight> {
            @Override
            public TypeInformation<TrendWeight> createTypeInfo(
                    Type t, Map<String, TypeInformation<?>> genericParameters) {
                return INSTANCE;
            }
        }

        private Info() {
            super(TrendWeight.class, Serializer.INSTANCE);
        }
    }
}
