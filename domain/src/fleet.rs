//! The fleet: the hosts executors run on and the workers that drive them.
//! Which host a new executor goes to, whether a host is reachable, and how a
//! worker's health reads. Pure: the store supplies what it holds and
//! persists what these decide.

pub use crate::model::HostState;

/// What placement knows of one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLoad {
    pub name: String,
    pub state: HostState,
    pub cordoned: bool,
    /// How many of its workers' heartbeats are still fresh.
    pub live_workers: i64,
    /// How many executors it may hold (`None`: no limit): the largest
    /// capacity its live workers declare.
    pub capacity: Option<i64>,
    /// The executors placed on it whose runtime has not been removed.
    pub load: i64,
}

impl HostLoad {
    /// Whether a new executor may go here.
    pub fn takes_new_work(&self) -> bool {
        self.state == HostState::Up
            && !self.cordoned
            && self.live_workers > 0
            && self.capacity.is_none_or(|c| self.load < c)
    }
}

/// The host a new executor goes to: the least loaded that takes new work
/// (ties by name, so the choice is the same whoever makes it); `None` when
/// no host has room.
pub fn choose_host(hosts: &[HostLoad]) -> Option<&str> {
    hosts
        .iter()
        .filter(|h| h.takes_new_work())
        .min_by(|a, b| a.load.cmp(&b.load).then_with(|| a.name.cmp(&b.name)))
        .map(|h| h.name.as_str())
}

/// A host's availability given when a worker of it last beat: the state it
/// moves to, if any. A host comes back `Up` (its worker adopts what it
/// runs) when a worker beats again, whether it was unreachable or lost.
pub fn availability(state: HostState, last_seen_at: i64, now: i64, grace_ms: i64) -> Option<HostState> {
    let silent = now - last_seen_at > grace_ms;
    match (state, silent) {
        (HostState::Up, true) => Some(HostState::Unreachable),
        (HostState::Unreachable | HostState::Lost, false) => Some(HostState::Up),
        (HostState::Up, false) | (HostState::Unreachable, true) | (HostState::Lost, true) => None,
    }
}

/// How a worker's membership reads to operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerHealth {
    /// Its heartbeat is fresh.
    Healthy,
    /// Its heartbeat is overdue: it gets nothing new.
    Missing,
}

impl WorkerHealth {
    /// `fresh_until`: the time its last heartbeat promised the next by.
    pub fn of(fresh_until: i64, now: i64) -> WorkerHealth {
        if now <= fresh_until { WorkerHealth::Healthy } else { WorkerHealth::Missing }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerHealth::Healthy => "healthy",
            WorkerHealth::Missing => "missing",
        }
    }
}

/// How often a worker beats, given the grace after which its host is
/// unreachable: several beats fit in the grace, and never more than one a
/// fifth of a second nor fewer than one every five seconds.
pub fn heartbeat_interval_ms(host_grace_ms: i64) -> i64 {
    (host_grace_ms / 5).clamp(200, 5_000)
}

/// How long one heartbeat keeps a worker healthy: three beats, so one
/// late beat does not take it out of placement.
pub fn heartbeat_fresh_for_ms(host_grace_ms: i64) -> i64 {
    3 * heartbeat_interval_ms(host_grace_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, load: i64, capacity: i64) -> HostLoad {
        HostLoad {
            name: name.into(),
            state: HostState::Up,
            cordoned: false,
            live_workers: 1,
            capacity: Some(capacity),
            load,
        }
    }

    #[test]
    fn a_new_executor_goes_to_the_least_loaded_host_with_room() {
        let table: Vec<(Vec<HostLoad>, Option<&str>)> = vec![
            (vec![], None),
            (vec![host("a", 3, 10), host("b", 1, 10)], Some("b")),
            // Ties go by name, whoever decides.
            (vec![host("b", 2, 10), host("a", 2, 10)], Some("a")),
            // Full hosts get nothing.
            (vec![host("a", 10, 10), host("b", 9, 10)], Some("b")),
            (vec![host("a", 10, 10), host("b", 4, 4)], None),
            (vec![host("a", 10, 10), HostLoad { capacity: None, ..host("b", 400, 0) }], Some("b")),
            // Cordoned, unreachable, lost, and worker-less hosts get nothing.
            (vec![HostLoad { cordoned: true, ..host("a", 0, 10) }, host("b", 5, 10)], Some("b")),
            (vec![HostLoad { state: HostState::Unreachable, ..host("a", 0, 10) }, host("b", 5, 10)], Some("b")),
            (vec![HostLoad { state: HostState::Lost, ..host("a", 0, 10) }], None),
            (vec![HostLoad { live_workers: 0, ..host("a", 0, 10) }, host("b", 9, 10)], Some("b")),
        ];
        for (hosts, want) in table {
            assert_eq!(choose_host(&hosts), want, "{hosts:?}");
        }
    }

    #[test]
    fn a_host_is_unreachable_after_its_grace_and_up_when_a_worker_beats() {
        use HostState::*;
        let grace = 10_000;
        let table = [
            // (state, last seen, now) → next
            ((Up, 0, 10_000), None),
            ((Up, 0, 10_001), Some(Unreachable)),
            ((Unreachable, 0, 50_000), None),
            ((Unreachable, 49_000, 50_000), Some(Up)),
            ((Lost, 0, 50_000), None),
            ((Lost, 49_000, 50_000), Some(Up)),
        ];
        for ((state, seen, now), want) in table {
            assert_eq!(availability(state, seen, now, grace), want, "{state} seen {seen} now {now}");
        }
    }

    #[test]
    fn heartbeats_fit_the_grace() {
        assert_eq!(heartbeat_interval_ms(60_000), 5_000);
        assert_eq!(heartbeat_interval_ms(5_000), 1_000);
        assert_eq!(heartbeat_interval_ms(100), 200);
        assert_eq!(heartbeat_fresh_for_ms(5_000), 3_000);
        assert_eq!(WorkerHealth::of(100, 100), WorkerHealth::Healthy);
        assert_eq!(WorkerHealth::of(100, 101), WorkerHealth::Missing);
        for name in ["up", "unreachable", "lost"] {
            assert_eq!(name.parse::<HostState>().unwrap().as_str(), name);
        }
    }
}
