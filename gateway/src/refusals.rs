//! Refused sign-ins, counted per source address: each is logged (the
//! source, the workspace asked for, the key's fingerprint; never the key),
//! and a source that keeps failing waits longer before each answer, so
//! guessing is slow while a user who mistyped once is not held up.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures a source may have before its answers slow down.
const FREE_FAILURES: u32 = 3;
/// The added wait doubles with each failure past the free ones, up to this.
const MOST_DELAY: Duration = Duration::from_secs(10);
const FIRST_DELAY: Duration = Duration::from_millis(500);
/// A source with no failure for this long starts afresh.
const FORGET_AFTER: Duration = Duration::from_secs(600);
/// Sources remembered at once (a flood of addresses forgets the oldest).
const MOST_SOURCES: usize = 10_000;

/// How long a refusal waits before it is answered, after `failures`.
pub fn delay_after(failures: u32) -> Duration {
    match failures.checked_sub(FREE_FAILURES) {
        None | Some(0) => Duration::ZERO,
        Some(past) => FIRST_DELAY.saturating_mul(1 << (past - 1).min(8)).min(MOST_DELAY),
    }
}

#[derive(Default)]
pub struct Refusals {
    sources: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl Refusals {
    /// Counts a refused sign-in from `source`; answers how many it has
    /// had lately and how long to wait before answering this one.
    pub fn refused(&self, source: IpAddr) -> (u32, Duration) {
        let now = Instant::now();
        let mut sources = self.sources.lock().unwrap();
        if sources.len() >= MOST_SOURCES && !sources.contains_key(&source) {
            sources.retain(|_, (_, last)| now.duration_since(*last) < FORGET_AFTER);
            if sources.len() >= MOST_SOURCES {
                sources.clear();
            }
        }
        let entry = sources.entry(source).or_insert((0, now));
        if now.duration_since(entry.1) >= FORGET_AFTER {
            entry.0 = 0;
        }
        entry.0 = entry.0.saturating_add(1);
        entry.1 = now;
        (entry.0, delay_after(entry.0))
    }

    /// A source that signed in is forgiven its earlier failures.
    pub fn signed_in(&self, source: IpAddr) {
        self.sources.lock().unwrap().remove(&source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_that_keeps_failing_waits_longer_each_time() {
        let table = [(1, 0), (2, 0), (3, 0), (4, 500), (5, 1_000), (6, 2_000), (7, 4_000), (8, 8_000), (9, 10_000)];
        for (failures, millis) in table {
            assert_eq!(delay_after(failures), Duration::from_millis(millis), "{failures}");
        }
        assert_eq!(delay_after(u32::MAX), MOST_DELAY);
        let refusals = Refusals::default();
        let source: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        for n in 1..=5 {
            assert_eq!(refusals.refused(source).0, n);
        }
        assert_eq!(refusals.refused(other), (1, Duration::ZERO), "counted per source");
        refusals.signed_in(source);
        assert_eq!(refusals.refused(source).0, 1, "a sign-in forgives");
    }
}
