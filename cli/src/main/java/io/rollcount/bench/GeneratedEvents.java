package io.rollcount.bench;

import io.rollcount.job.model.Event;
import io.rollcount.job.parse.EventParser;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;

/**
 * The in-JVM source of the benchmark: Flink's {@link DataGeneratorSource} (FLIP-27, checkpointed) over
 * the indices of {@link BenchEvents}, each line made and then parsed by the job's own {@link EventParser},
 * as the Kafka source does with a record. The same source feeds Rollcount and the Flink references.
 */
final class GeneratedEvents implements GeneratorFunction<Long, Event> {
    private static final long serialVersionUID = 1L;

    private final BenchEvents events;
    /** Paced: event time is the wall clock at creation, and every {@code probeEvery}-th event is a probe. */
    private final boolean paced;

    private final long probeEvery;
    /** The event time at which the reader is held ({@link BoundaryHold}); Long.MAX_VALUE: never. */
    private final long holdFrom;

    private transient EventParser parser;
    /** The reader made its event at {@code holdFrom}, or is never held: no event time to compare any more. */
    private transient boolean reachedHold;

    private transient int subtask;

    private GeneratedEvents(BenchEvents events, boolean paced, long probeEvery, long holdFrom) {
        this.events = events;
        this.paced = paced;
        this.probeEvery = probeEvery;
        this.holdFrom = holdFrom;
    }

    /** Every event of the workload, as fast as the job takes them. */
    static DataGeneratorSource<Event> source(BenchEvents events) {
        return new DataGeneratorSource<>(
                new GeneratedEvents(events, false, 0, Long.MAX_VALUE),
                events.count,
                RateLimiterStrategy.noOp(),
                TypeInformation.of(Event.class));
    }

    /**
     * Every event of the workload, as fast as the job takes them, except that each reader is held after its first
     * event at or past {@code holdFrom} (event time, before jitter) until two checkpoints have completed
     * ({@link BoundaryHold}).
     */
    static DataGeneratorSource<Event> heldAt(BenchEvents events, long holdFrom) {
        return new DataGeneratorSource<>(
                new GeneratedEvents(events, false, 0, holdFrom),
                events.count,
                new BoundaryHold<>(),
                TypeInformation.of(Event.class));
    }

    /** The workload at {@code eventsPerSecond} (in all), stamped with creation times, with probes. */
    static DataGeneratorSource<Event> paced(BenchEvents events, double eventsPerSecond, long probeEvery) {
        return new DataGeneratorSource<>(
                new GeneratedEvents(events, true, probeEvery, Long.MAX_VALUE),
                events.count,
                RateLimiterStrategy.perSecond(eventsPerSecond),
                TypeInformation.of(Event.class));
    }

    static String probeCounter(long i) {
        return "probe:" + i;
    }

    @Override
    public void open(SourceReaderContext context) {
        parser = new EventParser(0);
        subtask = context.getIndexOfSubtask();
        reachedHold = holdFrom == Long.MAX_VALUE;
    }

    @Override
    public Event map(Long index) {
        BenchClock.firstEvent();
        long i = index;
        byte[] line;
        if (paced) {
            long now = System.currentTimeMillis();
            String probe = probeEvery > 0 && i % probeEvery == 0 ? probeCounter(i) : null;
            line = events.pacedLine(i, now, probe);
            if (probe != null) BenchClock.PROBES.put(probe, now);
            BenchClock.LAST_INDEX.set(subtask, i);
        } else {
            line = events.line(i);
            if (!reachedHold && events.baseTs(i) >= holdFrom) {
                reachedHold = true;
                BoundaryHold.reached();
            }
            BenchClock.LAST_INDEX.lazySet(
                    subtask, i); // how far each part got, for the state per active counter at a checkpoint
        }
        return parser.parse(line, null, null, 0, 0);
    }
}
