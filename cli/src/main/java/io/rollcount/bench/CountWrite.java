package io.rollcount.bench;

/**
 * One value for a reference job to write to Redis: {@code SET key value} with {@code PXAT expireAtMillis}
 * (window keys: window end + retention) or without expiry ({@code expireAtMillis} 0: totals). A POJO, so
 * Flink serializes it without Kryo.
 */
public class CountWrite {
    public String key;
    public long value;
    public long expireAtMillis;

    public CountWrite() {}

    public CountWrite(String key, long value, long expireAtMillis) {
        this.key = key;
        this.value = value;
        this.expireAtMillis = expireAtMillis;
    }
}
