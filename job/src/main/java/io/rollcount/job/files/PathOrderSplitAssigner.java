package io.rollcount.job.files;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Optional;
import java.util.PriorityQueue;
import org.apache.flink.connector.file.src.FileSourceSplit;
import org.apache.flink.connector.file.src.assigners.FileSplitAssigner;

/**
 * Hands out input files in path order ({@code 2026-11-01.jsonl} before {@code 2026-11-02.jsonl}), so that
 * a folder of files named by date is read roughly in event-time order and the later files do not make the
 * earlier ones late. Flink's default assigner prefers locality, which a local or object-store input does
 * not have, and returns splits in no useful order.
 */
public final class PathOrderSplitAssigner implements FileSplitAssigner {
    private static final Comparator<FileSourceSplit> ORDER =
            Comparator.comparing((FileSourceSplit s) -> s.path().toString()).thenComparingLong(FileSourceSplit::offset);

    private final PriorityQueue<FileSourceSplit> splits = new PriorityQueue<>(ORDER);

    public PathOrderSplitAssigner(Collection<FileSourceSplit> initial) {
        splits.addAll(initial);
    }

    @Override
    public Optional<FileSourceSplit> getNext(String hostname) {
        return Optional.ofNullable(splits.poll());
    }

    @Override
    public void addSplits(Collection<FileSourceSplit> more) {
        splits.addAll(more);
    }

    @Override
    public Collection<FileSourceSplit> remainingSplits() {
        ArrayList<FileSourceSplit> out = new ArrayList<>(splits);
        out.sort(ORDER);
        return out;
    }
}
