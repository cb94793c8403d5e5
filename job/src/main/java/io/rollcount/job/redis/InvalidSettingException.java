package io.rollcount.job.redis;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A setting a connector's builder refuses, thrown by the setter (or by {@code build()} for what depends on
 * several settings): its message names the setter, {@code RedisSink.builder().setFlushInterval: must be at least
 * 1 ms, got 0 ms}. Whoever maps the options of a command line to the builder ({@code RollcountJob}) can say the
 * same with the names of its options instead ({@link #messageNaming}).
 */
public final class InvalidSettingException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private static final Pattern SETTER = Pattern.compile("\\{(set[A-Za-z]+)}");

    private final String builder;
    private final String setter;
    private final String problem;

    /**
     * @param builder the builder, e.g. {@code RedisSink.builder()}
     * @param setter the setter at fault, e.g. {@code setFlushInterval}
     * @param problem what is wrong; another setter it mentions is written in braces, {@code {setCluster}}
     */
    InvalidSettingException(String builder, String setter, String problem) {
        super(builder + "." + setter + ": " + render(problem, Map.of()));
        this.builder = builder;
        this.setter = setter;
        this.problem = problem;
    }

    /** The setter at fault, e.g. {@code setUrl}. */
    public String setter() {
        return setter;
    }

    /** The builder whose setter refused, e.g. {@code RedisEndpoint.builder()}. */
    public String builder() {
        return builder;
    }

    /**
     * The message with the setters (the one at fault and any it mentions) named by {@code names} (setter to the
     * option that sets it); a setter missing from {@code names} keeps its own name.
     */
    public String messageNaming(Map<String, String> names) {
        String who = names.get(setter);
        return (who != null ? who : builder + "." + setter) + ": " + render(problem, names);
    }

    private static String render(String problem, Map<String, String> names) {
        Matcher m = SETTER.matcher(problem);
        StringBuilder out = new StringBuilder();
        while (m.find()) m.appendReplacement(out, Matcher.quoteReplacement(names.getOrDefault(m.group(1), m.group(1))));
        m.appendTail(out);
        return out.toString();
    }
}
