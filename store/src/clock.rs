//! Ids and wall-clock times as the store records them.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use std::sync::atomic::{AtomicI64, Ordering};

/// The time this process's clock stands still at, once the simulation
/// fixed it (0: the wall clock). Only the simulation ever sets it: it runs
/// days of schedules in seconds, the same way every time.
static FIXED_MS: AtomicI64 = AtomicI64::new(0);

/// Now, in Unix milliseconds (UTC).
pub fn now_ms() -> i64 {
    match FIXED_MS.load(Ordering::Relaxed) {
        0 => (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64,
        fixed => fixed,
    }
}

/// Stops this process's clock at `ms`: from now on only [`advance`] moves
/// it. Never used by sluice itself.
#[doc(hidden)]
pub fn fix_at(ms: i64) {
    FIXED_MS.store(ms.max(1), Ordering::Relaxed);
}

/// Moves a fixed clock ahead by `ms` (time passing, or a clock jump).
#[doc(hidden)]
pub fn advance(ms: i64) {
    FIXED_MS.fetch_add(ms, Ordering::Relaxed);
}

/// Unix milliseconds as an RFC 3339 instant in UTC, with milliseconds.
pub fn rfc3339(ms: i64) -> String {
    let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let t = t.replace_nanosecond((ms.rem_euclid(1000) as u32) * 1_000_000).unwrap_or(t);
    t.format(&Rfc3339).unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// RFC 3339 UTC with second precision (`2026-10-13T21:04:05Z`).
pub fn rfc3339_seconds(ms: i64) -> String {
    let t = OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    t.format(&Rfc3339).unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// A new time-ordered id with a readable prefix: `ws_0193…`.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_seconds_drops_the_fraction() {
        assert_eq!(rfc3339_seconds(1_760_389_445_999), "2025-10-13T21:04:05Z");
    }

    #[test]
    fn rfc3339_keeps_milliseconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn ids_carry_prefix_and_sort_by_time() {
        let a = new_id("ws");
        let then = now_ms();
        while now_ms() <= then {
            std::hint::spin_loop();
        }
        let b = new_id("ws");
        assert!(a.starts_with("ws_") && a.len() == 35);
        assert!(a < b);
    }
}
