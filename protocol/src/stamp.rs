//! Origin stamps and the one rule that orders two of them.
//!
//! Evidence about one executor (a status answer, a seal) is ordered by where
//! in the executor's own history it was made, never by a clock: clocks of
//! different hosts and boots disagree, and a daemon's clock is the
//! executor's to set.

use serde::{Deserialize, Serialize};

/// Where in an executor's own history an answer or a seal was made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CaptureExecutorOrigin))]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// The capture lease epoch the daemon holds.
    pub epoch: u64,
    /// The launch identity the executor was started with.
    pub launch: String,
    /// Random per daemon start.
    pub boot_id: String,
    /// How many daemon boots opened this disk (0: unknown).
    pub boot_generation: u64,
    /// Grows within a boot.
    pub observation: u64,
    /// The capture head the daemon knew of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_n: Option<u64>,
}

/// How two stamps relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampOrder {
    Before,
    Same,
    After,
    /// The rule cannot place one before the other.
    Unordered,
}

impl StampOrder {
    fn of(ordering: std::cmp::Ordering) -> StampOrder {
        match ordering {
            std::cmp::Ordering::Less => StampOrder::Before,
            std::cmp::Ordering::Equal => StampOrder::Same,
            std::cmp::Ordering::Greater => StampOrder::After,
        }
    }

    /// The same relation seen from the other stamp.
    pub fn reversed(self) -> StampOrder {
        match self {
            StampOrder::Before => StampOrder::After,
            StampOrder::After => StampOrder::Before,
            other => other,
        }
    }
}

impl Origin {
    /// Where `self` stands relative to `other`: of the same epoch, launch
    /// and boot, by observation; of the same epoch and launch and different
    /// boots whose generations are both known (above 0) and differ, by
    /// (generation, observation); anything else is unordered.
    pub fn order(&self, other: &Origin) -> StampOrder {
        if self.epoch != other.epoch || self.launch != other.launch {
            return StampOrder::Unordered;
        }
        if self.boot_id == other.boot_id {
            return StampOrder::of(self.observation.cmp(&other.observation));
        }
        let known = self.boot_generation > 0 && other.boot_generation > 0;
        if known && self.boot_generation != other.boot_generation {
            return StampOrder::of(
                (self.boot_generation, self.observation).cmp(&(other.boot_generation, other.observation)),
            );
        }
        StampOrder::Unordered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stamp(epoch: u64, launch: &str, boot: &str, generation: u64, observation: u64) -> Origin {
        Origin {
            epoch,
            launch: launch.into(),
            boot_id: boot.into(),
            boot_generation: generation,
            observation,
            head_n: None,
        }
    }

    #[test]
    fn the_contract_cases() {
        use StampOrder::*;
        let a = stamp(1, "l", "b1", 1, 5);
        // Same epoch, launch and boot: by observation.
        assert_eq!(a.order(&stamp(1, "l", "b1", 1, 9)), Before);
        assert_eq!(a.order(&stamp(1, "l", "b1", 1, 5)), Same);
        assert_eq!(a.order(&stamp(1, "l", "b1", 1, 2)), After);
        // Different boots with known, different generations: by generation
        // first, whatever the observations say.
        assert_eq!(a.order(&stamp(1, "l", "b2", 2, 0)), Before);
        assert_eq!(stamp(1, "l", "b2", 3, 0).order(&stamp(1, "l", "b1", 2, 900)), After);
        // An unknown generation, or the same generation on two boots.
        assert_eq!(a.order(&stamp(1, "l", "b2", 0, 9)), Unordered);
        assert_eq!(stamp(1, "l", "b1", 0, 1).order(&stamp(1, "l", "b2", 4, 9)), Unordered);
        assert_eq!(a.order(&stamp(1, "l", "b2", 1, 9)), Unordered);
        // Another epoch or launch is never ordered, even on the same boot.
        assert_eq!(a.order(&stamp(2, "l", "b1", 1, 9)), Unordered);
        assert_eq!(a.order(&stamp(1, "m", "b1", 1, 9)), Unordered);
        // The head a stamp carries takes no part in the order.
        let mut with_head = stamp(1, "l", "b1", 1, 9);
        with_head.head_n = Some(0);
        assert_eq!(a.order(&with_head), Before);
    }

    fn any_stamp() -> impl Strategy<Value = Origin> {
        (
            0u64..3,
            prop::sample::select(vec!["l1", "l2"]),
            prop::sample::select(vec!["b1", "b2", "b3"]),
            0u64..4,
            0u64..6,
        )
            .prop_map(|(e, l, b, g, o)| stamp(e, l, b, g, o))
    }

    proptest! {
        #[test]
        fn the_order_is_antisymmetric(a in any_stamp(), b in any_stamp()) {
            prop_assert_eq!(a.order(&b), b.order(&a).reversed());
            prop_assert_eq!(a.order(&a), StampOrder::Same);
        }

        #[test]
        fn the_order_is_transitive_where_it_orders(a in any_stamp(), b in any_stamp(), c in any_stamp()) {
            // Boots keep their generation: a boot id stands for one boot of one disk.
            let generation_of = |o: &Origin| (o.boot_id.clone(), o.boot_generation);
            let consistent = [&a, &b, &c].iter().all(|x| [&a, &b, &c].iter().all(|y| {
                x.boot_id != y.boot_id || generation_of(x) == generation_of(y)
            }));
            prop_assume!(consistent);
            if a.order(&b) == StampOrder::Before && b.order(&c) == StampOrder::Before {
                prop_assert_eq!(a.order(&c), StampOrder::Before);
            }
        }

        #[test]
        fn only_epoch_launch_boot_generation_and_observation_count(a in any_stamp(), b in any_stamp(), h in 0u64..9) {
            let mut moved = b.clone();
            moved.head_n = Some(h);
            prop_assert_eq!(a.order(&b), a.order(&moved));
        }
    }
}
