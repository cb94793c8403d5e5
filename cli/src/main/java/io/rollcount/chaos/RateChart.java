package io.rollcount.chaos;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/**
 * A line chart of events per second over a run, with the faults marked, as a PNG drawn with the JDK's own
 * Java2D and ImageIO (headless; no chart library in the job's class path).
 */
final class RateChart {
    /** One sample: seconds since the start, events per second produced and processed (committed by the job). */
    record Point(double second, double produced, double processed) {}

    /** A fault on the time axis. */
    record Mark(double second, String label) {}

    private RateChart() {}

    static void write(Path png, String title, List<Point> points, List<Mark> marks) throws IOException {
        System.setProperty("java.awt.headless", "true");
        int w = 1200, h = 500, left = 70, right = 20, top = 40, bottom = 50;
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, w, h);
        double maxX =
                Math.max(1, points.stream().mapToDouble(Point::second).max().orElse(1));
        double maxY = Math.max(
                        1,
                        points.stream()
                                .mapToDouble(p -> Math.max(p.produced(), p.processed()))
                                .max()
                                .orElse(1))
                * 1.1;
        int pw = w - left - right, ph = h - top - bottom;
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        g.setColor(new Color(230, 230, 230));
        for (int i = 0; i <= 5; i++) {
            int y = top + ph - i * ph / 5;
            g.drawLine(left, y, left + pw, y);
            g.setColor(Color.DARK_GRAY);
            g.drawString(String.format(Locale.ROOT, "%.0f", maxY * i / 5), 5, y + 4);
            g.setColor(new Color(230, 230, 230));
        }
        g.setColor(Color.DARK_GRAY);
        for (int i = 0; i <= 10; i++) {
            int x = left + i * pw / 10;
            g.drawString(String.format(Locale.ROOT, "%.0f s", maxX * i / 10), x - 12, top + ph + 18);
        }
        g.drawRect(left, top, pw, ph);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
        g.drawString(title, left, 24);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        int row = 0;
        for (Mark m : marks) {
            int x = left + (int) (m.second() / maxX * pw);
            g.setColor(new Color(200, 60, 60, 120));
            g.drawLine(x, top, x, top + ph);
            g.setColor(new Color(160, 30, 30));
            g.drawString(m.label(), x + 2, top + 12 + (row++ % 4) * 12);
        }
        g.setStroke(new BasicStroke(1.5f));
        line(g, points, true, new Color(150, 150, 150), left, top, pw, ph, maxX, maxY);
        line(g, points, false, new Color(30, 90, 200), left, top, pw, ph, maxX, maxY);
        g.setColor(new Color(150, 150, 150));
        g.drawString("produced events/s", left, h - 8);
        g.setColor(new Color(30, 90, 200));
        g.drawString("processed events/s (offsets the job committed at its checkpoints)", left + 160, h - 8);
        g.dispose();
        ImageIO.write(img, "png", png.toFile());
    }

    private static void line(
            Graphics2D g,
            List<Point> points,
            boolean produced,
            Color c,
            int left,
            int top,
            int pw,
            int ph,
            double maxX,
            double maxY) {
        g.setColor(c);
        int px = -1, py = -1;
        for (Point p : points) {
            int x = left + (int) (p.second() / maxX * pw);
            int y = top + ph - (int) ((produced ? p.produced() : p.processed()) / maxY * ph);
            if (px >= 0) g.drawLine(px, py, x, y);
            px = x;
            py = y;
        }
    }
}
