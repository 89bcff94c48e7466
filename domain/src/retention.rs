//! Which captures of a session are kept: its retention policy applied to
//! the chain. The head and the final seal are always kept; beyond them a
//! capture stays while either rule of the policy keeps it. What is not kept
//! is forgotten, and its objects are collected once nothing kept names them.

/// A session's retention policy. A rule left out keeps nothing on its own;
/// a policy with neither rule keeps every capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Keep the newest this many captures (the head among them).
    pub keep_last: Option<u64>,
    /// Keep every capture registered within this many milliseconds.
    pub keep_within_ms: Option<u64>,
}

impl Retention {
    /// The session's own rules where it has any, else the install's.
    pub fn or(self, install: Retention) -> Retention {
        if self.keep_last.is_none() && self.keep_within_ms.is_none() { install } else { self }
    }
}

/// One registered capture, as retention sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered {
    pub n: u64,
    pub registered_at_ms: i64,
}

/// The chain positions of `captures` that are no longer kept at `now_ms`,
/// in order.
pub fn forgotten(
    captures: &[Registered],
    head_n: u64,
    sealed_n: Option<u64>,
    policy: Retention,
    now_ms: i64,
) -> Vec<u64> {
    if policy.keep_last.is_none() && policy.keep_within_ms.is_none() {
        return Vec::new();
    }
    let kept = |c: &Registered| {
        let by_count = policy.keep_last.is_some_and(|last| c.n + last > head_n);
        let by_age = policy.keep_within_ms.is_some_and(|within| {
            c.registered_at_ms >= now_ms.saturating_sub(i64::try_from(within).unwrap_or(i64::MAX))
        });
        c.n == head_n || Some(c.n) == sealed_n || by_count || by_age
    };
    let mut gone: Vec<u64> = captures.iter().filter(|c| !kept(c)).map(|c| c.n).collect();
    gone.sort_unstable();
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captures 1..=10, one a minute, the newest registered at minute 10.
    fn chain() -> Vec<Registered> {
        (1..=10).map(|n| Registered { n, registered_at_ms: n as i64 * 60_000 }).collect()
    }

    const MINUTE: u64 = 60_000;

    #[test]
    fn a_policy_forgets_what_neither_rule_keeps() {
        let now = 10 * 60_000;
        type Row = (Option<u64>, Option<u64>, Option<u64>, Vec<u64>);
        let table: [Row; 9] = [
            // keep_last, keep_within, sealed, forgotten
            (None, None, None, vec![]),
            (Some(3), None, None, vec![1, 2, 3, 4, 5, 6, 7]),
            (Some(1), None, None, vec![1, 2, 3, 4, 5, 6, 7, 8, 9]),
            (Some(0), None, None, vec![1, 2, 3, 4, 5, 6, 7, 8, 9]),
            (Some(20), None, None, vec![]),
            (None, Some(2 * MINUTE), None, vec![1, 2, 3, 4, 5, 6, 7]),
            // Either rule keeps: the newest two, or the last four minutes.
            (Some(2), Some(4 * MINUTE), None, vec![1, 2, 3, 4, 5]),
            // The seal is kept whatever the rules say.
            (Some(2), None, Some(4), vec![1, 2, 3, 5, 6, 7, 8]),
            (None, Some(0), Some(10), vec![1, 2, 3, 4, 5, 6, 7, 8, 9]),
        ];
        for (keep_last, keep_within_ms, sealed, expected) in table {
            let policy = Retention { keep_last, keep_within_ms };
            assert_eq!(forgotten(&chain(), 10, sealed, policy, now), expected, "{policy:?}, sealed {sealed:?}");
        }
    }

    #[test]
    fn the_head_is_kept_even_when_old() {
        let policy = Retention { keep_last: None, keep_within_ms: Some(MINUTE) };
        let much_later = 1_000 * 60_000;
        assert_eq!(forgotten(&chain(), 10, None, policy, much_later), (1..=9).collect::<Vec<_>>());
    }

    #[test]
    fn a_session_without_rules_takes_the_install_policy() {
        let install = Retention { keep_last: Some(5), keep_within_ms: None };
        assert_eq!(Retention::default().or(install), install);
        let own = Retention { keep_last: None, keep_within_ms: Some(1) };
        assert_eq!(own.or(install), own);
    }
}
