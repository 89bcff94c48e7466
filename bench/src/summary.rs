//! One line per measured figure for `scripts/bench-all`'s table: when
//! `SLUICE_BENCH_SUMMARY` names a file, every benchmark appends its figures
//! there (tab-separated: measure, sluice, baseline, ratio, aim, whether it
//! is met).

use std::io::Write;
use std::time::Duration;

/// An aim a ratio is held to.
#[derive(Debug, Clone, Copy)]
pub enum Aim {
    /// At most this many times the baseline.
    AtMost(f64),
    /// At least this share of the baseline's rate.
    AtLeast(f64),
    /// Reported, with no aim.
    None,
}

impl Aim {
    fn describe(self) -> String {
        match self {
            Aim::AtMost(limit) => format!("<= {limit}x"),
            Aim::AtLeast(limit) => format!(">= {limit}x"),
            Aim::None => String::new(),
        }
    }

    fn met(self, ratio: f64) -> &'static str {
        match self {
            Aim::AtMost(limit) if ratio <= limit => "yes",
            Aim::AtLeast(limit) if ratio >= limit => "yes",
            Aim::None => "",
            _ => "no",
        }
    }
}

/// Appends one figure to the summary file, if one is named.
pub fn record(measure: &str, ours: &str, baseline: &str, ratio: f64, aim: Aim) {
    let Some(path) = std::env::var_os("SLUICE_BENCH_SUMMARY") else { return };
    let line = format!("{measure}\t{ours}\t{baseline}\t{ratio:.2}x\t{}\t{}\n", aim.describe(), aim.met(ratio));
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("cannot append to the summary {}: {e}", std::path::Path::new(&path).display());
    }
}

/// The `p` quantile (0 to 1) of `samples`, nearest rank.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[(((sorted.len() as f64 - 1.0) * p).round() as usize).min(sorted.len() - 1)]
}

/// `d` in milliseconds.
pub fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Sends `request` and answers its JSON body, refusing an error status.
pub async fn json_of(request: reqwest::RequestBuilder) -> anyhow::Result<serde_json::Value> {
    Ok(request.send().await?.error_for_status()?.json().await?)
}
