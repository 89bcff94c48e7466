//! What becomes of a job that failed: tried again after a growing pause,
//! or parked once it has failed too often, so a job that cannot succeed is
//! shown to operators instead of being retried for ever. Pure: tested as a
//! table.

/// The pause before the first retry; it doubles with each attempt.
const FIRST_PAUSE_MS: i64 = 1_000;
/// The longest pause (64 s).
const MAX_DOUBLINGS: i64 = 6;

/// What to do after a job's pass failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Run it again after `pause_ms`, with `attempts` recorded.
    Retry { pause_ms: i64, attempts: i64 },
    /// Stop trying: it failed `attempts` times.
    Park { attempts: i64 },
}

/// `attempts` counts this claim. A failure that is the database's and not
/// the job's (`counts` false: the store was unavailable) is not counted, so
/// an outage never parks the work it held up.
pub fn after_failure(attempts: i64, max_attempts: i64, counts: bool) -> AfterFailure {
    let attempts = if counts { attempts } else { attempts.saturating_sub(1).max(0) };
    if counts && attempts >= max_attempts {
        return AfterFailure::Park { attempts };
    }
    let pause_ms = FIRST_PAUSE_MS.saturating_mul(1 << attempts.clamp(0, MAX_DOUBLINGS));
    AfterFailure::Retry { pause_ms, attempts }
}

/// Whether a job just claimed was claimed too often without a pass ever
/// finishing (each worker that held it was lost): it is parked, not run.
pub fn lost_too_often(attempts: i64, max_attempts: i64) -> bool {
    attempts > max_attempts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_retry_with_a_doubling_pause_then_park() {
        use AfterFailure::*;
        let table = [
            // (attempts, max, counts) → verdict
            ((1, 5, true), Retry { pause_ms: 2_000, attempts: 1 }),
            ((2, 5, true), Retry { pause_ms: 4_000, attempts: 2 }),
            ((4, 5, true), Retry { pause_ms: 16_000, attempts: 4 }),
            ((5, 5, true), Park { attempts: 5 }),
            ((9, 5, true), Park { attempts: 9 }),
            // The database's failure: not counted, never parked.
            ((5, 5, false), Retry { pause_ms: 16_000, attempts: 4 }),
            ((40, 5, false), Retry { pause_ms: 64_000, attempts: 39 }),
            ((0, 5, false), Retry { pause_ms: 1_000, attempts: 0 }),
            ((20, 30, true), Retry { pause_ms: 64_000, attempts: 20 }),
        ];
        for ((attempts, max, counts), want) in table {
            assert_eq!(after_failure(attempts, max, counts), want, "{attempts}/{max} counts={counts}");
        }
    }

    #[test]
    fn a_job_whose_workers_keep_being_lost_is_parked_past_the_cap() {
        assert!(!lost_too_often(5, 5));
        assert!(lost_too_often(6, 5));
    }
}
