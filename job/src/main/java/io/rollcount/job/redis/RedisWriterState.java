package io.rollcount.job.redis;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A Redis writer's checkpointed state: the token of the key prefix's lease it holds (see {@link PrefixGuard};
 * null for a writer without a lease), the keys Redis rejected for good so far and the watermark they hold
 * {@code rc:meta:watermark} below (the start of the earliest rejected window, {@code Long.MAX_VALUE} for
 * none). Kept in the checkpoint so that a restart neither reports a key again nor lets the watermark pass a
 * window that was never written: the writes of that window came before the checkpoint and are not replayed.
 * The token lets a restored job hold the lease of the job it continues.
 */
public final class RedisWriterState {
    final String leaseToken;
    final long heldWatermark;
    final List<String> keys;

    RedisWriterState(String leaseToken, long heldWatermark, List<String> keys) {
        this.leaseToken = leaseToken;
        this.heldWatermark = heldWatermark;
        this.keys = keys;
    }

    /** Version 1: whether a lease token follows (a byte 0 or 1) and the token as UTF-8 bytes with their length, the held watermark, the number of keys, each key as UTF-8 bytes with their length. */
    static final class Serializer implements SimpleVersionedSerializer<RedisWriterState> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(RedisWriterState r) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                out.writeBoolean(r.leaseToken != null);
                if (r.leaseToken != null) {
                    byte[] t = r.leaseToken.getBytes(StandardCharsets.UTF_8);
                    out.writeInt(t.length);
                    out.write(t);
                }
                out.writeLong(r.heldWatermark);
                out.writeInt(r.keys.size());
                for (String k : r.keys) {
                    byte[] b = k.getBytes(StandardCharsets.UTF_8);
                    out.writeInt(b.length);
                    out.write(b);
                }
            }
            return bytes.toByteArray();
        }

        @Override
        public RedisWriterState deserialize(int version, byte[] serialized) throws IOException {
            if (version != 1) throw new IOException("unknown version " + version + " of the Redis writer's state");
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
                String token = null;
                if (in.readBoolean()) {
                    byte[] t = new byte[in.readInt()];
                    in.readFully(t);
                    token = new String(t, java.nio.charset.StandardCharsets.UTF_8);
                }
                long held = in.readLong();
                int n = in.readInt();
                List<String> keys = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    byte[] b = new byte[in.readInt()];
                    in.readFully(b);
                    keys.add(new String(b, java.nio.charset.StandardCharsets.UTF_8));
                }
                return new RedisWriterState(token, held, keys);
            }
        }
    }
}
