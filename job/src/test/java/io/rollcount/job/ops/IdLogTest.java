package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link IdLog}: a chunk per key group in key-group order, its ids in the order added, read back as written. */
class IdLogTest {
    @Test
    void drainsOneChunkPerKeyGroupInKeyGroupOrderAndReadsThemBack() throws Exception {
        IdLog log = new IdLog(8, 128);
        log.add(7, 1, 2, 100);
        log.add(3, 3, 4, 200);
        log.add(7, 5, 6, 300);
        log.add(3, 3, 4, 400);
        List<Integer> groups = new ArrayList<>();
        List<String> entries = new ArrayList<>();
        log.drainTo((group, chunk) -> {
            groups.add(group);
            assertThat(chunk).hasSize(chunk.length / IdLog.ENTRY_BYTES * IdLog.ENTRY_BYTES);
            IdLog.read(chunk, (hi, lo, at) -> entries.add(group + ":" + hi + "/" + lo + "@" + at));
        });
        assertThat(groups).containsExactly(3, 7);
        assertThat(entries).containsExactly("3:3/4@200", "3:3/4@400", "7:1/2@100", "7:5/6@300");
        assertThat(log.size()).isZero();
        log.drainTo((group, chunk) -> {
            throw new AssertionError("nothing held");
        });
    }

    @Test
    void isFullAtItsCapacityAndRefusesMore() {
        IdLog log = new IdLog(2, 4);
        log.add(0, 1, 1, 1);
        assertThat(log.isFull()).isFalse();
        log.add(1, 2, 2, 2);
        assertThat(log.isFull()).isTrue();
        assertThatThrownBy(() -> log.add(2, 3, 3, 3)).hasMessageContaining("full");
    }

    @Test
    void refusesAChunkThatIsNotWholeEntries() {
        assertThatThrownBy(() -> IdLog.read(new byte[IdLog.ENTRY_BYTES + 1], (hi, lo, at) -> {}))
                .hasMessageContaining("not a multiple of " + IdLog.ENTRY_BYTES);
    }
}
