package io.rollcount.job.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.model.Resolution;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reading and checking {@code --policies} files: what each field means, the first match, and one clear line for every mistake. */
class PoliciesFileTest {
    private static final long DAY = Duration.ofDays(1).toMillis();
    private static final long DEDUP = Duration.ofHours(24).toMillis();

    @TempDir
    Path dir;

    private static Policies parse(String yaml) {
        return PoliciesFile.parse("p.yaml", yaml, 100, DEDUP);
    }

    private static String error(String yaml) {
        try {
            parse(yaml);
        } catch (PoliciesException e) {
            assertThat(e.getMessage()).doesNotContain("\n").startsWith("p.yaml: ");
            return e.getMessage();
        }
        throw new AssertionError("accepted: " + yaml);
    }

    @Test
    void theSampleFileReadsAsDocumented() {
        Policies p = PoliciesFile.load(Path.of("..", "samples", "policies.yaml"), 100, DEDUP);
        NamespacePolicy ad = p.forNamespace("ad");
        assertThat(ad.resolutionMask()).isEqualTo(bits(Resolution.M1, Resolution.H1, Resolution.D1));
        assertThat(ad.retentionMillis(Resolution.M1)).isEqualTo(7 * DAY);
        assertThat(ad.retentionMillis(Resolution.H1)).isEqualTo(Resolution.H1.ttlMillis);
        assertThat(ad.retentionMillis(Resolution.D1)).isEqualTo(800 * DAY);
        assertThat(ad.anyUniques()).isFalse();
        assertThat(ad.trending()).isFalse();
        assertThat(ad.topk()).isEqualTo(20);
        assertThat(ad.dedupMillis()).isEqualTo(7 * DAY);

        NamespacePolicy post = p.forCounter("post:123:likes");
        assertThat(post.resolutionMask()).isEqualTo(bits(Resolution.M1, Resolution.H1));
        assertThat(post.uniques(Resolution.D1)).isTrue();
        assertThat(post.uniques(Resolution.H1)).isFalse();
        assertThat(post.uniquesAll()).isFalse();
        assertThat(post.trending()).isTrue();
        assertThat(post.topk()).isEqualTo(100);
        assertThat(post.dedupMillis()).isEqualTo(DEDUP);

        assertThat(p.forNamespace("api").dedup()).isFalse();
        assertThat(p.forNamespace("api-v2").topk()).isZero();
        // no rule: every default
        NamespacePolicy video = p.forCounter("video:9");
        assertThat(video).isSameAs(p.defaults());
        assertThat(video.resolutionMask()).isEqualTo(NamespacePolicy.ALL_RESOLUTIONS);
        assertThat(video.uniquesMask).isEqualTo(NamespacePolicy.DEFAULT_UNIQUES);
        for (Resolution r : Resolution.all())
            assertThat(video.retentionMillis(r)).isEqualTo(r.ttlMillis);
        assertThat(p.describe())
                .hasSize(5)
                .anySatisfy(
                        l -> assertThat(l)
                                .contains("rule 3 'api*'")
                                .contains(
                                        "resolutions 5s,1m; retention 5s 2h, 1m 1d; uniques off; trending off; topk off; dedup off"));
        assertThat(p.maxDedupMillis()).isEqualTo(7 * DAY);
    }

    @Test
    void theFirstMatchingRuleApplies() {
        Policies p = parse("""
                - match: adx
                  topk: 5
                - match: "ad*"
                  topk: 7
                - match: "?ideo"
                  trending: off
                """);
        assertThat(p.forNamespace("adx").topk()).isEqualTo(5);
        assertThat(p.forNamespace("ad").topk()).isEqualTo(7);
        assertThat(p.forNamespace("ads").topk()).isEqualTo(7);
        assertThat(p.forNamespace("xad").topk()).isEqualTo(100);
        assertThat(p.forNamespace("video").trending()).isFalse();
        assertThat(p.forNamespace("vvideo").trending()).isTrue();
        // cached answers are the same
        assertThat(p.forNamespace("ads")).isSameAs(p.forNamespace("ads"));
    }

    @Test
    void valuesAndTheirSpellings() {
        Policies p = parse("""
                - {match: a, uniques: [all], topk: true, dedup: 90s, resolutions: []}
                - {match: b, uniques: true, topk: off, dedup: off, trending: no}
                - {match: c, uniques: off, dedup: on, retention: {5s: 30m, 1d: 2d}}
                """);
        NamespacePolicy a = p.forNamespace("a");
        assertThat(a.uniquesAll()).isTrue();
        assertThat(a.uniques(Resolution.H1)).isFalse();
        assertThat(a.topk()).isEqualTo(100);
        assertThat(a.dedupMillis()).isEqualTo(90_000);
        assertThat(a.resolutionMask()).isZero();
        NamespacePolicy b = p.forNamespace("b");
        assertThat(b.uniquesMask).isEqualTo(NamespacePolicy.DEFAULT_UNIQUES);
        assertThat(b.topk()).isZero();
        assertThat(b.dedup()).isFalse();
        assertThat(b.trending()).isFalse();
        NamespacePolicy c = p.forNamespace("c");
        assertThat(c.anyUniques()).isFalse();
        assertThat(c.dedupMillis()).isEqualTo(DEDUP);
        assertThat(c.expireAtMillis(Resolution.S5, 0)).isEqualTo(5_000 + 1_800_000);
        assertThat(c.expireAtMillis(Resolution.D1, 0)).isEqualTo(3 * DAY);
    }

    @Test
    void policiesSurviveJavaSerializationAsInTheJobGraph() throws Exception {
        Policies p = parse("- {match: 'ad*', resolutions: [1m], dedup: false}\n");
        p.forNamespace("ad"); // fills the cache, which does not travel
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(p);
        }
        Policies q;
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            q = (Policies) in.readObject();
        }
        assertThat(q.forNamespace("ads").describe())
                .isEqualTo(p.forNamespace("ads").describe());
        assertThat(q.forNamespace("x").describe()).isEqualTo(p.defaults().describe());
    }

    @Test
    void everyMistakeIsOneLineNamingTheFileTheRuleAndTheField() {
        assertThat(error("- match: ad\n  resolution: [1m]\n"))
                .isEqualTo(
                        "p.yaml: rule 1 (line 2): field 'resolution': unknown field; a rule has match, resolutions, retention, uniques, trending, topk, dedup");
        assertThat(error("- match: ad\n- match: post\n  resolutions: [1m, 2m]\n"))
                .startsWith("p.yaml: rule 2 (line 3): field 'resolutions': unknown resolution '2m'");
        assertThat(error("- match: ad\n  resolutions: [1m, 1m]\n"))
                .contains("rule 1")
                .contains("field 'resolutions'")
                .contains("twice");
        assertThat(error("- match: ad\n  retention: {1h: 3x}\n"))
                .contains("rule 1 (line 2): field 'retention.1h': unknown duration '3x'");
        assertThat(error("- match: ad\n  retention: {7m: 3d}\n"))
                .contains("field 'retention': unknown resolution '7m'");
        assertThat(error("- match: ad\n  resolutions: [1m]\n  retention: {5s: 3d}\n"))
                .contains("field 'retention'")
                .contains("'5s' is neither among the rule's resolutions nor its uniques");
        assertThat(error("- match: ad\n  dedup: forever\n")).contains("field 'dedup': unknown duration 'forever'");
        assertThat(error("- match: ad\n  dedup: 0s\n")).contains("field 'dedup': '0s' is shorter than 1s");
        assertThat(error("- match: ad\n  uniques: [5m]\n")).contains("field 'uniques': unknown value '5m'");
        assertThat(error("- match: ad\n  topk: 0\n")).contains("field 'topk': '0': expected 1 to 10000");
        assertThat(error("- match: ad\n  topk: many\n")).contains("field 'topk'");
        assertThat(error("- match: ad\n  trending: sometimes\n")).contains("field 'trending': expected true or false");
        assertThat(error("- match: \"\"\n"))
                .isEqualTo("p.yaml: rule 1 (line 1): field 'match': empty: give a namespace or a glob such as 'ad*'");
        assertThat(error("- match:\n  topk: 3\n")).contains("rule 1").contains("field 'match'");
        assertThat(error("- topk: 3\n"))
                .isEqualTo(
                        "p.yaml: rule 1 (line 1): field 'match': missing: every rule needs a namespace or a glob such as 'ad*'");
        assertThat(error("- match: 'ad:1'\n")).contains("field 'match'").contains("':'");
        assertThat(error("- match: ad\n- 3\n")).startsWith("p.yaml: rule 2 (line 2): expected a mapping");
        assertThat(error("- match: ad\n  match: post\n"))
                .isEqualTo("p.yaml: rule 1 (line 2): field 'match': given twice");
    }

    @Test
    void aKeyGivenTwiceAnywhereIsRefused() {
        assertThat(error("- match: ad\n  retention: {1m: 5d, 1m: 3d}\n"))
                .isEqualTo("p.yaml: rule 1 (line 2): field 'retention.1m': given twice");
        assertThat(error("- match: ad\n  retention:\n    1d: 5d\n    1m: 2d\n    1d: 3d\n"))
                .isEqualTo("p.yaml: rule 1 (line 5): field 'retention.1d': given twice");
        assertThat(error("- match: ad\n- {match: post, topk: 5, topk: 7}\n"))
                .isEqualTo("p.yaml: rule 2 (line 2): field 'topk': given twice");
        assertThat(error("- match: ad\n  retention: {'1m': 5d, \"1m\": 3d}\n"))
                .isEqualTo("p.yaml: rule 1 (line 2): field 'retention.1m': given twice");
        assertThat(error("- match: ad\n  uniques: [{a: 1, a: 2}]\n"))
                .isEqualTo("p.yaml: rule 1 (line 2): field 'uniques.a': given twice");
        assertThat(error("- match: ad\n  uniques: &u [*u]\n")).contains("field 'uniques'");
    }

    @Test
    void aDurationOutOfRangeIsRefused() {
        assertThat(error("- match: ad\n  retention: {1m: 200000000000d}\n"))
                .isEqualTo("p.yaml: rule 1 (line 2): field 'retention.1m': '200000000000d' is longer than 36500d");
        assertThat(error("- match: ad\n  retention: {1d: 36501d}\n"))
                .isEqualTo("p.yaml: rule 1 (line 2): field 'retention.1d': '36501d' is longer than 36500d");
        assertThat(error("- match: ad\n  dedup: 99999999999999999999d\n"))
                .isEqualTo("p.yaml: rule 1 (line 2): field 'dedup': '99999999999999999999d' is longer than 36500d");
        assertThat(error("- match: ad\n  dedup: 9223372036854775807d\n"))
                .isEqualTo("p.yaml: rule 1 (line 2): field 'dedup': '9223372036854775807d' is longer than 36500d");
        assertThat(parse("- {match: ad, retention: {1d: 36500d}}\n")
                        .forNamespace("ad")
                        .retentionMillis(Resolution.D1))
                .isEqualTo(36_500 * DAY);
    }

    @Test
    void aFileOverOneMibIsRefusedBeforeItIsParsed() throws Exception {
        Path big = dir.resolve("big.yaml");
        Files.writeString(big, "- match: ad\n#" + "x".repeat(PoliciesFile.MAX_BYTES));
        long start = System.nanoTime();
        assertThatThrownBy(() -> PoliciesFile.load(big, 100, DEDUP))
                .isInstanceOf(PoliciesException.class)
                .hasMessage(
                        big
                                + ": larger than 1 MiB, the most a policies file may hold (a list of rules is a few KiB): not read");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        Path justUnder = dir.resolve("ok.yaml");
        String rule = "- match: ad\n";
        Files.writeString(justUnder, rule + "\n".repeat(PoliciesFile.MAX_BYTES - rule.length()));
        assertThat(PoliciesFile.load(justUnder, 100, DEDUP).forNamespace("ad").position)
                .isEqualTo(1);
    }

    @Test
    void aRuleThatCanNeverMatchIsRefused() {
        assertThat(error("- match: '*'\n- match: post\n"))
                .isEqualTo(
                        "p.yaml: rule 2 (line 2): field 'match': 'post' can never match: rule 1 ('*') comes first and matches every namespace it does");
        assertThat(error("- match: post\n- match: ad\n- match: post\n"))
                .startsWith("p.yaml: rule 3 (line 3): field 'match'")
                .contains("rule 1 ('post')");
        assertThat(error("- match: 'ad*'\n- match: 'ads*'\n"))
                .contains("rule 2")
                .contains("rule 1 ('ad*')");
        assertThat(error("- match: 'a?'\n- match: 'ab'\n")).contains("rule 2");
        assertThat(error("- match: 'a*'\n- match: 'a?b*'\n")).contains("rule 2");
        // a narrower rule first, or rules that overlap only in part, are fine
        parse("- match: ads\n- match: 'ad*'\n- match: '*s'\n- match: 'a?'\n- match: '*'\n");
        assertThatThrownBy(() -> parse("- match: 'a?'\n- match: 'a*'\n- match: 'ab'\n"))
                .hasMessageContaining("rule 3");
    }

    @Test
    void aFileThatIsNotAListOfRulesIsRefused() throws Exception {
        assertThat(error("- match: [ad\n")).startsWith("p.yaml: not YAML: ").contains("line ");
        assertThat(error("match: ad\n"))
                .isEqualTo("p.yaml: expected a YAML list of rules (- match: ...), found a mapping (line 1)");
        assertThat(error("")).startsWith("p.yaml: holds no rules");
        assertThat(error("[]")).startsWith("p.yaml: holds no rules");
        assertThat(error("\t- match: ad")).startsWith("p.yaml: not YAML");
        Path binary = dir.resolve("b.yaml");
        Files.write(binary, new byte[] {(byte) 0xff, (byte) 0xfe, 0, 1, 2});
        assertThatThrownBy(() -> PoliciesFile.load(binary, 100, DEDUP))
                .isInstanceOf(PoliciesException.class)
                .hasMessageStartingWith(binary + ": ");
        assertThatThrownBy(() -> PoliciesFile.load(dir.resolve("missing.yaml"), 100, DEDUP))
                .isInstanceOf(PoliciesException.class)
                .hasMessageStartingWith(dir.resolve("missing.yaml") + ": cannot read the policies file");
    }

    private static int bits(Resolution... rs) {
        int m = 0;
        for (Resolution r : rs) m |= 1 << r.ordinal();
        return m;
    }
}
