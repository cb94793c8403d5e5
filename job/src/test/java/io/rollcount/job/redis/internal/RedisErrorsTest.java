package io.rollcount.job.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.exceptions.JedisDataException;

/** The error prefixes of {@code apply.lua} and of {@link RedisErrors} are the same lists. */
class RedisErrorsTest {
    private static final String LUA = RedisApplyScript.SCRIPT.source();

    /** The strings of the Lua table {@code local NAME = {'A', 'B', ...}} in {@code apply.lua}. */
    private static List<String> luaList(String name) {
        Matcher table = Pattern.compile("(?m)^local " + name + " = \\{([^}]*)}").matcher(LUA);
        assertThat(table.find()).as("apply.lua declares local %s = {...}", name).isTrue();
        List<String> items = new ArrayList<>();
        Matcher item = Pattern.compile("'([^']*)'").matcher(table.group(1));
        while (item.find()) items.add(item.group(1));
        return items;
    }

    @Test
    void luaTransientErrorsAreTheJavaList() {
        assertThat(luaList("TRANSIENT")).containsExactlyInAnyOrderElementsOf(RedisErrors.TRANSIENT);
    }

    @Test
    void luaAccessErrorsAreTheJavaList() {
        assertThat(luaList("ACCESS")).containsExactlyInAnyOrderElementsOf(RedisErrors.ACCESS);
    }

    @Test
    void luaUsesBothListsToClassify() {
        assertThat(LUA).contains("ipairs(TRANSIENT)").contains("ipairs(ACCESS)");
    }

    @Test
    void everyListedPrefixClassifiesAsItsList() {
        for (String p : RedisErrors.TRANSIENT) {
            JedisDataException e = new JedisDataException(p + " something");
            assertThat(RedisErrors.isTransient(e)).as(p).isTrue();
            assertThat(RedisErrors.isAccessError(e)).as(p).isFalse();
        }
        for (String p : RedisErrors.ACCESS) {
            JedisDataException e = new JedisDataException(p + " something");
            assertThat(RedisErrors.isAccessError(e)).as(p).isTrue();
            assertThat(RedisErrors.isTransient(e)).as(p).isFalse();
        }
        assertThat(RedisErrors.isTransient(new JedisDataException("WRONGTYPE Operation against a key")))
                .isFalse();
    }
}
