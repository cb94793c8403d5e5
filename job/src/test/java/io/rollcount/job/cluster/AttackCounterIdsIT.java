package io.rollcount.job.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.support.JobOnMiniClusterTest;
import io.rollcount.job.support.JobRuns;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 7 item 4: counter ids that look like attacks (CRLF and RESP injection, Lua, glob patterns such as
 * {@code *}, key-shaped text, very long ids, invalid UTF-8, odd Unicode) are either counted under exactly
 * their own keys ({@code <prefix>:{<id>}:...}, with exactly their own value) or dead-lettered, never both,
 * never written under another key, and never able to touch a key outside the prefix. A MiniCluster run of
 * the whole job against the real Redis: each id gets its own distinct delta so that a count under a wrong
 * key would show.
 */
class AttackCounterIdsIT extends JobOnMiniClusterTest {
    private static final long TS =
            io.rollcount.job.support.RecentTime.HOUR_START; // window keys expire at end + retention

    private final String sentinel = "pwned-" + UUID.randomUUID().toString().substring(0, 8);

    @AfterEach
    void deleteSentinel() {
        redis.jedis.del(sentinel);
    }

    /** The ids, as JSON string contents (escapes allowed), each to be sent once with its own delta. */
    private List<String> jsonIds() {
        String s = sentinel;
        List<String> ids = new ArrayList<>(List.of(
                // CRLF and RESP injection: a second command smuggled after a line break
                "a\\r\\nSET\\r\\n" + s + "\\r\\n1",
                "*3\\r\\n$3\\r\\nSET\\r\\n$8\\r\\n" + s + "\\r\\n$1\\r\\n1\\r\\n",
                "lf\\nonly",
                "cr\\ronly",
                "nul\\u0000byte",
                "esc\\u001b[31m",
                "del\\u007f",
                // Lua: text that would run if it were concatenated into a script
                "redis.call('SET','" + s + "','1')",
                "')redis.call('SET','" + s + "','1')--",
                "\\\"]]..redis.call('SET','" + s + "','1')..[[",
                "return(redis.call('FLUSHALL'))",
                "KEYS[1]",
                "ARGV[1]",
                "--[[",
                "]]",
                // glob patterns and key-shaped text
                "*",
                "?",
                "[a-z]*",
                "\\\\*",
                rc("*"),
                "rc:*:total",
                ":",
                "::",
                "a:b:c:d:e",
                "total",
                "_v:total",
                "meta:watermark",
                "top:_all:1m:0",
                // braces (the hash tag of every key) and whitespace: invalid by contract
                "a}:total",
                "{a}",
                "}",
                "x y",
                "tab\\tx",
                "nbsp\\u00a0x",
                // shell, format strings, JSON and path text
                "$(touch%20" + s + ")",
                "%s%n%x",
                "../../etc/passwd",
                "\\\\u0000",
                "\\\"quoted\\\"",
                "<script>alert(1)</script>",
                // odd Unicode: accents, emoji, right-to-left override, zero-width space, BOM, lone surrogate
                "caf\u00e9",
                "\uD83D\uDCA5boom",
                "rtl\\u202Eevil",
                "zw\\u200Bsp",
                "bom\\uFEFFx",
                "lone\\ud800x",
                // lengths: 256 bytes is the limit, multi-byte too
                "l".repeat(256),
                "l".repeat(257),
                "\u00e9".repeat(128),
                "\u00e9".repeat(129) // 2 bytes each
                ));
        return ids;
    }

    private static String rc(String s) {
        return "rc:{" + s + "}";
    }

    @Test
    void attackLookingIdsAreCountedUnderExactlyTheirOwnKeysOrDeadLettered() throws Exception {
        // Invalid UTF-8 inside the id: a lone continuation byte, a truncated sequence.
        int lines = check(
                jsonIds(), List.of(new byte[] {'a', (byte) 0x80, 'b'}, new byte[] {'x', (byte) 0xE2, (byte) 0x82}));
        // The contract's rules decide a few of them for sure.
        assertThat(counted)
                .containsKeys(
                        "*",
                        "?",
                        "[a-z]*",
                        "redis.call('SET','" + sentinel + "','1')",
                        "l".repeat(256),
                        "\u00e9".repeat(128));
        assertThat(counted).doesNotContainKeys("l".repeat(257), "\u00e9".repeat(129), "x y", "}");
        assertThat(deadLines)
                .as("invalid UTF-8, CRLF and RESP injection are dead letters")
                .contains(lines, lines - 1, 1, 2);
    }

    /**
     * An overlong encoding ({@code C0 AF}, the classic filter bypass for '/') is not valid UTF-8: it must be
     * dead-lettered as {@code invalid_utf8}, not counted under the counter {@code /} (Jackson's byte parser
     * decodes overlong 2-byte sequences without complaint, so EventParser checks non-ASCII records strictly).
     */
    @Test
    void anOverlongUtf8IdIsDeadLetteredNotCountedAsAnotherCounter() throws Exception {
        int lines = check(List.of("/"), List.of(new byte[] {(byte) 0xC0, (byte) 0xAF}));
        assertThat(deadLines).as("the overlong id is a dead letter").contains(lines);
    }

    private Map<String, Map<String, String>> counted;
    private Set<Integer> deadLines;

    /** Runs the job on one line per id; checks the rule for each; returns the number of lines. */
    private int check(List<String> ids, List<byte[]> invalidUtf8Ids) throws Exception {
        Path input = dir.resolve("attacks.jsonl");
        Map<Integer, Long> deltaByLine = new LinkedHashMap<>();
        Map<Integer, String> rawByLine = new HashMap<>();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int line = 0;
        for (int i = 0; i < ids.size(); i++) {
            long delta = 1000L + i;
            String json = "{\"counter\":\"" + ids.get(i) + "\",\"delta\":" + delta + ",\"ts\":" + TS + "}";
            out.write((json + "\n").getBytes(StandardCharsets.UTF_8));
            line++;
            deltaByLine.put(line, delta);
            rawByLine.put(line, ids.get(i));
        }
        for (byte[] bad : invalidUtf8Ids) {
            long delta = 5000L + line;
            out.write("{\"counter\":\"".getBytes(StandardCharsets.UTF_8));
            out.write(bad);
            out.write(("\",\"delta\":" + delta + ",\"ts\":" + TS + "}\n").getBytes(StandardCharsets.UTF_8));
            line++;
            deltaByLine.put(line, delta);
            rawByLine.put(line, "<invalid utf-8>");
        }
        Files.write(input, out.toByteArray());

        JobSettings o = JobRuns.fileSettings(input, redis, Duration.ofSeconds(1), dir);
        StreamExecutionEnvironment env = JobRuns.environment(o, 2, 2, null);
        JobRuns.buildFromFiles(env, o);
        env.execute("attack-counter-ids");

        // Dead letters by line.
        deadLines = new HashSet<>();
        Pattern source = Pattern.compile("\"source\":\"[^\"]*/(\\d+)\"");
        for (String dl : Files.readAllLines(Path.of(o.dlq), StandardCharsets.UTF_8)) {
            Matcher m = source.matcher(dl);
            assertThat(m.find()).as("dead letter with a source line: " + dl).isTrue();
            assertThat(deadLines.add(Integer.parseInt(m.group(1))))
                    .as("dead-lettered twice: " + dl)
                    .isTrue();
        }

        // Every count key in Redis, by the counter id inside its braces.
        counted = new HashMap<>();
        List<String> strays = new ArrayList<>();
        String head = redis.prefix + ":{";
        List<String> tops = new ArrayList<>();
        for (String key : redis.keys()) {
            if (key.startsWith(redis.prefix + ":meta:") || key.startsWith(redis.prefix + ":_")) continue;
            if (key.startsWith(redis.prefix + ":top:") || key.startsWith(redis.prefix + ":trending:")) {
                // Namespace lists: an id's namespace is text before its first ':', whatever it looks like;
                // its members must be exactly the ids that were counted.
                tops.add(key);
                continue;
            }
            int close = key.lastIndexOf("}:");
            if (!key.startsWith(head) || close < head.length()) {
                strays.add(key);
                continue;
            }
            String counter = key.substring(head.length(), close);
            String suffix = key.substring(close + 2);
            if (suffix.startsWith("_")) continue; // bookkeeping of that counter
            counted.computeIfAbsent(counter, c -> new HashMap<>()).put(suffix, redis.jedis.get(key));
        }
        assertThat(strays).as("keys under the prefix that are not a counter's").isEmpty();
        for (String top : tops) {
            for (String member : redis.jedis.zrange(top, 0, -1)) {
                assertThat(counted)
                        .as("member " + member + " of " + top + " is a counted id")
                        .containsKey(member);
            }
        }
        assertThat(redis.jedis.exists(sentinel))
                .as("a key outside the prefix written by an injection")
                .isFalse();

        // Each line: dead-lettered, or counted under exactly its own key with exactly its own delta; never both.
        List<String> problems = new ArrayList<>();
        Set<String> expectedCounters = new HashSet<>();
        int countedLines = 0;
        for (var e : deltaByLine.entrySet()) {
            int ln = e.getKey();
            long delta = e.getValue();
            String raw = rawByLine.get(ln);
            String id = decodedId(raw);
            boolean dead = deadLines.contains(ln);
            Map<String, String> keys = id == null ? null : counted.get(id);
            if (dead && keys != null) problems.add("line " + ln + " (" + raw + ") dead-lettered and counted");
            if (!dead && keys == null)
                problems.add("line " + ln + " (" + raw + ") neither dead-lettered nor counted under its own key");
            if (keys != null) {
                countedLines++;
                expectedCounters.add(id);
                if (!Long.toString(delta).equals(keys.get("total")))
                    problems.add("line " + ln + " total " + keys.get("total") + " != " + delta);
                for (Resolution r : Resolution.all()) {
                    String suffix = r.label + ":" + Math.floorDiv(r.windowStart(TS), 1000L);
                    if (!Long.toString(delta).equals(keys.get(suffix)))
                        problems.add("line " + ln + " " + suffix + " = " + keys.get(suffix));
                }
                if (keys.size() != 1 + Resolution.all().length)
                    problems.add("line " + ln + " has keys " + keys.keySet());
            }
        }
        Set<String> unexpected = new HashSet<>(counted.keySet());
        unexpected.removeAll(expectedCounters);
        assertThat(problems)
                .as("dead-lettered lines " + new java.util.TreeSet<>(deadLines) + "; counters not asked for "
                        + unexpected)
                .isEmpty();
        assertThat(unexpected).as("counters in Redis that no line asked for").isEmpty();
        System.out.println("attack ids: " + countedLines + " counted under their own keys, " + deadLines.size()
                + " dead-lettered, of " + deltaByLine.size());
        return line;
    }

    /** The Java string a JSON string body decodes to (only the escapes used above), or null for invalid UTF-8. */
    private static String decodedId(String raw) {
        if (raw.equals("<invalid utf-8>")) return null;
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            char n = raw.charAt(++i);
            switch (n) {
                case 'r' -> sb.append('\r');
                case 'n' -> sb.append('\n');
                case 't' -> sb.append('\t');
                case '"' -> sb.append('"');
                case '\\' -> sb.append('\\');
                case 'u' -> {
                    sb.append((char) Integer.parseInt(raw.substring(i + 1, i + 5), 16));
                    i += 4;
                }
                default -> throw new IllegalArgumentException("escape \\" + n + " in " + raw);
            }
        }
        return sb.toString();
    }
}
