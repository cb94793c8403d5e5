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

/**
 * The increments of one counter within one 5-second bucket, combined by {@code PreAggregate} before the
 * shuffle by counter. Every coarser window is a whole number of 5-second buckets, so a partial sum lies
 * in exactly one window of each resolution.
 *
 * <p>It crosses the shuffle by counter with its own {@link Serializer}, not the reflective POJO one, and is
 * never kept in state.
 */
@TypeInfo(PartialSum.Info.Factory.class)
public class PartialSum {
    public String counter;
    /** Start of the 5-second bucket, epoch ms. */
    public long bucket;

    public long sum;
    /** Number of events combined. */
    public long events;
    /** Whether any combined delta was negative (such windows are not monotone in Redis). */
    public boolean negative;
    /**
     * Trending weight at the bucket's start: the sum over positive deltas {@code d} at event time {@code t}
     * of {@code d * 2^((t - bucket) / halfLife)} (forward decay with the bucket start as landmark), so that
     * the trending operator adds it exactly as if each event had been added at its own time.
     */
    public double trend;
    /**
     * The distinct {@code user} values of the combined events; empty if none. They go to Redis as they are
     * ({@code PFADD}), so that Redis builds its own HyperLogLog of them.
     */
    public String[] users = NO_USERS;

    public static final String[] NO_USERS = new String[0];

    public PartialSum() {}

    public PartialSum(String counter, long bucket) {
        this.counter = counter;
        this.bucket = bucket;
    }

    public void add(long delta) {
        sum = Math.addExact(sum, delta);
        events++;
        negative |= delta < 0;
    }

    /**
     * Whether {@code delta} can be added without taking {@link #sum} past the 64-bit range. A partial sum
     * that cannot take the next delta is sent on as it is and a new one takes the delta: combining never
     * overflows (a single delta, at most 10^12, always fits an empty partial); only the counter's own
     * total or window can, and there the event is dead-lettered ({@code CountPerCounter#OVERFLOW}).
     */
    public boolean fits(long delta) {
        long r = sum + delta;
        return ((sum ^ r) & (delta ^ r)) >= 0;
    }

    /** Adds an event at time {@code ts} with the trending weight of a positive delta. */
    public void add(long delta, long ts, double halfLifeMillis) {
        addWeighted(delta, Math.pow(2.0, (ts - bucket) / halfLifeMillis));
    }

    /**
     * {@link #add(long, long, double)} with the event's weight per unit of delta, {@code 2^((ts - bucket) /
     * halfLife)}, looked up in {@code weights} ({@link #trendWeights}): the same value, without a {@code Math.pow}
     * per event.
     */
    public void add(long delta, long ts, double[] weights) {
        addWeighted(delta, weights[(int) (ts - bucket)]);
    }

    private void addWeighted(long delta, double weight) {
        add(delta);
        if (delta > 0) trend += delta * weight;
    }

    /** {@code 2^(offset / halfLifeMillis)} for every offset of an event from its 5-second bucket's start. */
    public static double[] trendWeights(double halfLifeMillis) {
        double[] weights = new double[(int) Resolution.S5.sizeMillis];
        for (int offset = 0; offset < weights.length; offset++)
            weights[offset] = Math.pow(2.0, offset / halfLifeMillis);
        return weights;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof PartialSum p)) return false;
        return bucket == p.bucket
                && sum == p.sum
                && events == p.events
                && negative == p.negative
                && Objects.equals(counter, p.counter);
    }

    @Override
    public int hashCode() {
        return Objects.hash(counter, bucket);
    }

    @Override
    public String toString() {
        return "PartialSum{" + counter + "@" + bucket + " sum=" + sum + " events=" + events + "}";
    }

    /**
     * One byte of flags (bit 0: {@link #negative}; bit 1: users follow), the counter, {@link #bucket}, {@link
     * #sum} and {@link #events} as longs, {@link #trend} as a double, then, where there are users, their number
     * as an int and each user; strings as {@link WireStrings} writes them. Copies are deep where the record
     * is mutable (the users array is shared: it is never changed once the partial is emitted).
     */
    public static final class Serializer extends HandSerializer<PartialSum> {
        private static final long serialVersionUID = 1L;
        public static final Serializer INSTANCE = new Serializer();

        private static final int NEGATIVE = 1;
        private static final int USERS = 2;

        @Override
        public boolean isImmutableType() {
            return false;
        }

        @Override
        public PartialSum createInstance() {
            return new PartialSum();
        }

        @Override
        public PartialSum copy(PartialSum from) {
            PartialSum p = new PartialSum(from.counter, from.bucket);
            p.sum = from.sum;
            p.events = from.events;
            p.negative = from.negative;
            p.trend = from.trend;
            p.users = from.users == null ? NO_USERS : from.users;
            return p;
        }

        @Override
        public void serialize(PartialSum p, DataOutputView out) throws IOException {
            int n = p.users == null ? 0 : p.users.length;
            out.writeByte((p.negative ? NEGATIVE : 0) | (n > 0 ? USERS : 0));
            WireStrings.write(p.counter, out);
            out.writeLong(p.bucket);
            out.writeLong(p.sum);
            out.writeLong(p.events);
            out.writeDouble(p.trend);
            if (n > 0) {
                out.writeInt(n);
                for (String u : p.users) WireStrings.write(u, out);
            }
        }

        @Override
        public PartialSum deserialize(DataInputView in) throws IOException {
            int flags = in.readUnsignedByte();
            PartialSum p = new PartialSum(WireStrings.read(in), in.readLong());
            p.sum = in.readLong();
            p.events = in.readLong();
            p.trend = in.readDouble();
            p.negative = (flags & NEGATIVE) != 0;
            if ((flags & USERS) != 0) {
                String[] users = new String[in.readInt()];
                for (int i = 0; i < users.length; i++) users[i] = WireStrings.read(in);
                p.users = users;
            }
            return p;
        }

        @Override
        public void copy(DataInputView in, DataOutputView out) throws IOException {
            int flags = in.readUnsignedByte();
            out.writeByte(flags);
            WireStrings.copy(in, out);
            out.write(in, 3 * Long.BYTES + Double.BYTES);
            if ((flags & USERS) != 0) {
                int n = in.readInt();
                out.writeInt(n);
                for (int i = 0; i < n; i++) WireStrings.copy(in, out);
            }
        }

        @Override
        public TypeSerializerSnapshot<PartialSum> snapshotConfiguration() {
            return new Snapshot();
        }

        /** No configuration: the snapshot only names the serializer. */
        public static final class Snapshot extends SimpleTypeSerializerSnapshot<PartialSum> {
            public Snapshot() {
                super(() -> INSTANCE);
            }
        }
    }

    /** Flink's type information for {@link PartialSum} ({@link HandSerializedTypeInfo}): its {@link Serializer}. */
    public static final class Info extends HandSerializedTypeInfo<PartialSum> {
        private static final long serialVersionUID = 1L;
        public static final Info INSTANCE = new Info();

        /** What the {@code @TypeInfo} annotation names. */
        public static final class Factory extends TypeInfoFactory<PartialSum> {
            @Override
            public TypeInformation<PartialSum> createTypeInfo(
                    Type t, Map<String, TypeInformation<?>> genericParameters) {
                return INSTANCE;
            }
        }

        private Info() {
            super(PartialSum.class, Serializer.INSTANCE);
        }
    }
}
