package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.support.RedisTestSupport;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import redis.clients.jedis.resps.Tuple;

/**
 * The Redis keys a generated stream must leave under namespace policies, computed by the test from what
 * it expects of each namespace ({@link Expect}, written out by hand, not read from the job's Policies):
 * exactly the window sums of the kept resolutions, the totals, the uniques keys asked for (byte for byte
 * what PFADD of their users builds), each window key expiring at its end plus its namespace's retention,
 * and no other key; top-K and trending lists only for namespaces that keep them.
 */
final class PolicyTruth {
    /** What one namespace keeps. */
    record Expect(
            Set<Resolution> resolutions,
            Map<Resolution, Long> retention,
            Set<String> uniques,
            boolean dedup,
            boolean trending,
            int topk) {
        static Expect defaults(int topk) {
            return new Expect(EnumSet.allOf(Resolution.class), Map.of(), Set.of("1h", "1d", "all"), true, true, topk);
        }

        long expireAt(Resolution r, long startMillis) {
            return startMillis + r.sizeMillis + retention.getOrDefault(r, r.ttlMillis);
        }
    }

    private final String prefix;
    private final Map<String, Expect> byNamespace;
    private final Expect defaults;
    /** Full key -> value of totals and window sums. */
    final Map<String, Long> values = new HashMap<>();
    /** Full uniques key -> its users. */
    final Map<String, Set<String>> users = new HashMap<>();

    private final Set<String> seenIds = new HashSet<>();
    long counted;
    long redeliveriesCounted;
    long duplicatesDropped;

    PolicyTruth(String prefix, Map<String, Expect> byNamespace, Expect defaults) {
        this.prefix = prefix;
        this.byNamespace = byNamespace;
        this.defaults = defaults;
    }

    Expect of(String counter) {
        return byNamespace.getOrDefault(CounterId.namespaceOf(counter), defaults);
    }

    void add(Generated g) {
        Expect e = of(g.counter());
        if (g.eventId() != null && !seenIds.add(g.counter() + "\u0000" + g.eventId())) {
            if (e.dedup()) {
                duplicatesDropped++;
                return;
            }
            redeliveriesCounted++;
        }
        counted++;
        String base = prefix + ":{" + g.counter() + "}:";
        values.merge(base + "total", g.delta(), Long::sum);
        for (Resolution r : Resolution.all()) {
            long start = Math.floorDiv(r.windowStart(g.ts()), 1000L);
            if (e.resolutions().contains(r)) values.merge(base + r.label + ":" + start, g.delta(), Long::sum);
            if (g.user() != null && e.uniques().contains(r.label)) {
                users.computeIfAbsent(base + "u:" + r.label + ":" + start, k -> new HashSet<>())
                        .add(g.user());
            }
        }
        if (g.user() != null && e.uniques().contains("all"))
            users.computeIfAbsent(base + "u:all", k -> new HashSet<>()).add(g.user());
    }

    /** The expiry (epoch ms) a counter key must have: its window's end plus its namespace's retention, or -1 (none). */
    long expiryOf(String key) {
        String counter = key.substring(key.indexOf('{') + 1, key.indexOf('}'));
        int last = key.lastIndexOf(':');
        int before = key.lastIndexOf(':', last - 1);
        String label = key.substring(before + 1, last);
        String start = key.substring(last + 1);
        for (Resolution r : Resolution.all()) {
            if (r.label.equals(label) && start.matches("-?\\d+"))
                return of(counter).expireAt(r, Long.parseLong(start) * 1000);
        }
        return -1;
    }

    /** Checks every key under the prefix; returns the top-K and trending lists found, by key. */
    Map<String, List<Tuple>> assertRedis(RedisTestSupport redis) {
        return assertRedis(redis, k -> false, new ArrayList<>());
    }

    /** As {@link #assertRedis(RedisTestSupport)}, but the counter keys {@code elsewhere} accepts go to {@code skipped}, for the caller to check. */
    Map<String, List<Tuple>> assertRedis(
            RedisTestSupport redis, java.util.function.Predicate<String> elsewhere, List<String> skipped) {
        List<String> unexpected = new ArrayList<>();
        List<String> wrongValue = new ArrayList<>();
        List<String> wrongExpiry = new ArrayList<>();
        List<String> wrongUniques = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        Map<String, List<Tuple>> lists = new HashMap<>();
        for (String key : redis.keys()) {
            if (key.startsWith(prefix + ":meta:") || key.startsWith(prefix + ":_"))
                continue; // the job's own, and lists' versions
            if (key.startsWith(prefix + ":top:") || key.startsWith(prefix + ":trending:")) {
                lists.put(key, redis.jedis.zrevrangeWithScores(key, 0, -1));
                continue;
            }
            int v = key.indexOf("}:_v:");
            if (v >= 0) {
                // a window's version key: only beside a key that must exist, expiring with it
                String of = key.substring(0, v + 2) + key.substring(v + 5);
                if (elsewhere.test(of)) continue;
                if (!values.containsKey(of)) unexpected.add(key);
                else if (redis.jedis.pexpireTime(key) != expiryOf(of)) wrongExpiry.add(key);
                continue;
            }
            if (key.contains("}:_")) continue; // other bookkeeping of the counter
            if (elsewhere.test(key)) {
                skipped.add(key);
                continue;
            }
            long expiry = redis.jedis.pexpireTime(key);
            if (expiry != expiryOf(key)) wrongExpiry.add(key + " expires at " + expiry + ", expected " + expiryOf(key));
            if (users.containsKey(key)) {
                seen.add(key);
                String scratch = prefix + ":_scratch";
                redis.jedis.del(scratch);
                redis.jedis.pfadd(scratch, users.get(key).toArray(String[]::new));
                if (!RedisTruth.samePfaddBytes(redis.jedis, key, scratch)) wrongUniques.add(key);
                redis.jedis.del(scratch);
            } else if (values.containsKey(key)) {
                seen.add(key);
                long actual = Long.parseLong(redis.jedis.get(key));
                if (actual != values.get(key)) wrongValue.add(key + " = " + actual + ", expected " + values.get(key));
            } else {
                unexpected.add(key);
            }
        }
        List<String> missing = new ArrayList<>();
        for (String k : values.keySet()) if (!seen.contains(k)) missing.add(k);
        for (String k : users.keySet()) if (!seen.contains(k)) missing.add(k);
        assertThat(unexpected).as("keys no policy asks for").isEmpty();
        assertThat(missing)
                .as("keys missing, of " + (values.size() + users.size()))
                .isEmpty();
        assertThat(wrongValue).as("wrong values").isEmpty();
        assertThat(wrongUniques)
                .as("uniques keys not byte for byte PFADD of their users")
                .isEmpty();
        assertThat(wrongExpiry).as("wrong expiries").isEmpty();
        assertLists(redis, lists);
        return lists;
    }

    /** Window top-K and trending lists: none for a namespace that keeps none, none of its counters in the _all lists, at most K long. */
    private void assertLists(RedisTestSupport redis, Map<String, List<Tuple>> lists) {
        for (var entry : lists.entrySet()) {
            String key = entry.getKey();
            String rest = key.substring(prefix.length() + 1);
            boolean window = rest.startsWith("top:");
            String ns = window ? rest.split(":")[1] : rest.substring("trending:".length());
            if (!ns.equals("_all")) {
                Expect e = byNamespace.getOrDefault(ns, defaults);
                if (window) {
                    assertThat(e.topk())
                            .as(key + ": a window top-K list of a namespace without")
                            .isPositive();
                    assertThat(entry.getValue().size()).as(key).isLessThanOrEqualTo(e.topk());
                } else {
                    assertThat(e.trending())
                            .as(key + ": a trending list of a namespace without")
                            .isTrue();
                }
            }
            for (Tuple t : entry.getValue()) {
                Expect e = of(t.getElement());
                if (window)
                    assertThat(e.topk()).as(key + " holds " + t.getElement()).isPositive();
                else
                    assertThat(e.trending())
                            .as(key + " holds " + t.getElement())
                            .isTrue();
            }
            if (window) {
                String[] parts = rest.split(":");
                Resolution r = Resolution.ofLabel(parts[2]);
                long start = Long.parseLong(parts[3]) * 1000;
                Expect e = ns.equals("_all") ? defaults : byNamespace.getOrDefault(ns, defaults);
                long expected = ns.equals("_all") ? r.expireAtMillis(start) : e.expireAt(r, start);
                assertThat(redis.jedis.pexpireTime(key)).as("expiry of " + key).isEqualTo(expected);
            }
        }
    }
}
