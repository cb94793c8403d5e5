package io.rollcount.job.util;

/** The one-line messages every refusal and failure of the job and its commands is made of. */
public final class Messages {
    private Messages() {}

    /** The message of an error and of its causes, on one line, without stack traces (at most about 400 chars). */
    public static String oneLine(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            String m = c.getMessage();
            if (m == null || m.isBlank()) continue;
            if (sb.length() > 0) {
                if (sb.indexOf(m) >= 0) continue;
                sb.append(": ");
            }
            sb.append(m.replace('\n', ' '));
            if (sb.length() > 400) break;
        }
        return sb.length() == 0 ? t.getClass().getSimpleName() : sb.toString();
    }
}
