//! Line charts as PNG files, drawn with an embedded font so they work on any machine.

use std::path::Path;
use std::sync::Once;

use anyhow::{Context, anyhow};
use plotters::prelude::*;

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
    /// Dashed (a model or the paper) rather than solid (our measurement).
    pub dashed: bool,
}

/// A chart: title, axis labels, lines.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title at the top.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Plot the y axis on a log scale.
    pub log_y: bool,
    /// The lines.
    pub series: Vec<Series>,
}

fn register_font() -> anyhow::Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        )
        .map_err(|_| anyhow!("embedded DejaVu font did not load"));
    });
    result
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// Draws `chart` to a PNG at `path` (800 × 500).
///
/// # Errors
///
/// If the chart has no points or the file cannot be written.
pub fn draw(chart: &Chart, path: &Path) -> anyhow::Result<()> {
    register_font()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let pts = chart.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        if !chart.log_y || y > 0.0 {
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
    }
    if x0 > x1 || y0 > y1 {
        return Err(anyhow!("chart {:?} has no points", chart.title));
    }
    let root = BitMapBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(&chart.title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70);
    if chart.log_y {
        let mut c = builder
            .build_cartesian_2d(x0..x1, (y0 / 2.0..y1 * 2.0).log_scale())
            .map_err(|e| anyhow!("{e}"))?;
        c.configure_mesh()
            .x_desc(chart.x_label.as_str())
            .y_desc(chart.y_label.as_str())
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        draw_series(&mut c, chart)?;
    } else {
        let pad = (y1 - y0).max(0.1) * 0.1;
        let mut c = builder
            .build_cartesian_2d(x0..x1, (y0 - pad).max(0.0)..y1 + pad)
            .map_err(|e| anyhow!("{e}"))?;
        c.configure_mesh()
            .x_desc(chart.x_label.as_str())
            .y_desc(chart.y_label.as_str())
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        draw_series(&mut c, chart)?;
    }
    root.present()
        .map_err(|e| anyhow!("writing {}: {e}", path.display()))?;
    Ok(())
}

fn draw_series<'a, 'b: 'a, X, Y>(
    c: &mut ChartContext<'a, BitMapBackend<'b>, Cartesian2d<X, Y>>,
    chart: &Chart,
) -> anyhow::Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, s) in chart.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|&(_, y)| !chart.log_y || y > 0.0)
            .collect();
        let style = colour.stroke_width(2);
        let anno = if s.dashed {
            c.draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))
                .map_err(|e| anyhow!("{e}"))?
        } else {
            c.draw_series(LineSeries::new(points.clone(), style))
                .map_err(|e| anyhow!("{e}"))?;
            c.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(|e| anyhow!("{e}"))?
        };
        anno.label(s.label.as_str()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
        });
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
