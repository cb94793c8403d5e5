package io.rollcount.sketches;

/** A serialized sketch (or a Redis HyperLogLog value) that is corrupt or of an unknown format. */
public final class SketchFormatException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public SketchFormatException(String message) {
        super(message);
    }
}
