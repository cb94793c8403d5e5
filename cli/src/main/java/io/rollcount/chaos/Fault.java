package io.rollcount.chaos;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/** The kinds of fault a chaos run injects, and its seeded schedule. */
public enum Fault {
    TM_KILL("tm-kill"),
    JM_KILL("jm-kill"),
    BROKER_KILL("broker-kill"),
    REDIS_STOP("redis-stop"),
    REDIS_STALL("redis-stall"),
    SAVEPOINT_RESCALE("savepoint-rescale"),
    BAD_BURST("bad-burst"),
    ATTACK_IDS("attack-ids");

    public final String label;

    Fault(String label) {
        this.label = label;
    }

    /** Faults that replace the job (a new job id): two of them never run at once. */
    boolean replacesJob() {
        return this == JM_KILL || this == SAVEPOINT_RESCALE;
    }

    /** Whether two faults may run at the same moment (a stop-with-savepoint needs Redis and Kafka up to finish). */
    static boolean compatible(Fault a, Fault b) {
        if (a == b || (a.replacesJob() && b.replacesJob())) return false;
        if (a == SAVEPOINT_RESCALE || b == SAVEPOINT_RESCALE) {
            Fault other = a == SAVEPOINT_RESCALE ? b : a;
            return other == REDIS_STALL || other == BAD_BURST || other == ATTACK_IDS;
        }
        return true;
    }

    /** One slot of the schedule: at {@code atMillis} after the stream began, one fault or two at once, with a random parameter each. */
    public record Slot(long atMillis, List<Fault> faults, List<Double> seconds) {}

    /**
     * A seeded schedule over {@code durationMillis}: the first fault after {@code firstMillis}, then one every
     * {@code minGap} to {@code maxGap} ms, none in the last {@code tailMillis}; every kind at least
     * {@code eachAtLeast} times (two at once where the slots would not suffice), else a random kind, two at once
     * one time in four. Redis outages last 5 to 40 s, stalls 2 to 10 s, broker downtimes 1 to 10 s.
     */
    public static List<Slot> schedule(
            long seed,
            long durationMillis,
            long firstMillis,
            long minGap,
            long maxGap,
            long tailMillis,
            int eachAtLeast) {
        Random r = new Random(seed);
        int requiredCount = eachAtLeast * values().length;
        List<Long> times = new ArrayList<>();
        // draw the gaps again while they leave too few slots for every required fault, two at once at most
        for (int attempt = 0; attempt < 1000 && (attempt == 0 || 2 * times.size() < requiredCount); attempt++) {
            times.clear();
            for (long t = firstMillis;
                    t <= durationMillis - tailMillis;
                    t += minGap + (long) (r.nextDouble() * (maxGap - minGap))) times.add(t);
        }
        if (times.isEmpty()) throw new IllegalArgumentException("the duration leaves no time for a fault");
        if (requiredCount > 2 * times.size()) {
            throw new IllegalArgumentException(requiredCount + " faults do not fit in " + times.size()
                    + " slots: a longer duration or shorter gaps");
        }
        List<Fault> required = new ArrayList<>();
        for (int i = 0; i < eachAtLeast; i++) Collections.addAll(required, values());
        Collections.shuffle(required, r);
        int pairsNeeded = Math.max(0, required.size() - times.size());
        List<List<Fault>> slots = null;
        // greedy pairing can corner itself (a stop-with-savepoint pairs with few kinds): shuffle again and retry
        for (int attempt = 0; attempt < 1000 && slots == null; attempt++) {
            if (attempt > 0) Collections.shuffle(required, r);
            slots = place(required, times.size());
        }
        if (slots == null)
            throw new IllegalArgumentException(
                    "could not pair " + required.size() + " faults in " + times.size() + " slots");
        Fault[] all = values();
        for (int i = 0; i < slots.size(); i++) {
            List<Fault> slot = slots.get(i);
            if (slot.isEmpty()) slot.add(all[r.nextInt(all.length)]);
            if (pairsNeeded == 0 && slot.size() == 1 && r.nextInt(4) == 0) {
                Fault second = all[r.nextInt(all.length)];
                if (compatible(slot.get(0), second)) slot.add(second);
            }
        }
        List<Slot> out = new ArrayList<>();
        for (int i = 0; i < times.size(); i++) {
            List<Double> secs = new ArrayList<>();
            for (Fault f : slots.get(i)) {
                secs.add(
                        switch (f) {
                            case REDIS_STOP -> 5 + r.nextDouble() * 35;
                            case REDIS_STALL -> 2 + r.nextDouble() * 8;
                            case BROKER_KILL -> 1 + r.nextDouble() * 9;
                            default -> 0.0;
                        });
            }
            out.add(new Slot(times.get(i), List.copyOf(slots.get(i)), secs));
        }
        return out;
    }

    /** One fault per slot in order, then the rest paired with a compatible lone fault; null when one cannot be placed. */
    private static List<List<Fault>> place(List<Fault> required, int slotCount) {
        List<List<Fault>> slots = new ArrayList<>();
        for (int i = 0; i < slotCount; i++) slots.add(new ArrayList<>());
        int s = 0;
        for (Fault f : required) {
            if (s < slotCount) {
                slots.get(s++).add(f);
                continue;
            }
            boolean placed = false;
            for (List<Fault> slot : slots) {
                if (slot.size() == 1 && compatible(slot.get(0), f)) {
                    slot.add(f);
                    placed = true;
                    break;
                }
            }
            if (!placed) return null;
        }
        return slots;
    }
}
