package io.rollcount.sketches;

import static io.rollcount.sketches.RedisHllFormat.HDR;
import static io.rollcount.sketches.RedisHllFormat.opLength;
import static io.rollcount.sketches.RedisHllFormat.span;

import java.util.Arrays;

/**
 * Where a sparse HyperLogLog body's opcodes start, about every {@value #STRIDE} bytes: checkpoints of (offset,
 * first register covered, offset of the opcode before), so that the opcode covering a register is found by a
 * binary search and a walk of about a stride rather than a walk from the first opcode. A sparse add is then
 * about constant in the size of the body instead of linear in it (a body of 3,000 bytes has about 2,000
 * opcodes). It holds offsets only: the bytes are {@link RedisHllFormat}'s, and the sketch edits them exactly
 * as before.
 *
 * <p><b>Upkeep.</b> An edit ({@code hllSparseSet}'s split and merge of adjacent VALs) changes bytes only from
 * the opcode before the edited one ({@code start}), and less than {@value #EDIT_REACH} bytes past it; every
 * opcode after that moves by the edit's change in length and still covers the same registers.
 * {@link #edited} drops the checkpoints in that reach, moves the later ones and sets one again just past it.
 * A walk longer than {@value #REBUILD_WALK} bytes (opcodes inserted between two checkpoints over many edits)
 * asks for a rebuild, one walk of the body.
 *
 * <p>Size: three {@code int}s per checkpoint, about 94 checkpoints for a sparse body of 3,000 bytes (arrays of
 * 128: 1.6 KB), none below {@value #MIN_BYTES} bytes ({@link #heapBytes}). Not thread-safe; owned by one
 * {@link RedisHyperLogLog}.
 */
final class SparseOpcodeIndex {
    /** Bytes between checkpoints when built. */
    static final int STRIDE = 32;
    /** Bodies shorter than this are walked from the start (checkpoints would save little). */
    static final int MIN_BYTES = 8 * STRIDE;
    /**
     * Checkpoints this many bytes past the opcode before an edit or more keep their opcode: the split writes at
     * most 7 bytes from it and the merges look at most 12, so bytes 12 on are the old ones moved by the change in
     * length (-5 to +4), and a checkpoint 19 bytes on or more keeps its opcode and the one before it.
     */
    static final int EDIT_REACH = 24;
    /** A walk from a checkpoint longer than this many bytes asks for a rebuild. */
    static final int REBUILD_WALK = 4 * STRIDE;

    private int[] off = new int[8];
    private int[] first = new int[8];
    private int[] prev = new int[8];
    private int size;

    /** Checkpoints of the sparse body {@code b[HDR, len)}, one about every {@link #STRIDE} bytes. */
    void build(byte[] b, int len) {
        size = 0;
        int p = HDR;
        int f = 0;
        int before = -1;
        int last = HDR;
        while (p < len) {
            if (p - last >= STRIDE) {
                insert(size, p, f, before);
                last = p;
            }
            f += span(b, p);
            before = p;
            p += opLength(b, p);
        }
    }

    /** The last checkpoint whose opcode starts at or before register {@code register}; -1 if none. */
    int find(int register) {
        int lo = 0;
        int hi = size - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (first[mid] <= register) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found;
    }

    int offset(int i) {
        return off[i];
    }

    int firstRegister(int i) {
        return first[i];
    }

    /** The offset of the opcode before checkpoint {@code i}'s. */
    int before(int i) {
        return prev[i];
    }

    int size() {
        return size;
    }

    /** About the heap this index takes. */
    long heapBytes() {
        return 16 + 3 * (16 + 4L * off.length);
    }

    /**
     * After an edit that changed no byte before {@code start} (an opcode's offset) and changed the body's length
     * by {@code delta}: drops the checkpoints from {@code start} to {@link #EDIT_REACH} bytes past it, moves the
     * later ones by {@code delta}, and sets one at the first opcode past the reach ({@code b[HDR, len)} as edited).
     */
    void edited(byte[] b, int len, int start, int delta) {
        int keep = 0;
        while (keep < size && off[keep] < start) keep++;
        int dropTo = keep;
        while (dropTo < size && off[dropTo] < start + EDIT_REACH) dropTo++;
        for (int i = dropTo; i < size; i++) {
            off[i] += delta;
            prev[i] += delta;
        }
        if (dropTo == keep) return;
        int dropped = dropTo - keep;
        System.arraycopy(off, dropTo, off, keep, size - dropTo);
        System.arraycopy(first, dropTo, first, keep, size - dropTo);
        System.arraycopy(prev, dropTo, prev, keep, size - dropTo);
        size -= dropped;
        // walk from the checkpoint before the edit (unchanged) to the first opcode past the reach
        int p = keep > 0 ? off[keep - 1] : HDR;
        int f = keep > 0 ? first[keep - 1] : 0;
        int before = keep > 0 ? prev[keep - 1] : -1;
        int target = start + EDIT_REACH;
        while (p < len && p < target) {
            f += span(b, p);
            before = p;
            p += opLength(b, p);
        }
        if (p < len && (keep == size || p < off[keep])) insert(keep, p, f, before);
    }

    private void insert(int at, int offset, int firstRegister, int before) {
        if (size == off.length) {
            off = Arrays.copyOf(off, size * 2);
            first = Arrays.copyOf(first, size * 2);
            prev = Arrays.copyOf(prev, size * 2);
        }
        System.arraycopy(off, at, off, at + 1, size - at);
        System.arraycopy(first, at, first, at + 1, size - at);
        System.arraycopy(prev, at, prev, at + 1, size - at);
        off[at] = offset;
        first[at] = firstRegister;
        prev[at] = before;
        size++;
    }

    /**
     * Tests: null if every checkpoint names an opcode of {@code b[HDR, len)} by its offset, first register and
     * the offset of the opcode before it, in order; else what is wrong.
     */
    String check(byte[] b, int len) {
        int p = HDR;
        int f = 0;
        int before = -1;
        int i = 0;
        while (p < len && i < size) {
            if (off[i] < p) return "checkpoint " + i + " at " + off[i] + " is not an opcode's offset";
            if (off[i] == p) {
                if (first[i] != f || prev[i] != before) {
                    return "checkpoint " + i + " at " + p + " says register " + first[i] + " after " + prev[i]
                            + ", the body says " + f + " after " + before;
                }
                i++;
                continue;
            }
            f += span(b, p);
            before = p;
            p += opLength(b, p);
        }
        return i == size ? null : "checkpoint " + i + " at " + off[i] + " is past the body's end " + len;
    }
}
