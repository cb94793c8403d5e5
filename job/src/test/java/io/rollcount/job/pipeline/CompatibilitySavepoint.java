package io.rollcount.job.pipeline;

import io.rollcount.job.JobSettings;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.resps.Tuple;

/**
 * The savepoint of the file job that {@link SavepointCompatibilityIT} restores, kept in the test resources
 * under {@value #RESOURCE}, and what goes with it:
 * <ul>
 *   <li>{@code input/events-0.jsonl}, {@code input/events-1.jsonl}: the whole input, one file per source reader;
 *       the savepoint was taken after the first {@value #HOLD_AT} lines of each;</li>
 *   <li>{@code savepoint/}: the savepoint (canonical format, RocksDB), stopped mid-stream;</li>
 *   <li>{@code redis.txt}: the keys Redis held under the job's key prefix at that savepoint
 *       ({@link #dumpRedis}), written back under a test's own prefix before the restore ({@link #loadRedis});</li>
 *   <li>{@code expected-values.txt}, {@code expected-users.txt}: the totals, window sums and unique users of the
 *       whole input, key by key under the prefix {@value #PREFIX}.</li>
 * </ul>
 * The savepoint's source splits name the input files by absolute path, so the input is read from
 * {@value #INPUT_DIR} in both runs ({@link #placeInput}). Event times lie in the year 2100, so that no window
 * key of the input has expired whenever the test runs. {@link MakeCompatibilitySavepoint} makes all of it.
 */
final class CompatibilitySavepoint {
    private CompatibilitySavepoint() {}

    /** The folder of the test resources, on the class path. */
    static final String RESOURCE = "savepoints/v1-files";
    /** Where the input files are read from, in the run that made the savepoint and in every restore. */
    static final String INPUT_DIR = "/tmp/rollcount-savepoint-v1-files/input";
    /** The key prefix of the run that made the savepoint; {@code redis.txt} names its keys under it. */
    static final String PREFIX = "rcsp1";

    static final int FILES = 2;
    static final int EVENTS_PER_FILE = 3_000;
    /** Each source reader holds after this many lines of its file, until the savepoint. */
    static final int HOLD_AT = 1_500;
    /** 2100-01-01T00:00:00Z. */
    static final long START = 4_102_444_800_000L;
    /** Events per second of event time over both files: the input covers 20 minutes. */
    static final double EVENTS_PER_SECOND = 5;

    /** The options of both runs: the files of {@link #INPUT_DIR}, dead letters in {@code dir}. */
    static JobSettings options(String redisUrl, String prefix, Path dir) {
        return io.rollcount.job.support.JobRuns.fileSettings(
                Path.of(INPUT_DIR), redisUrl, prefix, Duration.ofMillis(500), dir);
    }

    /** The generated input: several namespaces, event ids with redeliveries, users, negative deltas. */
    static List<List<Generated>> generate() {
        EventGenerator gen =
                new EventGenerator(2100, EventGenerator.Workload.zipf, 400, 150, START, EVENTS_PER_SECOND, 2_000, 0.05);
        List<List<Generated>> files = new ArrayList<>();
        for (int f = 0; f < FILES; f++) files.add(new ArrayList<>());
        for (int i = 0; i < FILES * EVENTS_PER_FILE; i++) files.get(i % FILES).add(gen.next());
        return files;
    }

    static Path inputFile(Path inputDir, int f) {
        return inputDir.resolve("events-" + f + ".jsonl");
    }

    static void writeInput(Path inputDir, List<List<Generated>> files) throws IOException {
        Files.createDirectories(inputDir);
        for (int f = 0; f < files.size(); f++) {
            try (BufferedWriter out = Files.newBufferedWriter(inputFile(inputDir, f), StandardCharsets.UTF_8)) {
                for (Generated g : files.get(f)) {
                    out.write(g.line());
                    out.write('\n');
                }
            }
        }
    }

    /** Copies the input files of {@code from} to {@link #INPUT_DIR} (each by a rename, whole). */
    static void placeInput(Path from) throws IOException {
        Path to = Files.createDirectories(Path.of(INPUT_DIR));
        for (int f = 0; f < FILES; f++) {
            Path tmp = Files.createTempFile(to.getParent(), "events-" + f, ".part");
            Files.copy(inputFile(from, f), tmp, StandardCopyOption.REPLACE_EXISTING);
            Files.move(tmp, inputFile(to, f), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
    }

    private static final Pattern LINE =
            Pattern.compile("\\{\"counter\":\"([^\"]+)\"(?:,\"delta\":(-?\\d+))?,\"ts\":(\\d+)"
                    + "(?:,\"event_id\":\"([^\"]+)\")?(?:,\"user\":\"([^\"]+)\")?}");

    /** The records of an input file, as the generator wrote them. */
    static List<Generated> read(Path file) throws IOException {
        List<Generated> out = new ArrayList<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            Matcher m = LINE.matcher(line);
            if (!m.matches()) throw new IllegalArgumentException(file + ": not a generated line: " + line);
            long delta = m.group(2) == null ? 1 : Long.parseLong(m.group(2));
            out.add(new Generated(line, m.group(1), delta, Long.parseLong(m.group(3)), m.group(4), m.group(5), false));
        }
        return out;
    }

    /** The ground truth of the whole input of {@code inputDir}, in the order the job's readers read it. */
    static GroundTruth truth(Path inputDir) throws IOException {
        GroundTruth truth = new GroundTruth();
        for (int f = 0; f < FILES; f++) for (Generated g : read(inputFile(inputDir, f))) truth.add(g);
        return truth;
    }

    /** {@code key value} per line, sorted: every total and window sum of {@code truth} under {@link #PREFIX}. */
    static List<String> expectedValues(GroundTruth truth) {
        List<String> out = new ArrayList<>();
        new TreeMap<>(truth.redisKeys(PREFIX)).forEach((k, v) -> out.add(k + " " + v));
        return out;
    }

    /** {@code key user,user,...} per line, sorted: every uniques key of {@code truth} under {@link #PREFIX}. */
    static List<String> expectedUsers(GroundTruth truth) {
        List<String> out = new ArrayList<>();
        new TreeMap<>(truth.uniquesKeys(PREFIX))
                .forEach((k, users) -> out.add(k + " " + String.join(",", new TreeSet<>(users))));
        return out;
    }

    // ------------------------------------------------------------------ Redis at the savepoint

    private static final Base64.Encoder B64 = Base64.getEncoder();
    private static final Base64.Decoder UNB64 = Base64.getDecoder();

    /**
     * Every key under {@code prefix} but the lease, one per line, sorted:
     * {@code <type> <expire-at ms, -1: none> <key, the prefix as $P> <value>}, the value of a string as base64, of a
     * sorted set as {@code base64(member):score} joined by commas, of a hash as {@code base64(field):base64(value)}
     * joined by commas.
     */
    static List<String> dumpRedis(Jedis jedis, String prefix) {
        List<String> out = new ArrayList<>();
        for (String key : new TreeSet<>(io.rollcount.job.support.RedisTestSupport.keysOf(jedis, prefix))) {
            if (key.equals(prefix + ":_lease")) continue; // taken again from the writers' state
            String type = jedis.type(key);
            String value = switch (type) {
                case "string" -> B64.encodeToString(jedis.get(key.getBytes(StandardCharsets.UTF_8)));
                case "zset" -> {
                    List<String> members = new ArrayList<>();
                    for (Tuple t : jedis.zrangeWithScores(key.getBytes(StandardCharsets.UTF_8), 0, -1)) {
                        members.add(B64.encodeToString(t.getBinaryElement()) + ":" + t.getScore());
                    }
                    yield String.join(",", members);
                }
                case "hash" -> {
                    List<String> fields = new ArrayList<>();
                    new TreeMap<>(jedis.hgetAll(key))
                            .forEach((k, v) -> fields.add(B64.encodeToString(k.getBytes(StandardCharsets.UTF_8)) + ":"
                                    + B64.encodeToString(v.getBytes(StandardCharsets.UTF_8))));
                    yield String.join(",", fields);
                }
                default -> throw new IllegalStateException(key + ": a " + type + ", not kept");
            };
            out.add(type + " " + jedis.pexpireTime(key) + " " + renamed(key, prefix, "$P") + " " + value);
        }
        return out;
    }

    /**
     * Writes the keys of {@code dump} ({@link #dumpRedis}) under {@code prefix}. Keys that expire by the wall clock
     * rather than with a window of the input (before {@link #START}: the watermarks of the run's writers) are left
     * out, so that a restore finds the same keys whenever it runs.
     */
    static int loadRedis(Jedis jedis, List<String> dump, String prefix) {
        int loaded = 0;
        for (String line : dump) {
            String[] f = line.split(" ", 4);
            long expireAt = Long.parseLong(f[1]);
            if (expireAt >= 0 && expireAt < START) continue;
            byte[] key = renamed(f[2], "$P", prefix).getBytes(StandardCharsets.UTF_8);
            jedis.del(key);
            switch (f[0]) {
                case "string" -> jedis.set(key, UNB64.decode(f[3]));
                case "zset" -> {
                    for (String m : f[3].split(",")) {
                        int eq = m.indexOf(':');
                        jedis.zadd(key, Double.parseDouble(m.substring(eq + 1)), UNB64.decode(m.substring(0, eq)));
                    }
                }
                case "hash" -> {
                    for (String m : f[3].split(",")) {
                        int eq = m.indexOf(':');
                        jedis.hset(key, UNB64.decode(m.substring(0, eq)), UNB64.decode(m.substring(eq + 1)));
                    }
                }
                default -> throw new IllegalArgumentException("a key of type " + f[0]);
            }
            if (expireAt >= 0) jedis.pexpireAt(key, expireAt);
            loaded++;
        }
        return loaded;
    }

    /** {@code key} with each {@code from:} (the prefix, also inside a hash tag) made {@code to:}. */
    private static String renamed(String key, String from, String to) {
        return key.replace(from + ":", to + ":");
    }

    /** Copies the folder {@code from} into {@code to}, recursively. */
    static void copyFolder(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(target);
                else Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    /** Lines of {@code key ...} as a map from key to the rest. */
    static Map<String, String> byKey(List<String> lines) {
        Map<String, String> out = new TreeMap<>();
        for (String l : lines) {
            int sp = l.indexOf(' ');
            out.put(l.substring(0, sp), l.substring(sp + 1));
        }
        return out;
    }

    static Set<String> users(String joined) {
        return new TreeSet<>(List.of(joined.split(",")));
    }
}
