package io.rollcount.job.files;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.flink.connector.file.src.FileSourceSplit;
import org.apache.flink.connector.file.src.enumerate.FileEnumerator;
import org.apache.flink.core.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The file enumeration of the {@code FileSource}: one split per input file that {@link InputFiles} accepts
 * (gzip cannot be split, and a whole file is the unit a broken one is dead-lettered by), each skipped
 * file logged with its reason. {@code ./rollcount run} prints the same list in its summary.
 */
public final class LocalInputEnumerator implements FileEnumerator {
    private static final Logger LOG = LoggerFactory.getLogger(LocalInputEnumerator.class);

    private long nextId;

    @Override
    public Collection<FileSourceSplit> enumerateSplits(Path[] paths, int minDesiredSplits) throws IOException {
        List<FileSourceSplit> splits = new ArrayList<>();
        for (Path path : paths) {
            InputFiles.Scan scan = InputFiles.scan(path);
            for (InputFiles.Skipped s : scan.skipped()) LOG.warn("input skipped: {}", s);
            for (InputFiles.Input in : scan.inputs()) {
                splits.add(new FileSourceSplit(
                        String.valueOf(nextId++), in.path(), 0, in.size(), in.modificationTime(), in.size()));
            }
        }
        return splits;
    }
}
