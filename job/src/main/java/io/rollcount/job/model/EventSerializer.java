package io.rollcount.job.model;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.types.StringValue;

/**
 * {@link Event} through Flink's shuffles (the hop into and out of deduplication, dead letters to their sink),
 * written by hand instead of by the reflective PojoSerializer: one byte saying which of the nullable fields are
 * present, then only those (counter, event id, user and source as {@link WireStrings} writes them, a dead letter's
 * reason and detail as Flink writes strings). A valid event carries no reason or detail; a payload, key and source
 * only where the input had them (they stay while a dead letter may still need them: a late event is dead-lettered
 * downstream with its raw input). Events are never kept in state.
 */
public final class EventSerializer extends HandSerializer<Event> {
    private static final long serialVersionUID = 1L;

    public static final EventSerializer INSTANCE = new EventSerializer();

    private static final int EVENT_ID = 1;
    private static final int USER = 2;
    private static final int REASON = 4;
    private static final int DETAIL = 8;
    private static final int PAYLOAD = 16;
    private static final int KEY = 32;
    private static final int SOURCE = 64;
    /** With {@link #PAYLOAD}: the payload is cut ({@link Event#payloadSize}, {@link Event#payloadBase64} follow). */
    private static final int CUT = 128;

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public Event createInstance() {
        return new Event();
    }

    @Override
    public Event copy(Event from) {
        Event e = new Event();
        e.counter = from.counter;
        e.delta = from.delta;
        e.ts = from.ts;
        e.eventId = from.eventId;
        e.user = from.user;
        e.reason = from.reason;
        e.detail = from.detail;
        e.payload = from.payload == null ? null : from.payload.clone();
        e.payloadSize = from.payloadSize;
        e.payloadBase64 = from.payloadBase64;
        e.key = from.key == null ? null : from.key.clone();
        e.source = from.source;
        return e;
    }

    @Override
    public void serialize(Event e, DataOutputView out) throws IOException {
        int flags = (e.eventId != null ? EVENT_ID : 0)
                | (e.user != null ? USER : 0)
                | (e.reason != null ? REASON : 0)
                | (e.detail != null ? DETAIL : 0)
                | (e.payload != null ? PAYLOAD : 0)
                | (e.key != null ? KEY : 0)
                | (e.source != null ? SOURCE : 0)
                | (e.payload != null && e.payloadSize >= 0 ? CUT : 0);
        out.writeByte(flags);
        WireStrings.write(e.counter, out); // null-safe
        out.writeLong(e.delta);
        out.writeLong(e.ts);
        if ((flags & EVENT_ID) != 0) WireStrings.write(e.eventId, out);
        if ((flags & USER) != 0) WireStrings.write(e.user, out);
        if ((flags & REASON) != 0) StringValue.writeString(e.reason, out);
        if ((flags & DETAIL) != 0) StringValue.writeString(e.detail, out);
        if ((flags & PAYLOAD) != 0) writeBytes(e.payload, out);
        if ((flags & CUT) != 0) {
            out.writeLong(e.payloadSize);
            out.writeBoolean(e.payloadBase64);
        }
        if ((flags & KEY) != 0) writeBytes(e.key, out);
        if ((flags & SOURCE) != 0) WireStrings.write(e.source, out);
    }

    @Override
    public Event deserialize(DataInputView in) throws IOException {
        Event e = new Event();
        int flags = in.readUnsignedByte();
        e.counter = WireStrings.read(in);
        e.delta = in.readLong();
        e.ts = in.readLong();
        if ((flags & EVENT_ID) != 0) e.eventId = WireStrings.read(in);
        if ((flags & USER) != 0) e.user = WireStrings.read(in);
        if ((flags & REASON) != 0) e.reason = StringValue.readString(in);
        if ((flags & DETAIL) != 0) e.detail = StringValue.readString(in);
        if ((flags & PAYLOAD) != 0) e.payload = readBytes(in);
        if ((flags & CUT) != 0) {
            e.payloadSize = in.readLong();
            e.payloadBase64 = in.readBoolean();
        }
        if ((flags & KEY) != 0) e.key = readBytes(in);
        if ((flags & SOURCE) != 0) e.source = WireStrings.read(in);
        return e;
    }

    private static void writeBytes(byte[] b, DataOutputView out) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    private static byte[] readBytes(DataInputView in) throws IOException {
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return b;
    }

    @Override
    public TypeSerializerSnapshot<Event> snapshotConfiguration() {
        return new Snapshot();
    }

    /** The serializer has no configuration: its snapshot only names it. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<Event> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
