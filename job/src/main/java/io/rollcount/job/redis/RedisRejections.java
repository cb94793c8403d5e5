package io.rollcount.job.redis;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A Redis writer's checkpointed state: the keys Redis rejected for good so far and the watermark they hold
 * {@code rc:meta:watermark} below (the start of the earliest rejected window, {@code Long.MAX_VALUE} for
 * none). Kept in the checkpoint so that a restart neither reports a key again nor lets the watermark pass a
 * window that was never written: the writes of that window came before the checkpoint and are not replayed.
 */
public final class RedisRejections {
    final long heldWatermark;
    final List<String> keys;

    RedisRejections(long heldWatermark, List<String> keys) {
        this.heldWatermark = heldWatermark;
        this.keys = keys;
    }

    /** Version 1: the held watermark, the number of keys, each key as UTF-8 bytes with their length. */
    static final class Serializer implements SimpleVersionedSerializer<RedisRejections> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(RedisRejections r) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                out.writeLong(r.heldWatermark);
                out.writeInt(r.keys.size());
                for (String k : r.keys) {
                    byte[] b = RedisApplyScript.b(k);
                    out.writeInt(b.length);
                    out.write(b);
                }
            }
            return bytes.toByteArray();
        }

        @Override
        public RedisRejections deserialize(int version, byte[] serialized) throws IOException {
            if (version != 1) throw new IOException("unknown version " + version + " of the Redis writer's state");
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
                long held = in.readLong();
                int n = in.readInt();
                List<String> keys = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    byte[] b = new byte[in.readInt()];
                    in.readFully(b);
                    keys.add(new String(b, java.nio.charset.StandardCharsets.UTF_8));
                }
                return new RedisRejections(held, keys);
            }
        }
    }
}
