package io.rollcount.sketches;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Space-Saving top-K (Metwally, Agrawal, El Abbadi, "Efficient Computation of Frequent and Top-k
 * Elements in Data Streams", ICDT 2005) with exponential time decay (forward decay, same clock as
 * {@link CountMinSketch}), newcomers that start from a Count-Min estimate, and merging (Agarwal,
 * Cormode, Huang, Phillips, Wei, Yi, "Mergeable Summaries", PODS 2012).
 *
 * <p><b>State.</b> {@code capacity + 1} monitored items, each with an upper bound {@code c} (its
 * Space-Saving count) and a lower bound {@code l} (the weight it received while monitored); a floor
 * {@code F} bounding the count of every unmonitored item; the total weight {@code N}. All in stored
 * (forward-decayed) units against one landmark. Items live in slots: parallel primitive arrays (item,
 * its {@link String#hashCode}, its 64-bit {@link CountMinSketch#hash}, c, l, pending weight, heap
 * position), no object per item. A binary min-heap of slots keyed by {@code c} finds the minimum; an
 * open-addressing table (linear probing, load at most 1/2) keyed by the item's {@code hashCode},
 * Fibonacci-hashed, finds an item's slot: a monitored item costs one probe, an identity check ({@code ==})
 * before {@code equals}, and, since its count only grows, a sift-down. The 32-bit key is the one a
 * String caches, so a monitored item is found without reading its characters or its length. Space-Saving
 * with k + 1 counters is Misra-Gries with k (Agarwal et al.), hence the one extra slot.
 *
 * <p><b>Update</b> of item x with weight w &gt; 0 and an upper bound e of x's count including w (the
 * Count-Min estimate; +infinity without one): a monitored x gets {@code c += w, l += w}. Otherwise
 * x's bound is {@code u = min(e, F + w)}; with a free slot x enters with {@code c = u, l = w}; when full,
 * {@code F = max(F, c_min)} and x replaces the minimum item if {@code u > c_min}, else it stays out
 * (its count is at most {@code u <= F}). Without an estimate this is exactly Space-Saving.
 *
 * <p><b>Guarantees</b> (deterministic, also across merges): every monitored {@code c} and {@code l}
 * bound the true decayed count from above and below; every unmonitored item's count is at most F; and
 * {@code sum(max(0, c - F)) + (capacity + 1) * F <= N}; and {@code c - l <= F}. So F &lt;= N / (capacity + 1),
 * at most {@code capacity} items have {@code c > N / (capacity + 1)}, and every item whose decayed count
 * exceeds {@code N / (capacity + 1)} is among the {@code capacity} items {@link #topK} reports (ranked by
 * c, or by any tighter upper bound such as a Count-Min estimate: the same argument holds).
 *
 * <p><b>Merge</b> of summaries of equal capacity and half-life: with {@code g_i(x) = max(0, c_i(x) - F_i)}
 * (0 if x is not monitored), {@code G = g_1 + g_2}, keep the {@code capacity + 1} items of largest G with
 * {@code c = c_1 + c_2} (an absent side counting its floor), {@code l = l_1 + l_2}, and set
 * {@code F = F_1 + F_2 + G*}, G* the largest G dropped (Agarwal et al.'s merge of Misra-Gries
 * summaries, in Space-Saving form). The invariant above carries over, so do the guarantees.
 *
 * <p><b>With a Count-Min sketch</b> ({@link TrendingSketch}) the summary filters the sketch, as in the
 * Augmented Sketch (Roy, Khan, Alonso, "Augmented Sketch: Faster and More Accurate Stream Processing",
 * SIGMOD 2016): the weight of an unmonitored item goes into the sketch at once (its estimate, after
 * the update, is the newcomer bound e), while a monitored item's weight is held back in a per-item
 * {@code pending} sum and given to the sketch (one conservative update) when the item is evicted, or
 * dropped by a merge. Every item's cells still hold at least the weight the sketch has been given for
 * it, so {@code estimate + pending} bounds every count from above; most updates of a skewed stream
 * (the head) skip the sketch, and the head's weight no longer inflates the tail's estimates.
 *
 * <p><b>Serialized format</b> ({@link #toBytes()}), little-endian:
 * <pre>
 * byte  0      serial version, 2 (version 1, still read, had no pending weight and any item order)
 * byte  1      family, 0x54 ('T')
 * byte  2..3   zero
 * byte  4..7   capacity, int32 &gt; 0
 * byte  8..15  half-life in ms, int64 (0 = no decay)
 * byte 16..23  landmark in epoch ms, int64
 * byte 24..31  total weight N, binary64 (stored units)
 * byte 32..39  floor F, binary64 (stored units)
 * byte 40..43  n, int32, monitored items, 0..capacity + 1
 * then n times, in the heap's array order (kept on reading, so a restored summary evolves exactly
 *              as the original): UTF-8 length int32, the item's UTF-8 bytes, upper bound c, lower bound
 *              l and pending weight (0 without a Count-Min sketch), binary64 each
 * </pre>
 *
 * <p>Not thread-safe.
 */
public final class SpaceSavingTopK {
    static final byte SERIAL_VERSION = 2;
    /** Version 1 had no pending weights and listed items in slot order; still read. */
    static final byte SERIAL_VERSION_1 = 1;

    static final byte FAMILY = 0x54;
    private static final int HEADER = 44;

    private final int capacity;
    private final int slots;
    private final ForwardDecay decay;
    private final String[] items;
    private final int[] codes;
    private final long[] hashes;
    private final double[] upper;
    private final double[] lower;
    private final double[] pending;
    private final int[] heap;
    private final int[] heapIndex;
    private final int[] table;
    private final int mask;
    private final int shift;
    private int size;
    private long landmark;
    private double total;
    private double floor;

    /** A summary reporting up to {@code capacity} items; {@code halfLifeMillis} 0 = no decay. */
    public SpaceSavingTopK(int capacity, long halfLifeMillis) {
        if (capacity < 1 || capacity > (1 << 28)) {
            throw new IllegalArgumentException("capacity must be in 1..2^28, got " + capacity);
        }
        this.capacity = capacity;
        this.slots = capacity + 1;
        this.decay = ForwardDecay.of(halfLifeMillis);
        this.items = new String[slots];
        this.codes = new int[slots];
        this.hashes = new long[slots];
        this.upper = new double[slots];
        this.lower = new double[slots];
        this.pending = new double[slots];
        this.heap = new int[slots];
        this.heapIndex = new int[slots];
        this.table = new int[Integer.highestOneBit(slots * 2 - 1) << 1];
        this.mask = table.length - 1;
        this.shift = Integer.numberOfLeadingZeros(mask);
    }

    // ------------------------------------------------------------------ updates

    /** Counts {@code weight} (&gt;= 0; 0 is ignored) for {@code item} at event time {@code eventTimeMillis}. */
    public void update(String item, double weight, long eventTimeMillis) {
        checkWeight(weight);
        if (weight == 0) {
            return;
        }
        advanceTo(eventTimeMillis);
        offer(item, weight * decay.weight(eventTimeMillis, landmark), Double.POSITIVE_INFINITY);
    }

    /** Moves the landmark on to {@code timeMillis} if a half-life or more has passed. */
    public void advanceTo(long timeMillis) {
        if (decay.moves(landmark, timeMillis)) {
            renormalize(decay.landmarkFor(timeMillis));
        }
    }

    /**
     * Offers a stored weight {@code w > 0} for {@code item} whose stored count, this weight included, is
     * at most {@code bound} (+infinity when nothing better is known).
     */
    void offer(String item, double w, double bound) {
        int code = item.hashCode();
        int slot = find(item, code);
        if (slot >= 0) {
            addMonitored(slot, w);
        } else if (size < slots) {
            insertNew(item, code, CountMinSketch.hash(item), w, bound);
        } else {
            replaceMinimum(item, code, CountMinSketch.hash(item), w, bound);
        }
    }

    /**
     * Offers a stored weight {@code w > 0} for {@code item}, the Count-Min sketch {@code cms} (on the same
     * clock) receiving unmonitored weight now and monitored weight on eviction (see the class comment).
     */
    void offer(String item, double w, CountMinSketch cms) {
        int code = item.hashCode();
        int slot = find(item, code);
        if (slot >= 0) {
            addMonitored(slot, w);
            pending[slot] += w;
            return;
        }
        long hash = CountMinSketch.hash(item);
        double bound = cms.addStored(hash, w);
        if (size < slots) {
            insertNew(item, code, hash, w, bound);
            return;
        }
        int min = heap[0];
        long evictedHash = hashes[min];
        double evictedPending = pending[min];
        if (replaceMinimum(item, code, hash, w, bound) && evictedPending > 0) {
            cms.addStored(evictedHash, evictedPending);
        }
    }

    private void addMonitored(int slot, double w) {
        total += w;
        upper[slot] += w;
        lower[slot] += w;
        siftDown(heapIndex[slot]);
    }

    private void insertNew(String item, int code, long hash, double w, double bound) {
        total += w;
        admit(size, item, code, hash, bound < floor + w ? bound : floor + w, w);
        heap[size] = size;
        heapIndex[size] = size;
        siftUp(size++);
    }

    /** The newcomer replaces the minimum item if its bound beats the minimum's; true if it did. */
    private boolean replaceMinimum(String item, int code, long hash, double w, double bound) {
        total += w;
        int min = heap[0];
        floor = Math.max(floor, upper[min]);
        double u = bound < floor + w ? bound : floor + w;
        if (u <= upper[min]) {
            return false;
        }
        tableRemove(min);
        admit(min, item, code, hash, u, w);
        siftDown(0);
        return true;
    }

    private void admit(int slot, String item, int code, long hash, double u, double w) {
        items[slot] = item;
        codes[slot] = code;
        hashes[slot] = hash;
        upper[slot] = u;
        lower[slot] = w;
        pending[slot] = 0;
        tableInsert(slot);
    }

    private static void checkWeight(double weight) {
        if (!(weight >= 0) || weight == Double.POSITIVE_INFINITY) {
            throw new IllegalArgumentException("top-K weight must be finite and >= 0, got " + weight);
        }
    }

    private void renormalize(long newLandmark) {
        int k = decay.halvings(landmark, newLandmark);
        for (int s = 0; s < size; s++) {
            upper[s] = Math.scalb(upper[s], -k);
            lower[s] = Math.scalb(lower[s], -k);
            pending[s] = Math.scalb(pending[s], -k);
        }
        total = Math.scalb(total, -k);
        floor = Math.scalb(floor, -k);
        landmark = newLandmark;
    }

    // ------------------------------------------------------------------ heap (min on upper)

    private void siftUp(int i) {
        int slot = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (upper[heap[parent]] <= upper[slot]) {
                break;
            }
            place(i, heap[parent]);
            i = parent;
        }
        place(i, slot);
    }

    private void siftDown(int i) {
        int slot = heap[i];
        int half = size >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            int right = child + 1;
            if (right < size && upper[heap[right]] < upper[heap[child]]) {
                child = right;
            }
            if (upper[slot] <= upper[heap[child]]) {
                break;
            }
            place(i, heap[child]);
            i = child;
        }
        place(i, slot);
    }

    private void place(int i, int slot) {
        heap[i] = slot;
        heapIndex[slot] = i;
    }

    // ------------------------------------------------------------------ item table

    /** Fibonacci hashing: the top bits of the hash code times 2^32 / golden ratio. */
    private int home(int code) {
        return (code * 0x9e3779b9) >>> shift;
    }

    /** The slot of {@code item} (of hash code {@code code}), or -1 if it is not monitored. */
    private int find(String item, int code) {
        for (int i = home(code); ; i = (i + 1) & mask) {
            int slot = table[i] - 1;
            if (slot < 0) {
                return -1;
            }
            String monitored = items[slot];
            if (monitored == item || (codes[slot] == code && monitored.equals(item))) {
                return slot;
            }
        }
    }

    private void tableInsert(int slot) {
        int i = home(codes[slot]);
        while (table[i] != 0) {
            i = (i + 1) & mask;
        }
        table[i] = slot + 1;
    }

    /** Removes a slot's entry, shifting later entries of the probe run back (Knuth's Algorithm R). */
    private void tableRemove(int slot) {
        int i = home(codes[slot]);
        while (table[i] != slot + 1) {
            i = (i + 1) & mask;
        }
        for (int j = (i + 1) & mask; table[j] != 0; j = (j + 1) & mask) {
            int h = home(codes[table[j] - 1]);
            boolean stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
            if (!stays) {
                table[i] = table[j];
                i = j;
            }
        }
        table[i] = 0;
    }

    // ------------------------------------------------------------------ queries

    /** Up to {@code min(k, capacity)} items by decreasing upper bound, counts decayed to {@code nowMillis}. */
    public List<RankedItem> topK(int k, long nowMillis) {
        return ranked(k, nowMillis, null);
    }

    /** As {@link #topK}, upper bounds tightened by {@code cms} estimates when it is not null. */
    List<RankedItem> ranked(int k, long nowMillis, CountMinSketch cms) {
        double[] bound = new double[size];
        Integer[] order = new Integer[size];
        for (int s = 0; s < size; s++) {
            bound[s] = cms == null ? upper[s] : Math.min(upper[s], cms.storedEstimate(hashes[s]) + pending[s]);
            order[s] = s;
        }
        Arrays.sort(order, Comparator.<Integer>comparingDouble(s -> -bound[s]).thenComparing(s -> items[s]));
        double f = decay.toNow(nowMillis, landmark);
        int n = Math.min(Math.min(k, capacity), size);
        List<RankedItem> out = new ArrayList<>(n);
        for (int j = 0; j < n; j++) {
            int s = order[j];
            out.add(new RankedItem(items[s], bound[s] * f, lower[s] * f, bound[s] * f));
        }
        return out;
    }

    /** The stored weight of {@code item} not yet given to the Count-Min sketch (0 if unmonitored). */
    double pendingOf(String item) {
        int slot = find(item, item.hashCode());
        return slot >= 0 ? pending[slot] : 0;
    }

    /** The total weight N decayed to {@code nowMillis}. */
    public double totalWeight(long nowMillis) {
        return total * decay.toNow(nowMillis, landmark);
    }

    /** The bound F on every unmonitored item's count, decayed to {@code nowMillis}. */
    public double unmonitoredBound(long nowMillis) {
        return effectiveFloor() * decay.toNow(nowMillis, landmark);
    }

    /** Number of monitored items, at most {@code capacity + 1}. */
    public int size() {
        return size;
    }

    public int capacity() {
        return capacity;
    }

    public long halfLifeMillis() {
        return decay.halfLifeMillis;
    }

    public long landmarkMillis() {
        return landmark;
    }

    private double effectiveFloor() {
        return size == slots ? Math.max(floor, upper[heap[0]]) : floor;
    }

    // ------------------------------------------------------------------ merge

    /**
     * Merges {@code other} into this summary (see the class comment).
     *
     * @throws IllegalArgumentException if the capacities or half-lives differ
     */
    public void merge(SpaceSavingTopK other) {
        merge(other, null);
    }

    /**
     * Merges {@code other}; pending weights add up, and those of items the merge drops go to
     * {@code cms} (the merge of both summaries' sketches), if there is one.
     */
    void merge(SpaceSavingTopK other, CountMinSketch cms) {
        checkMergeable(other);
        if (other.landmark > landmark) {
            renormalize(other.landmark);
        }
        double f = decay.decays() ? Math.scalb(1.0, -decay.halvings(other.landmark, landmark)) : 1;
        double f1 = effectiveFloor();
        double f2 = other.effectiveFloor() * f;
        Map<String, Merged> union = new HashMap<>();
        for (int s = 0; s < size; s++) {
            union.put(
                    items[s],
                    new Merged(items[s], hashes[s], upper[s] + f2, lower[s], pending[s], Math.max(0, upper[s] - f1)));
        }
        for (int s = 0; s < other.size; s++) {
            double c2 = other.upper[s] * f;
            double g2 = Math.max(0, c2 - f2);
            Merged m = union.get(other.items[s]);
            if (m == null) {
                union.put(
                        other.items[s],
                        new Merged(
                                other.items[s],
                                other.hashes[s],
                                f1 + c2,
                                other.lower[s] * f,
                                other.pending[s] * f,
                                g2));
            } else {
                m.upper += c2 - f2;
                m.lower += other.lower[s] * f;
                m.pending += other.pending[s] * f;
                m.g += g2;
            }
        }
        List<Merged> all = new ArrayList<>(union.values());
        all.sort(Comparator.<Merged>comparingDouble(m -> -m.g).thenComparing(m -> m.item));
        double dropped = all.size() > slots ? all.get(slots).g : 0;
        for (Merged m : all.subList(Math.min(slots, all.size()), all.size())) {
            if (cms != null && m.pending > 0) {
                cms.addStored(m.hash, m.pending);
            }
        }
        rebuild(all.subList(0, Math.min(slots, all.size())), f1 + f2 + dropped, total + other.total * f);
    }

    /** Throws the error {@link #merge} would throw, changing nothing. */
    void checkMergeable(SpaceSavingTopK other) {
        if (other.capacity != capacity || other.decay.halfLifeMillis != decay.halfLifeMillis) {
            throw new IllegalArgumentException("cannot merge top-K summaries of capacity " + capacity + ", half-life "
                    + decay.halfLifeMillis + " ms and capacity " + other.capacity + ", half-life "
                    + other.decay.halfLifeMillis + " ms");
        }
    }

    private static final class Merged {
        final String item;
        final long hash;
        double upper;
        double lower;
        double pending;
        double g;

        Merged(String item, long hash, double upper, double lower, double pending, double g) {
            this.item = item;
            this.hash = hash;
            this.upper = upper;
            this.lower = lower;
            this.pending = pending;
            this.g = g;
        }
    }

    private void rebuild(List<Merged> kept, double newFloor, double newTotal) {
        Arrays.fill(table, 0);
        size = 0;
        for (Merged m : kept) {
            admit(size, m.item, m.item.hashCode(), m.hash, m.upper, m.lower);
            pending[size] = m.pending;
            heap[size] = size;
            heapIndex[size] = size;
            siftUp(size++);
        }
        floor = newFloor;
        total = newTotal;
    }

    // ------------------------------------------------------------------ serialization

    /** The serialized form (layout in the class comment). */
    public byte[] toBytes() {
        byte[][] utf8 = new byte[size][];
        int length = HEADER;
        for (int i = 0; i < size; i++) {
            utf8[i] = items[heap[i]].getBytes(StandardCharsets.UTF_8);
            length += 4 + utf8[i].length + 24;
        }
        byte[] out = new byte[length];
        out[0] = SERIAL_VERSION;
        out[1] = FAMILY;
        Bytes.putInt(out, 4, capacity);
        Bytes.putLong(out, 8, decay.halfLifeMillis);
        Bytes.putLong(out, 16, landmark);
        Bytes.putLong(out, 24, Double.doubleToRawLongBits(total));
        Bytes.putLong(out, 32, Double.doubleToRawLongBits(floor));
        Bytes.putInt(out, 40, size);
        int at = HEADER;
        for (int i = 0; i < size; i++) {
            int s = heap[i];
            Bytes.putInt(out, at, utf8[i].length);
            System.arraycopy(utf8[i], 0, out, at + 4, utf8[i].length);
            at += 4 + utf8[i].length;
            Bytes.putLong(out, at, Double.doubleToRawLongBits(upper[s]));
            Bytes.putLong(out, at + 8, Double.doubleToRawLongBits(lower[s]));
            Bytes.putLong(out, at + 16, Double.doubleToRawLongBits(pending[s]));
            at += 24;
        }
        return out;
    }

    /** Reads {@link #toBytes()}; rejects anything else with a {@link SketchFormatException}. */
    public static SpaceSavingTopK fromBytes(byte[] in) {
        Bytes.need(in, 0, HEADER, "top-K header");
        if (in[1] != FAMILY) {
            throw new SketchFormatException("not a top-K summary: family byte " + in[1] + ", expected " + FAMILY);
        }
        if (in[0] != SERIAL_VERSION && in[0] != SERIAL_VERSION_1) {
            throw new SketchFormatException(
                    "unsupported top-K serial version " + in[0] + ", expected " + SERIAL_VERSION);
        }
        int capacity = Bytes.getInt(in, 4, "top-K header");
        long halfLife = Bytes.getLong(in, 8, "top-K header");
        int n = Bytes.getInt(in, 40, "top-K header");
        if (capacity < 1 || capacity > (1 << 28) || halfLife < 0 || n < 0 || n > capacity + 1) {
            throw new SketchFormatException(
                    "corrupt top-K header: capacity " + capacity + ", half-life " + halfLife + ", " + n + " items");
        }
        SpaceSavingTopK t = new SpaceSavingTopK(capacity, halfLife);
        t.landmark = Bytes.getLong(in, 16, "top-K header");
        t.total = Bytes.getFiniteDouble(in, 24, "top-K total weight");
        t.floor = Bytes.getFiniteDouble(in, 32, "top-K floor");
        t.readItems(in, n, in[0] == SERIAL_VERSION_1);
        return t;
    }

    /**
     * Reads the items. Version 2 records are (length, UTF-8, upper, lower, pending) in heap order, which is
     * kept, so a restored summary evolves exactly as the original; version 1 records have no pending weight
     * and any order (the heap is rebuilt).
     */
    private void readItems(byte[] in, int n, boolean version1) {
        int record = version1 ? 16 : 24;
        int at = HEADER;
        for (int j = 0; j < n; j++) {
            int length = Bytes.getInt(in, at, "top-K item");
            if (length < 0) {
                throw new SketchFormatException("corrupt top-K summary: item " + j + " has length " + length);
            }
            Bytes.need(in, at + 4, length + record, "top-K item " + j);
            String item = new String(in, at + 4, length, StandardCharsets.UTF_8);
            at += 4 + length;
            int code = item.hashCode();
            if (find(item, code) >= 0) {
                throw new SketchFormatException("corrupt top-K summary: item '" + item + "' appears twice");
            }
            admit(
                    j,
                    item,
                    code,
                    CountMinSketch.hash(item),
                    Bytes.getFiniteDouble(in, at, "top-K upper bound"),
                    Bytes.getFiniteDouble(in, at + 8, "top-K lower bound"));
            if (!version1) pending[j] = Bytes.getFiniteDouble(in, at + 16, "top-K pending weight");
            place(j, j);
            if (version1) {
                siftUp(j);
            } else if (j > 0 && upper[(j - 1) >>> 1] > upper[j]) {
                throw new SketchFormatException("corrupt top-K summary: item " + j + " breaks the heap order");
            }
            size = j + 1;
            at += record;
        }
        if (at != in.length) {
            throw new SketchFormatException("corrupt top-K summary: " + (in.length - at) + " trailing bytes");
        }
    }
}
