//! Weighing a completion attestation: a caller's word that its capture
//! store holds a sealed final capture of one executor. It is weighed
//! against everything observed of that executor, by the stamp order of
//! [`Origin::order`] and never by a clock, when it arrives and again
//! whenever it is about to be used.

use crate::stamp::{Origin, StampOrder};

/// The attestation as a stop carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attestation {
    pub capture_n: u64,
    pub epoch: u64,
    pub executor_id: String,
    pub launch_id: Option<String>,
    pub origin: Option<Origin>,
}

/// The executor an attestation must name.
#[derive(Debug, Clone, Copy)]
pub struct Executor<'a> {
    pub run_id: &'a str,
    pub resource_id: &'a str,
    pub reference: &'a str,
    /// The launch identity the create named, when it named one.
    pub launch_id: Option<&'a str>,
}

/// One stored report of the executor's capture state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub origin: Origin,
    /// The report said the work is saved (a final flush that completed).
    pub saved: bool,
}

/// Which rule refused an attestation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// It names another executor.
    Executor,
    /// It names another launch, or none where the create named one.
    Launch,
    /// Its origin is of another epoch than the one it claims.
    OriginMismatch,
    /// The executor reported a newer epoch.
    OlderEpoch,
    /// The executor reported a capture past the sealed one.
    PastCapture,
    /// In the seal's epoch, the executor said its work is not saved, and
    /// its history does not place that before the seal.
    NotSaved,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Executor => "executor",
            Rule::Launch => "launch",
            Rule::OriginMismatch => "origin-mismatch",
            Rule::OlderEpoch => "older-epoch",
            Rule::PastCapture => "past-capture",
            Rule::NotSaved => "not-saved",
        }
    }
}

/// Why an attestation does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refuted {
    pub rule: Rule,
    pub detail: String,
}

fn refuted(rule: Rule, detail: String) -> Result<(), Refuted> {
    Err(Refuted { rule, detail: format!("{}: {detail}", rule.as_str()) })
}

/// Whether `attestation` holds for `executor` given every report observed
/// of it (in any order).
pub fn weigh(attestation: &Attestation, executor: Executor<'_>, reports: &[Report]) -> Result<(), Refuted> {
    let named = &attestation.executor_id;
    if named != executor.run_id && named != executor.resource_id && named != executor.reference {
        return refuted(Rule::Executor, format!("executorId {named:?} does not name the workspace's current executor"));
    }
    let launch = executor.launch_id.unwrap_or(executor.run_id);
    match (&attestation.launch_id, executor.launch_id) {
        (None, Some(required)) => {
            return refuted(Rule::Launch, format!("the create named launch {required:?}; the attestation names none"));
        }
        (Some(named), _) if named != launch => {
            return refuted(Rule::Launch, format!("launchId {named:?} is not this executor's launch"));
        }
        _ => {}
    }
    if let Some(origin) = &attestation.origin
        && origin.epoch != attestation.epoch
    {
        return refuted(
            Rule::OriginMismatch,
            format!("origin epoch {} is not the attested epoch {}", origin.epoch, attestation.epoch),
        );
    }
    for report in reports {
        let seen = &report.origin;
        if seen.epoch > attestation.epoch {
            return refuted(
                Rule::OlderEpoch,
                format!("epoch {} is older than epoch {} the executor reported", attestation.epoch, seen.epoch),
            );
        }
        if let Some(head) = seen.head_n
            && head > attestation.capture_n
        {
            return refuted(
                Rule::PastCapture,
                format!("the executor reported capture {head}, past captureN {}", attestation.capture_n),
            );
        }
        if report.saved || seen.epoch != attestation.epoch {
            continue;
        }
        let counts = match &attestation.origin {
            Some(seal) => seen.order(seal) != StampOrder::Before,
            None => seen.head_n.is_some_and(|head| head >= attestation.capture_n),
        };
        if counts {
            return refuted(
                Rule::NotSaved,
                format!(
                    "in epoch {} the executor reported its work not saved (observation {} of boot {}) after the seal",
                    seen.epoch, seen.observation, seen.boot_generation
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EXECUTOR: Executor<'static> =
        Executor { run_id: "run_1", resource_id: "res_1", reference: "ref_1", launch_id: None };

    fn origin(epoch: u64, boot: u64, observation: u64, head_n: Option<u64>) -> Origin {
        Origin {
            epoch,
            launch: "run_1".into(),
            boot_id: format!("boot{boot}"),
            boot_generation: boot,
            observation,
            head_n,
        }
    }

    fn attestation(epoch: u64, capture_n: u64, origin: Option<Origin>) -> Attestation {
        Attestation { capture_n, epoch, executor_id: "res_1".into(), launch_id: None, origin }
    }

    fn rule(result: Result<(), Refuted>) -> Option<Rule> {
        result.err().map(|r| r.rule)
    }

    #[test]
    fn each_rule_refutes_with_its_name() {
        let seal = origin(2, 1, 10, Some(5));
        let good = attestation(2, 5, Some(seal.clone()));
        assert_eq!(weigh(&good, EXECUTOR, &[]), Ok(()));
        for id in ["run_1", "res_1", "ref_1"] {
            let named = Attestation { executor_id: id.into(), ..good.clone() };
            assert_eq!(weigh(&named, EXECUTOR, &[]), Ok(()), "{id}");
        }
        let other = Attestation { executor_id: "res_2".into(), ..good.clone() };
        assert_eq!(rule(weigh(&other, EXECUTOR, &[])), Some(Rule::Executor));
        let with_launch = Executor { launch_id: Some("L1"), ..EXECUTOR };
        assert_eq!(rule(weigh(&good, with_launch, &[])), Some(Rule::Launch), "the create named one");
        let wrong_launch = Attestation { launch_id: Some("L2".into()), ..good.clone() };
        assert_eq!(rule(weigh(&wrong_launch, with_launch, &[])), Some(Rule::Launch));
        let right_launch = Attestation { launch_id: Some("L1".into()), ..good.clone() };
        assert_eq!(weigh(&right_launch, with_launch, &[]), Ok(()));
        let mismatch = attestation(3, 5, Some(seal.clone()));
        assert_eq!(rule(weigh(&mismatch, EXECUTOR, &[])), Some(Rule::OriginMismatch));
        let newer = Report { origin: origin(3, 1, 1, Some(1)), saved: true };
        let refusal = weigh(&good, EXECUTOR, &[newer]).unwrap_err();
        assert_eq!(refusal.rule, Rule::OlderEpoch);
        assert!(refusal.detail.starts_with("older-epoch:"), "{}", refusal.detail);
        let past = Report { origin: origin(2, 1, 11, Some(6)), saved: true };
        assert_eq!(rule(weigh(&good, EXECUTOR, &[past])), Some(Rule::PastCapture));
        let later_unsaved = Report { origin: origin(2, 1, 11, Some(5)), saved: false };
        assert_eq!(rule(weigh(&good, EXECUTOR, std::slice::from_ref(&later_unsaved))), Some(Rule::NotSaved));
        let earlier_unsaved = Report { origin: origin(2, 1, 9, Some(5)), saved: false };
        assert_eq!(weigh(&good, EXECUTOR, std::slice::from_ref(&earlier_unsaved)), Ok(()), "placed before the seal");
        let without_origin = attestation(2, 5, None);
        assert_eq!(
            rule(weigh(&without_origin, EXECUTOR, &[earlier_unsaved])),
            Some(Rule::NotSaved),
            "without an origin, a report at captureN counts"
        );
        let below = Report { origin: origin(2, 1, 9, Some(4)), saved: false };
        assert_eq!(weigh(&without_origin, EXECUTOR, &[below]), Ok(()));
        let other_boot_unordered =
            Report { origin: Origin { boot_generation: 0, ..origin(2, 7, 1, Some(5)) }, saved: false };
        assert_eq!(rule(weigh(&good, EXECUTOR, &[other_boot_unordered])), Some(Rule::NotSaved), "unordered counts");
        let older_epoch_unsaved = Report { origin: origin(1, 1, 50, Some(5)), saved: false };
        assert_eq!(weigh(&good, EXECUTOR, &[older_epoch_unsaved]), Ok(()), "another epoch's report is not weighed");
    }

    fn any_origin() -> impl Strategy<Value = Origin> {
        (0u64..4, 0u64..4, 0u64..20, proptest::option::of(0u64..8))
            .prop_map(|(epoch, boot, observation, head)| origin(epoch, boot, observation, head))
    }

    fn any_report() -> impl Strategy<Value = Report> {
        (any_origin(), any::<bool>()).prop_map(|(origin, saved)| Report { origin, saved })
    }

    fn any_attestation() -> impl Strategy<Value = Attestation> {
        (0u64..4, 0u64..8, proptest::option::of((0u64..4, 0u64..20))).prop_map(|(epoch, n, seal)| {
            attestation(epoch, n, seal.map(|(boot, observation)| origin(epoch, boot, observation, Some(n))))
        })
    }

    proptest! {
        /// A further report can only refute, never rescue.
        #[test]
        fn more_evidence_never_rescues(a in any_attestation(), reports in proptest::collection::vec(any_report(), 0..8), extra in any_report()) {
            let before = weigh(&a, EXECUTOR, &reports);
            let mut more = reports.clone();
            more.push(extra);
            let after = weigh(&a, EXECUTOR, &more);
            prop_assert!(!(before.is_err() && after.is_ok()));
        }

        /// The order evidence was stored in does not matter.
        #[test]
        fn the_order_of_reports_does_not_matter(a in any_attestation(), reports in proptest::collection::vec(any_report(), 0..8)) {
            let mut reversed = reports.clone();
            reversed.reverse();
            prop_assert_eq!(weigh(&a, EXECUTOR, &reports).is_ok(), weigh(&a, EXECUTOR, &reversed).is_ok());
        }

        /// Any report of a newer epoch refutes; any not-saved report of the
        /// seal's epoch at or past its capture refutes unless the
        /// executor's history places it before the seal.
        #[test]
        fn the_rules_hold(a in any_attestation(), report in any_report()) {
            let result = weigh(&a, EXECUTOR, std::slice::from_ref(&report));
            if report.origin.epoch > a.epoch {
                prop_assert_eq!(rule(result.clone()), Some(Rule::OlderEpoch));
            }
            if report.origin.head_n.is_some_and(|h| h > a.capture_n) {
                prop_assert!(result.is_err());
            }
            let same_epoch_unsaved = report.origin.epoch == a.epoch && !report.saved;
            if same_epoch_unsaved && report.origin.head_n.is_some_and(|h| h >= a.capture_n) {
                let before_seal = a.origin.as_ref().is_some_and(|seal| report.origin.order(seal) == StampOrder::Before);
                prop_assert_eq!(result.is_err(), !before_seal || report.origin.head_n > Some(a.capture_n));
            }
            if report.saved && report.origin.epoch <= a.epoch && report.origin.head_n.is_none_or(|h| h <= a.capture_n) {
                prop_assert!(result.is_ok(), "a saved report never refutes");
            }
        }
    }
}
