//! The claim loop's adaptive cadence: work resets it; idle and transient
//! failures share one counter and back off exponentially to a cap (so an
//! outage's end does not bring every worker back in the same instant); a
//! random startup delay in [0, 4 × base) spreads a fleet's first claims.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Cadence {
    base: Duration,
    cap: Duration,
    misses: u32,
}

impl Cadence {
    pub fn new(base: Duration, cap: Duration) -> Self {
        Cadence { base, cap: cap.max(base), misses: 0 }
    }

    /// A claim delivered work: claim again at once.
    pub fn work(&mut self) {
        self.misses = 0;
    }

    /// Nothing was due, or the claim failed: how long to wait.
    pub fn idle(&mut self) -> Duration {
        let delay = self.base.saturating_mul(1u32 << self.misses.min(20)).min(self.cap);
        self.misses = self.misses.saturating_add(1);
        delay
    }

    pub fn startup_delay(&self) -> Duration {
        let mut bytes = [0u8; 8];
        let _ = getrandom::fill(&mut bytes);
        let fraction = u64::from_le_bytes(bytes) as f64 / u64::MAX as f64;
        self.base.mul_f64(4.0 * fraction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_off_to_the_cap_and_resets_on_work() {
        let mut c = Cadence::new(Duration::from_millis(50), Duration::from_millis(300));
        let delays: Vec<u128> = (0..6).map(|_| c.idle().as_millis()).collect();
        assert_eq!(delays, vec![50, 100, 200, 300, 300, 300]);
        c.work();
        assert_eq!(c.idle(), Duration::from_millis(50));
        for _ in 0..100 {
            assert!(c.startup_delay() < Duration::from_millis(200));
        }
    }
}
