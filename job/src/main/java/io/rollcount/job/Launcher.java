package io.rollcount.job;

import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.redis.PrefixGuard;
import io.rollcount.job.redis.RedisClusterDownException;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.util.Messages;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The one start sequence of the job, for every way it starts: {@link RollcountJob#main} ({@code flink run}'s
 * client, or an application cluster's JobManager), {@code ./rollcount run}, the demo and the benchmarks. Each
 * caller makes a launcher for its {@link Place}, runs {@link #checkStart} and then builds the job with
 * {@link JobConnectors#assemble} (or, the benchmarks, with {@link Pipeline#build} and sinks of their own).
 *
 * <p>{@link #checkStart} runs the checks in this order, so that a refused start changes nothing:
 * <ol>
 *   <li>in an application cluster, {@code --fresh} (see {@link #refuseFreshInApplicationMode}), and nothing
 *       else: {@code main} runs there again at every JobManager failover, and the Redis sink's writers check
 *       the prefix with the lease token in the job graph or restored from their state ({@link RollcountJob});
 *   <li>Redis answers and is what {@code --redis.cluster} says, and a Redis Cluster is not down. Where the job
 *       runs here ({@link Place#HERE}) a Redis that does not answer is a failure; {@code flink run}'s client
 *       may not reach the Redis the TaskManagers reach, so there it is a warning and the writers still check;
 *   <li>the dead-letter file of a files job, if another running job holds it;
 *   <li>the checkpoint or savepoint to restore from ({@link RestorePath}): it must be readable; from the client
 *       a path missing here may be there where the JobManager runs;
 *   <li>the key prefix ({@link PrefixGuard}): another running job's lease refuses every start; an earlier
 *       job's keys refuse a start that neither restores nor starts over; with {@code --fresh} they are
 *       deleted, last, once every other check has passed.
 * </ol>
 * A refusal is a {@link RefusedStartException} of one line that says what to do ({@code ./rollcount} exit code
 * 2; with {@code flink run} the submission's root cause). A Redis that does not answer here is an
 * {@link IllegalStateException} of one line (exit code 1).
 */
public final class Launcher {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Launcher.class);

    /** Where {@code main} runs, relative to the Flink that runs the job. */
    public enum Place {
        /** A Flink of its own in this JVM ({@code ./rollcount run}, the demo, the benchmarks). */
        HERE,
        /** The client of a cluster ({@code flink run}): the job runs elsewhere, maybe beyond this host's network. */
        CLIENT,
        /**
         * An application cluster's JobManager ({@code execution.target} {@code embedded}, set by Flink's
         * {@code ApplicationClusterEntryPoint}), where {@code main} runs at every start, also after a failover.
         */
        APPLICATION;

        /** {@link #APPLICATION} where {@code conf} is an application cluster's, else {@link #CLIENT}. */
        public static Place ofCluster(ReadableConfig conf) {
            return EMBEDDED_TARGET.equals(conf.get(DeploymentOptions.TARGET)) ? APPLICATION : CLIENT;
        }
    }

    /** The {@code execution.target} of an application cluster (Flink's {@code EmbeddedExecutor.NAME}). */
    static final String EMBEDDED_TARGET = "embedded";

    private final JobSettings settings;
    private final Place place;
    private final String resumeHint;
    private final boolean startsOver;
    /** The token of the prefix's lease the job's writers hold; null: a new one, or the one their state restores. */
    private final String leaseToken;

    private Launcher(JobSettings settings, Place place, String resumeHint, boolean startsOver, String leaseToken) {
        this.settings = settings;
        this.place = place;
        this.resumeHint = resumeHint;
        this.startsOver = startsOver;
        this.leaseToken = leaseToken;
    }

    /**
     * A launcher of the job of {@code settings} at {@code place}; {@code resumeHint} says how a stopped job of the
     * prefix would be resumed, for the refusal of a start over its keys (e.g. {@code --resume PATH}).
     */
    public static Launcher of(JobSettings settings, Place place, String resumeHint) {
        return new Launcher(settings, place, resumeHint, false, null);
    }

    /**
     * The same launcher for a start that clears what it counts itself (the demo its counters, a benchmark its
     * prefix): an earlier job's keys do not refuse it; a running job's lease still does.
     */
    public Launcher startingOver() {
        return new Launcher(settings, place, resumeHint, true, leaseToken);
    }

    /**
     * The same launcher for a job whose writers hold the prefix's lease with {@code token} (the token of the run a
     * resumed run continues; null: a new one, or the one the writers' restored state holds). A lease of this token
     * does not refuse the start.
     */
    public Launcher holdingLease(String token) {
        return new Launcher(settings, place, resumeHint, startsOver, token);
    }

    /**
     * The same launcher for {@code changed}, settings that differ from its own only in what the start checks do not
     * look at (the demo's broker, whose address is known once it runs): the same Redis, key prefix and
     * {@code --fresh}.
     */
    public Launcher withSettings(JobSettings changed) {
        if (!changed.redis.equals(settings.redis) || changed.fresh != settings.fresh) {
            throw new IllegalArgumentException(
                    "the start checks passed for other Redis settings or --fresh: " + changed);
        }
        return new Launcher(changed, place, resumeHint, startsOver, leaseToken);
    }

    public Place place() {
        return place;
    }

    /**
     * The start checks (see the class comment) of a start that restores {@code restorePath} (a checkpoint or
     * savepoint; null: none), which {@code restoreOption} gave (for messages, e.g. {@code --resume}).
     */
    public void checkStart(String restorePath, String restoreOption) {
        if (place == Place.APPLICATION) {
            refuseFreshInApplicationMode(settings);
            LOG.info(
                    "application mode: key prefix '{}' is checked by the job's Redis writers (lease {}:_lease), not here",
                    settings.redis.keyPrefix(),
                    settings.redis.keyPrefix());
            return;
        }
        RedisEndpoint endpoint =
                refusing(IllegalArgumentException.class, () -> JobConnectors.redisEndpoint(settings.redis));
        boolean reached = redisAnswers(endpoint);
        refusing(IllegalStateException.class, this::refuseSharedDeadLetterFile);
        String unreadable = RestorePath.refusal(restoreOption, restorePath, place == Place.HERE);
        if (unreadable != null) throw new RefusedStartException(unreadable);
        if (!reached) return;
        String refusal = checkPrefix(endpoint, restorePath != null);
        if (refusal != null) throw new RefusedStartException(refusal);
    }

    /**
     * Whether Redis answers, checked against {@code --redis.cluster}. A mismatch or a Redis Cluster that is down
     * refuses the start; a Redis that does not answer fails it here, and from a client is a warning (false).
     */
    private boolean redisAnswers(RedisEndpoint endpoint) {
        try {
            endpoint.checkMode();
            return true;
        } catch (IllegalArgumentException | RedisClusterDownException e) {
            throw new RefusedStartException(e.getMessage());
        } catch (RuntimeException e) {
            String reason = Messages.oneLine(e);
            if (place == Place.HERE) {
                throw new IllegalStateException("cannot reach Redis at " + endpoint + " (" + reason
                        + "): start redis-server, or point --redis / $ROLLCOUNT_REDIS at one");
            }
            warnPrefixUnchecked(reason);
            return false;
        }
    }

    /** From a client that cannot reach Redis: the prefix is left to the writers, said in one line. */
    private void warnPrefixUnchecked(String reason) {
        System.err.println("rollcount: warning: could not check key prefix '" + settings.redis.keyPrefix()
                + "' from here (" + reason + "); the job's writers still refuse a prefix another job holds");
    }

    /** Another running job's dead-letter file ({@code --dlq} of a files job; with Kafka they go to the topic). */
    private void refuseSharedDeadLetterFile() {
        if (!settings.kafkaConfigured()) DeadLetterFileSink.refuseIfLocked(settings.dlq);
    }

    /**
     * The key prefix's refusal, one line, or null; with {@code --fresh} and an earlier job's keys, deletes them and
     * says so.
     */
    private String checkPrefix(RedisEndpoint endpoint, boolean restoring) {
        PrefixGuard guard = new PrefixGuard(settings.redis.keyPrefix());
        try (UnifiedJedis jedis = endpoint.client()) {
            String refusal = guard.refusal(jedis, restoring, settings.fresh || startsOver, leaseToken, resumeHint);
            if (refusal != null) return refusal;
            if (settings.fresh && !restoring && guard.earlierJob(jedis) != null) {
                long deleted = guard.clear(endpoint);
                System.err.printf(
                        "rollcount: --fresh: deleted %,d keys under key prefix '%s'; totals restart from what this run reads%n",
                        deleted, settings.redis.keyPrefix());
            }
            return null;
        } catch (JedisException e) {
            if (place == Place.HERE) throw e;
            warnPrefixUnchecked(Messages.oneLine(e));
            return null;
        }
    }

    /**
     * {@code --fresh} deletes the prefix's keys when the job starts; in an application cluster {@code main} runs
     * again at every JobManager failover, and would delete the counts of the very job it recovers.
     */
    static void refuseFreshInApplicationMode(JobSettings settings) {
        if (!settings.fresh) return;
        throw new RefusedStartException("--fresh deletes the keys of key prefix '" + settings.redis.keyPrefix()
                + "' at every start, and an application cluster runs main again at every JobManager failover:"
                + " deploy without --fresh (with a new --redis.key-prefix, or after `./rollcount run --fresh`"
                + " cleared the prefix)");
    }

    /**
     * The job's Flink settings: for {@link Place#HERE} the job's own ({@link FlinkSettings#configuration(JobSettings)});
     * on a cluster those of {@link FlinkSettings#configuration(JobSettings, ReadableConfig)} over the cluster's own
     * {@code cluster}, a cluster setting it refuses a {@link RefusedStartException}.
     */
    public Configuration settings(ReadableConfig cluster) {
        if (place == Place.HERE) return FlinkSettings.configuration(settings);
        return refusing(IllegalArgumentException.class, () -> FlinkSettings.configuration(settings, cluster));
    }

    /**
     * The production wiring of the pipeline in {@code env} ({@link JobConnectors#assemble}); a mistake found before
     * the job starts (another job's dead-letter file, an unreachable broker) is a {@link RefusedStartException}.
     */
    public void assemble(StreamExecutionEnvironment env) {
        refusing(IllegalStateException.class, () -> {
            JobConnectors.assemble(env, settings, place == Place.APPLICATION, leaseToken);
            return null;
        });
    }

    /** Runs {@code check}; its {@code refusal} (a one-line message) becomes a {@link RefusedStartException}. */
    private static <T> T refusing(Class<? extends RuntimeException> refusal, java.util.function.Supplier<T> check) {
        try {
            return check.get();
        } catch (RuntimeException e) {
            if (!refusal.isInstance(e)) throw e;
            throw new RefusedStartException(e.getMessage());
        }
    }

    private static void refusing(Class<? extends RuntimeException> refusal, Runnable check) {
        refusing(refusal, () -> {
            check.run();
            return null;
        });
    }
}
