package io.rollcount.cli;

import io.rollcount.job.util.Messages;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Checkpoints of a job as Flink's REST API reports them ({@code GET /jobs/<id>/checkpoints}; the MiniCluster
 * serves it when {@code rest.bind-port} is set). Polled once a second; the REST history holds the last 10,
 * so every completed checkpoint is seen and remembered here with its duration.
 */
final class CheckpointStats {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final URI uri;
    /** Completed checkpoints (not savepoints): id to end-to-end duration in ms. */
    private final Map<Long, Long> completed = new TreeMap<>();

    private final Map<Long, String> failures = new TreeMap<>();
    private long completedCount;
    private long inProgress;
    private String lastError;

    CheckpointStats(String restBase, String jobId) {
        this.uri = URI.create(restBase + "/jobs/" + jobId + "/checkpoints");
    }

    /** Reads the current figures; returns false (and keeps the last ones) when the REST API does not answer. */
    synchronized boolean poll() {
        try {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(uri)
                            .timeout(Duration.ofSeconds(2))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                lastError = "HTTP " + r.statusCode();
                return false;
            }
            update(JSON.readTree(r.body()));
            lastError = null;
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (Exception e) {
            lastError = Messages.oneLine(e);
            return false;
        }
    }

    synchronized void update(JsonNode root) {
        JsonNode counts = root.path("counts");
        completedCount = counts.path("completed").asLong(completedCount);
        inProgress = counts.path("in_progress").asLong(0);
        for (JsonNode h : root.path("history")) {
            if ("COMPLETED".equals(h.path("status").asText())
                    && !h.path("is_savepoint").asBoolean(false)) {
                completed.put(
                        h.path("id").asLong(), h.path("end_to_end_duration").asLong());
            } else if ("FAILED".equals(h.path("status").asText())) {
                failures.put(h.path("id").asLong(), h.path("failure_message").asText("no reason given"));
            }
        }
        JsonNode latest = root.path("latest").path("completed");
        if (latest.isObject() && !latest.path("is_savepoint").asBoolean(false)) {
            completed.put(
                    latest.path("id").asLong(),
                    latest.path("end_to_end_duration").asLong());
        }
    }

    /** Completed checkpoints (the REST count, which includes any seen before this process polled). */
    synchronized long completedCount() {
        return Math.max(completedCount, completed.size());
    }

    /**
     * Checkpoints that failed once the job ran. The REST count also holds the triggers declined while the
     * tasks were still starting ("not all required tasks are currently running"), which never show in the
     * history: those are left out.
     */
    synchronized long failedCount() {
        return failures.size();
    }

    synchronized long inProgress() {
        return inProgress;
    }

    /** Duration of the last completed checkpoint in ms, or -1. */
    synchronized long lastDuration() {
        return completed.isEmpty()
                ? -1
                : ((TreeMap<Long, Long>) completed).lastEntry().getValue();
    }

    /** Durations in ms of every completed checkpoint seen, in order. */
    synchronized List<Long> durations() {
        return new ArrayList<>(completed.values());
    }

    /** Reasons of the failed checkpoints seen, one per distinct reason. */
    synchronized List<String> failures() {
        return failures.values().stream().distinct().toList();
    }

    synchronized String lastError() {
        return lastError;
    }
}
