//! scaling.svg: ops/s against CPUs, one panel per testcase, one line per
//! (source, design or reference) — and per host and accelerator when rows
//! from several are merged. The y axis is logarithmic: guest (TCG) and
//! native figures differ by an order of magnitude or more. A point measured
//! several times is drawn at its median run, the figure report.md shows
//! ([`super::points`]).
//!
//! With predictions from `bench predict` ([`render_with`]), each model
//! (design × lock kind) is a *dashed* line labelled `predicted:DESIGN
//! lock=KIND` over 1..64 CPUs in its testcase's panel; measured series stay
//! solid lines with dots. The x axis then runs to 64. Past the largest CPU
//! count at which host mode measured the model's point and the prediction
//! met it, the curve is an extrapolation, as report.md's table labels it
//! (the same [`Validity`], from the same rows): its legend line says
//! `extrapolated: past N CPUs, shaded`, and the table's band (`lo–hi`) is shaded
//! around it from N on.
//!
//! Touches nothing but the rows it is given and the string it returns.

use std::collections::{BTreeMap, BTreeSet};

use plotters::prelude::*;

use super::human;
use super::points::{self, Point};
use super::predict::extrapolate::{self, Validity};
use super::predict::Model;
use super::rows::Row;

/// The series label of a row.
fn label(r: &Row, many_hosts: bool) -> String {
    let src = if r.source == "guest" || r.source == "linux-guest" {
        format!("{}[{}]", r.source, r.accel)
    } else {
        r.source.clone()
    };
    if many_hosts {
        format!("{src}:{} @{}", r.design, r.host)
    } else {
        format!("{src}:{}", r.design)
    }
}

/// Render the SVG text. Errors only if plotters fails to draw.
pub fn render(rows: &[Row]) -> Result<String, String> {
    render_with(rows, &[])
}

/// The picture's width, of which the legend column takes `LEGEND_W`.
const WIDTH: u32 = 1320;
const LEGEND_W: u32 = 460;
/// A panel's least height, the legend's first line and line spacing.
const PANEL_H: u32 = 480;
const LEGEND_TOP: u32 = 40;
const LEGEND_LINE: u32 = 16;

/// [`render`] plus dashed predicted curves for `models`.
pub fn render_with(rows: &[Row], models: &[Model]) -> Result<String, String> {
    let scene = Scene::new(rows, models);
    let testcases = scene.testcases();
    // Every panel is as tall as the longest legend needs (a line per
    // series, beside the chart, never over it).
    let entries = testcases
        .iter()
        .map(|t| scene.legend_len(t))
        .max()
        .unwrap_or(0);
    let panel_h = (PANEL_H).max(LEGEND_TOP + LEGEND_LINE * entries as u32 + 20);
    let mut buf = String::new();
    {
        let panels = testcases.len().max(1);
        let root =
            SVGBackend::with_string(&mut buf, (WIDTH, panel_h * panels as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        if testcases.is_empty() {
            root.draw(&Text::new(
                "no measured runs",
                (400, 220),
                ("sans-serif", 20),
            ))
            .map_err(|e| e.to_string())?;
        }
        let areas = root.split_evenly((panels, 1));
        for (panel, testcase) in areas.iter().zip(&testcases) {
            scene.draw_panel(panel, testcase)?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

/// A part of the picture.
type Area<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;

/// A predicted curve: its label, its (CPUs, ops/s) points, and past the
/// checked CPU count its band, (CPUs, low, high) from that count on.
struct Curve {
    name: String,
    pts: Vec<(f64, f64)>,
    band: Vec<(f64, f64, f64)>,
}

impl Curve {
    /// The curve of `pts` under `v`: the band of each point past the
    /// checked count (`bound`: the model's own other figure there), and
    /// the label saying where the extrapolation begins.
    fn new(
        name: String,
        pts: Vec<(f64, f64)>,
        v: &Validity,
        bound: impl Fn(usize) -> Option<f64>,
    ) -> Curve {
        let checked = v.checked_cpus;
        let mut band: Vec<(f64, f64, f64)> = Vec::new();
        for &(x, y) in &pts {
            let n = x as usize;
            if n == checked {
                band.push((x, y, y));
            } else if let Some((lo, hi)) = v.band(y, n, bound(n), None) {
                band.push((x, lo.max(1.0), hi));
            }
        }
        let name = if band.iter().any(|b| b.0 as usize > checked) {
            format!(
                "{name} ({}: past {checked} CPU{}, shaded)",
                extrapolate::LABEL,
                if checked == 1 { "" } else { "s" }
            )
        } else {
            name
        };
        Curve { name, pts, band }
    }
}

/// A legend line: label, colour, dashed (predicted) or solid (measured).
type LegendLine = (String, RGBAColor, bool);

/// What the picture shows: one row per measured point (its median run),
/// the models, and whether labels must name the host.
struct Scene<'a> {
    pts: Vec<Point<'a>>,
    ok: Vec<&'a Row>,
    models: &'a [Model],
    many_hosts: bool,
}

impl<'a> Scene<'a> {
    fn new(rows: &'a [Row], models: &'a [Model]) -> Self {
        let pts = points::points(rows);
        let ok: Vec<&Row> = pts
            .iter()
            .map(|p| p.median())
            .filter(|r| r.average > 0)
            .collect();
        let many_hosts = ok.iter().map(|r| &r.host).collect::<BTreeSet<_>>().len() > 1;
        Scene {
            pts,
            ok,
            models,
            many_hosts,
        }
    }

    /// The panels, one per testcase measured or predicted, in name order.
    /// (Linux references only run statneg: they show in that panel.)
    fn testcases(&self) -> Vec<String> {
        self.ok
            .iter()
            .map(|r| r.testcase.clone())
            .chain(self.models.iter().map(|m| m.testcase.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The legend lines `testcase`'s panel needs: one per measured series,
    /// one per predicted curve.
    fn legend_len(&self, testcase: &str) -> usize {
        let measured: BTreeSet<String> = self
            .ok
            .iter()
            .filter(|r| r.testcase == testcase)
            .map(|r| label(r, self.many_hosts))
            .collect();
        let predicted: usize = self
            .models
            .iter()
            .filter(|m| m.testcase == testcase)
            .map(|m| 1 + usize::from(m.inputs.hashed_ns > 0.0 && m.inputs.allocs > 0.0))
            .sum();
        measured.len() + predicted
    }

    /// Measured series: label -> cpus -> (sum, count). Points whose labels
    /// coincide (labels leave out what a reader need not see) are averaged.
    fn series(&self, mine: &[&Row]) -> BTreeMap<String, BTreeMap<usize, (f64, usize)>> {
        let mut series: BTreeMap<String, BTreeMap<usize, (f64, usize)>> = BTreeMap::new();
        for r in mine {
            let e = series
                .entry(label(r, self.many_hosts))
                .or_default()
                .entry(r.cpus)
                .or_insert((0.0, 0));
            e.0 += r.average as f64;
            e.1 += 1;
        }
        series
    }

    /// The predicted curves of `testcase`'s panel.
    fn curves(&self, testcase: &str) -> Vec<Curve> {
        self.models
            .iter()
            .filter(|m| m.testcase == testcase)
            .flat_map(|m| {
                // The report's own validity and bound for this model.
                let valid = crate::report::ops_validity(&self.pts, m);
                let pts = crate::predict::model::CPUS
                    .iter()
                    .map(|&n| (n as f64, m.at(n).max(1.0)))
                    .collect();
                let mut v = vec![Curve::new(
                    format!("predicted:{} lock={}", m.design, m.lock),
                    pts,
                    &valid,
                    |n| crate::report::no_sharing_bound(m, n),
                )];
                // With a sharing term, its lower bound too (every op
                // allocating): the term is checked at 2 CPUs only.
                if m.inputs.hashed_ns > 0.0 && m.inputs.allocs > 0.0 {
                    let low = crate::predict::model::CPUS
                        .iter()
                        .map(|&n| (n as f64, m.predict(n).ops_no_sharing.max(1.0)))
                        .collect();
                    v.push(Curve::new(
                        format!("predicted:{} lock={} no sharing", m.design, m.lock),
                        low,
                        &valid,
                        |_| None,
                    ));
                }
                v
            })
            .collect()
    }

    /// `testcase`'s panel: the chart (measured series solid with dots,
    /// predicted curves dashed), and its legend in the column beside.
    fn draw_panel(&self, panel: &Area<'_>, testcase: &str) -> Result<(), String> {
        let (area, legend_area) = panel.split_horizontally(WIDTH - LEGEND_W);
        let mine: Vec<&Row> = self
            .ok
            .iter()
            .copied()
            .filter(|r| r.testcase == testcase)
            .collect();
        let series = self.series(&mine);
        let curves = self.curves(testcase);
        let (xmax, ymin, ymax) = bounds(&mine, &curves);
        let mut chart = ChartBuilder::on(&area)
            .caption(format!("{testcase}: ops/s vs CPUs"), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.5f64..xmax + 0.5, (ymin..ymax).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("CPUs (tasks)")
            .y_desc("ops/s")
            .x_labels((xmax as usize + 1).min(17))
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| human(*v))
            .draw()
            .map_err(|e| e.to_string())?;
        let mut legend: Vec<LegendLine> = Vec::new();
        for (i, (name, pts)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let points: Vec<(f64, f64)> = pts
                .iter()
                .map(|(c, (sum, n))| (*c as f64, sum / *n as f64))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?;
            legend.push((name.clone(), color, false));
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled())))
                .map_err(|e| e.to_string())?;
        }
        let first = series.len();
        for (i, c) in curves.iter().enumerate() {
            let color = Palette99::pick(first + i).to_rgba();
            // The extrapolated stretch's band: up along its highs, back
            // along its lows.
            if c.band.len() > 1 {
                let outline: Vec<(f64, f64)> = c
                    .band
                    .iter()
                    .map(|b| (b.0, b.2))
                    .chain(c.band.iter().rev().map(|b| (b.0, b.1)))
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        outline,
                        color.mix(0.12).filled(),
                    )))
                    .map_err(|e| e.to_string())?;
            }
            chart
                .draw_series(DashedLineSeries::new(
                    c.pts.clone(),
                    8,
                    6,
                    color.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?;
            legend.push((c.name.clone(), color, true));
        }
        draw_legend(&legend_area, &legend)
    }
}

/// The axes' reach over a panel's points, measured and predicted (bands
/// included): the
/// largest CPU count, and ops/s from half the least to twice the most.
fn bounds(mine: &[&Row], curves: &[Curve]) -> (f64, f64, f64) {
    let pred_y = || {
        curves.iter().flat_map(|c| {
            c.pts
                .iter()
                .map(|p| p.1)
                .chain(c.band.iter().flat_map(|b| [b.1, b.2]))
        })
    };
    let xmax = mine
        .iter()
        .map(|r| r.cpus)
        .chain(
            curves
                .iter()
                .flat_map(|c| c.pts.iter().map(|p| p.0 as usize)),
        )
        .max()
        .unwrap_or(1) as f64;
    let ymin = mine
        .iter()
        .map(|r| r.average as f64)
        .chain(pred_y())
        .fold(f64::INFINITY, f64::min)
        .clamp(1.0, f64::MAX)
        / 2.0;
    let ymax = mine
        .iter()
        .map(|r| r.average as f64)
        .chain(pred_y())
        .fold(1.0, f64::max)
        * 2.0;
    (xmax, ymin, ymax)
}

/// The legend, in its own column: solid measured, dashed predicted, as
/// drawn.
fn draw_legend(area: &Area<'_>, legend: &[LegendLine]) -> Result<(), String> {
    for (k, (name, color, dashed)) in legend.iter().enumerate() {
        let y = (LEGEND_TOP + LEGEND_LINE * k as u32) as i32;
        let style = color.stroke_width(2);
        if *dashed {
            for x in [8, 20] {
                area.draw(&PathElement::new(vec![(x, y), (x + 8, y)], style))
                    .map_err(|e| e.to_string())?;
            }
        } else {
            area.draw(&PathElement::new(vec![(8, y), (28, y)], style))
                .map_err(|e| e.to_string())?;
        }
        area.draw(&Text::new(
            name.clone(),
            (36, y - 6),
            ("sans-serif", 12).into_font().color(&BLACK),
        ))
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}
