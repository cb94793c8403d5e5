package io.rollcount.job.redis;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A Redis URL taken apart: {@code redis://[user[:password]@]host[:port][/db]} or {@code rediss://...}, user and
 * password percent-encoded, or for a Redis Cluster a list of seed nodes {@code host:port,host2:port2,...}
 * whose user info belongs to the first. Parsed by hand: {@link java.net.URI} would quote the whole URL,
 * password included, in its errors; these errors name {@code RedisEndpoint.builder().setUrl} and mask the
 * password.
 */
final class RedisUrl {
    final boolean tls;
    final String user;
    final String password;
    final int database;
    final List<String> seedHosts = new ArrayList<>();
    final List<Integer> seedPorts = new ArrayList<>();

    private final String url;

    /**
     * Parses {@code url} (trimmed). With {@code cluster} the host list is a seed list and a database other than 0
     * is refused; without it a list is refused. With {@code syntaxOnly} neither is checked.
     */
    static RedisUrl parse(String url, boolean cluster, boolean syntaxOnly) {
        return new RedisUrl(url, cluster, syntaxOnly);
    }

    private RedisUrl(String url, boolean cluster, boolean syntaxOnly) {
        this.url = url;
        String rest;
        if (url.regionMatches(true, 0, "redis://", 0, 8)) {
            tls = false;
            rest = url.substring(8);
        } else if (url.regionMatches(true, 0, "rediss://", 0, 9)) {
            tls = true;
            rest = url.substring(9);
        } else {
            throw invalid("must start with redis:// or rediss:// (got " + schemeOf(url) + ")");
        }
        // a cluster's user info belongs to the first seed: it ends before the first ',' (percent-encode a ',' in it)
        int comma = cluster ? rest.indexOf(',') : -1;
        int at = comma >= 0 ? rest.lastIndexOf('@', comma) : rest.lastIndexOf('@');
        String userInfo = at >= 0 ? rest.substring(0, at) : null;
        rest = rest.substring(at + 1);
        int colon = userInfo == null ? -1 : userInfo.indexOf(':');
        String u1 = userInfo == null ? "" : colon >= 0 ? userInfo.substring(0, colon) : userInfo;
        String p1 = colon >= 0 ? userInfo.substring(colon + 1) : null;
        user = u1.isEmpty() ? null : decode(u1, "user name");
        password = p1 == null || p1.isEmpty() ? null : decode(p1, "password");
        if (rest.indexOf('?') >= 0 || rest.indexOf('#') >= 0) {
            throw invalid("query parameters are not supported in " + redactedUrl());
        }
        String[] nodes = rest.split(",", -1);
        if (nodes.length > 1 && !cluster && !syntaxOnly) {
            throw invalid("a list of nodes is the seed list of a Redis Cluster: add {setCluster} (got " + redactedUrl()
                    + ")");
        }
        int slash = nodes[0].indexOf('/');
        String path = slash >= 0 ? nodes[0].substring(slash + 1) : "";
        addSeed(slash >= 0 ? nodes[0].substring(0, slash) : nodes[0]);
        for (int i = 1; i < nodes.length; i++) addSeed(moreSeed(nodes[i].trim(), i));
        database = database(path);
        if (cluster && !syntaxOnly && database != 0) {
            throw invalid("a Redis Cluster has database 0 only: remove '/" + database + "' ({setCluster} is set)");
        }
    }

    /** The host and port of seed node {@code i + 1} ({@code i >= 1}), without the first's scheme if it repeats it. */
    private String moreSeed(String n, int i) {
        String scheme = tls ? "rediss://" : "redis://";
        if (n.regionMatches(true, 0, "redis://", 0, 8) || n.regionMatches(true, 0, "rediss://", 0, 9)) {
            if (!n.regionMatches(true, 0, scheme, 0, scheme.length())) {
                throw invalid("every seed node takes the scheme of the first (" + scheme + ") in " + redactedUrl());
            }
            n = n.substring(scheme.length());
        }
        if (n.indexOf('@') >= 0 || n.indexOf('/') >= 0) {
            throw invalid("seed node " + (i + 1) + " must be host:port (user, password and TLS come from the first) in "
                    + redactedUrl());
        }
        return n;
    }

    private int database(String path) {
        if (path.isEmpty()) return 0;
        int db;
        try {
            db = Integer.parseInt(path);
        } catch (NumberFormatException e) {
            throw invalid("the database after '/' must be a number in " + redactedUrl());
        }
        if (db < 0) throw invalid("the database must not be negative in " + redactedUrl());
        return db;
    }

    /** Adds the host and port of {@code host[:port]} or {@code [v6]:port}; the default port where none is given. */
    private void addSeed(String hostPort) {
        String h;
        String portText = null;
        int p = RedisEndpoint.DEFAULT_PORT;
        if (hostPort.startsWith("[")) {
            int close = hostPort.indexOf(']');
            if (close < 0) throw invalid("unclosed '[' in the host of " + redactedUrl());
            h = hostPort.substring(1, close);
            String after = hostPort.substring(close + 1);
            if (after.startsWith(":")) portText = after.substring(1);
            else if (!after.isEmpty()) throw invalid("unexpected text after the host in " + redactedUrl());
        } else {
            int colon = hostPort.lastIndexOf(':');
            h = colon >= 0 ? hostPort.substring(0, colon) : hostPort;
            if (colon >= 0) portText = hostPort.substring(colon + 1);
        }
        if (h.isEmpty()) throw invalid("the host is missing in " + redactedUrl());
        if (portText != null) {
            try {
                p = Integer.parseInt(portText);
            } catch (NumberFormatException e) {
                throw invalid("the port must be a number in " + redactedUrl());
            }
            if (p < 1 || p > 65535) throw invalid("the port must be 1 to 65535 in " + redactedUrl());
        }
        seedHosts.add(h);
        seedPorts.add(p);
    }

    private String decode(String s, String what) {
        try {
            return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw invalid("bad percent-encoding in the " + what + " of " + redactedUrl());
        }
    }

    private static InvalidSettingException invalid(String problem) {
        return new InvalidSettingException(RedisEndpoint.Builder.NAME, "setUrl", problem);
    }

    private static String schemeOf(String u) {
        int i = u.indexOf("://");
        return i >= 0 ? "'" + u.substring(0, i) + "://'" : "no scheme";
    }

    /** The URL with its user info's password part masked, for error messages. */
    private String redactedUrl() {
        int schemeEnd = url.indexOf("://");
        if (schemeEnd < 0) return "the URL";
        String rest = url.substring(schemeEnd + 3);
        int at = rest.lastIndexOf('@');
        if (at < 0) return url;
        String userInfo = rest.substring(0, at);
        int colon = userInfo.indexOf(':');
        String shown = colon >= 0 ? userInfo.substring(0, colon) + ":" + RedisEndpoint.REDACTED : userInfo;
        return url.substring(0, schemeEnd + 3) + shown + rest.substring(at);
    }
}
