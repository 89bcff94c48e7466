//! What each event of a workspace's log carries in its `data`, typed: the
//! transition builds these, the store writes them as JSON, and the API,
//! the streams and webhooks serve that JSON as it always read (a field the
//! contract sends as `null` stays `null`; one it leaves out stays out).

use serde::Serialize;
use serde_json::Value;

use crate::ids::{LaunchId, RunId};
use crate::model::SleepReason;
use crate::model::{PublishedImage, Run, RunRelation, RuntimeRecord, TriggerType};
use crate::sleep::WakeCause;

/// `workspace.created`: what was asked for.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Created<'a> {
    pub name: &'a str,
    pub registry_id: &'a str,
    pub repository: &'a str,
    pub tag: &'a str,
    /// RFC 3339; `null` when it never expires.
    pub expires_at: Option<&'a str>,
}

/// `attempt.queued`: why a run was queued.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Queued<'a> {
    /// A create's first run, under the caller's launch id if it chose one.
    #[serde(rename_all = "camelCase")]
    Launch {
        relation: RunRelation,
        trigger_type: TriggerType,
        #[serde(skip_serializing_if = "Option::is_none")]
        launch_id: Option<&'a LaunchId>,
    },
    /// An owner's restart: the run it replaces (`null` if there was none).
    #[serde(rename_all = "camelCase")]
    Restart { relation: RunRelation, trigger_type: TriggerType, restart_of: Option<&'a RunId> },
    /// A sleeping workspace woken: the run it slept on, and what woke it.
    #[serde(rename_all = "camelCase")]
    Resume { relation: RunRelation, trigger_type: TriggerType, resume_of: Option<&'a RunId>, woken_by: WakeCause },
    /// A failed launch tried again.
    #[serde(rename_all = "camelCase")]
    Retry { relation: RunRelation, trigger_type: TriggerType, retry_of: &'a RunId, launch_attempt: i64 },
}

impl<'a> Queued<'a> {
    pub fn launch(run: &'a Run) -> Queued<'a> {
        Queued::Launch { relation: run.relation, trigger_type: run.trigger_type, launch_id: run.launch_id.as_ref() }
    }

    pub fn restart(of: Option<&'a RunId>) -> Queued<'a> {
        Queued::Restart { relation: RunRelation::Launch, trigger_type: TriggerType::Api, restart_of: of }
    }

    pub fn resume(of: Option<&'a RunId>, cause: WakeCause) -> Queued<'a> {
        Queued::Resume { relation: RunRelation::Resume, trigger_type: TriggerType::Api, resume_of: of, woken_by: cause }
    }

    pub fn retry(of: &'a RunId, launch_attempt: i64) -> Queued<'a> {
        Queued::Retry { relation: RunRelation::Retry, trigger_type: TriggerType::Retry, retry_of: of, launch_attempt }
    }
}

/// `sluice.workspace.slept`: the run whose runtime went, and why it slept.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Slept<'a> {
    pub run_id: Option<&'a RunId>,
    pub reason: SleepReason,
}

/// `sluice.workspace.woken`: the run that resumes it, what woke it, and
/// since when it slept (Unix ms).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Woken<'a> {
    pub run_id: &'a RunId,
    pub cause: WakeCause,
    pub slept_since: Option<i64>,
}

/// `attempt.failed`: why, by which rule, and whether it is tried again.
#[derive(Debug, Serialize)]
pub struct AttemptFailed<'a> {
    pub message: &'a str,
    /// `null` when no rule names it.
    pub code: Option<&'a str>,
    pub retry: bool,
}

/// `image.published`: what the runtime resolved the image to.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImagePublished<'a> {
    pub reference: &'a str,
    pub digest_reference: &'a str,
    pub digest: &'a str,
}

impl<'a> ImagePublished<'a> {
    pub fn of(image: &'a PublishedImage) -> ImagePublished<'a> {
        ImagePublished { reference: &image.reference, digest_reference: &image.digest_reference, digest: &image.digest }
    }
}

/// `runtime.*`: the executor on its runtime, and why it was retained.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeEvent<'a> {
    pub adapter: &'static str,
    pub resource_id: &'a str,
    pub reference: &'a str,
    pub status: &'static str,
    pub run_id: &'a RunId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_id: Option<&'a LaunchId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retained: Option<&'a str>,
}

impl<'a> RuntimeEvent<'a> {
    pub fn of(runtime: &'a RuntimeRecord, run: &'a Run) -> RuntimeEvent<'a> {
        RuntimeEvent {
            adapter: runtime.adapter.as_str(),
            resource_id: &runtime.resource_id,
            reference: &runtime.reference,
            status: runtime.status.as_str(),
            run_id: &run.id,
            endpoint: runtime.endpoint.as_deref(),
            launch_id: run.launch_id.as_ref(),
            retained: None,
        }
    }
}

/// `sluice.drain.changed`: where a drain stands (`null` for what the daemon
/// did not say).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainChanged<'a> {
    pub run_id: &'a RunId,
    pub state: Option<&'static str>,
    pub pending: Option<i64>,
    pub pending_bytes: Option<i64>,
    pub registered: Option<i64>,
    pub uploaded_bytes: Option<i64>,
    pub final_complete: bool,
}

/// `sluice.executor.retained`: why, since when, whether it can be recovered.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutorRetained<'a> {
    pub run_id: &'a RunId,
    pub reason: &'a str,
    pub since: i64,
    pub recoverable: bool,
}

/// `sluice.recovery.attempted`: the attempt, its error and the next one
/// (`null` where there is none).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryAttempted<'a> {
    pub run_id: &'a RunId,
    pub attempt: i64,
    pub error: Option<&'a str>,
    pub next_attempt_at: Option<i64>,
}

/// `sluice.capture.registered`: which capture of which session, and its size.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureRegistered<'a> {
    pub session_id: &'a str,
    pub n: u64,
    pub bytes: u64,
    pub files: u64,
    pub added: u64,
    pub changed: u64,
    pub removed: u64,
}

/// `sluice.gateway.session.started`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStarted<'a> {
    pub session_id: &'a str,
    pub kind: &'a str,
    pub principal: &'a str,
}

/// `sluice.gateway.session.ended`: how, and its exit status (`null` if none).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEnded<'a> {
    pub session_id: &'a str,
    pub kind: &'a str,
    pub principal: &'a str,
    pub outcome: &'a str,
    pub exit_status: Option<i64>,
}

/// `sluice.webhook.disabled`: which endpoint, after how many failures, why.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDisabled<'a> {
    pub webhook_id: &'a str,
    pub failures: i64,
    pub reason: &'a str,
}

/// `sluice.image.pulling`: how far the pull of a launch's image is.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImagePulling<'a> {
    pub image: &'a str,
    pub done_bytes: u64,
    pub total_bytes: u64,
}

/// `sluice.template.built`: a template build ended (`succeeded`, at once
/// for an unchanged rebuild, or `failed`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateBuilt<'a> {
    pub template: &'a str,
    pub build_id: &'a str,
    pub state: &'a str,
}

/// The JSON an event stores.
/// `sluice.workspace.deleted`: by whom (`owner` or `purge`), and the
/// status it had ended in.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceDeleted<'a> {
    pub by: &'a str,
    pub status: &'a str,
}

pub fn json(data: impl Serialize) -> Value {
    serde_json::to_value(data).expect("event data is plain JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json as literal;

    #[test]
    fn each_payload_reads_as_the_contract_has_it() {
        let created = Created { name: "box", registry_id: "local", repository: "busybox", tag: "1", expires_at: None };
        assert_eq!(
            json(created),
            literal!({"name": "box", "registryId": "local", "repository": "busybox", "tag": "1", "expiresAt": null})
        );
        let run = Run::queued("run_1".into(), "ws_1".into(), crate::spec::Spec::default(), Some("l-1".into()), 0);
        assert_eq!(
            json(Queued::launch(&run)),
            literal!({"relation": "launch", "triggerType": "api", "launchId": "l-1"})
        );
        let plain = Run { launch_id: None, ..run.clone() };
        assert_eq!(json(Queued::launch(&plain)), literal!({"relation": "launch", "triggerType": "api"}));
        assert_eq!(
            json(Queued::restart(None)),
            literal!({"relation": "launch", "triggerType": "api", "restartOf": null})
        );
        assert_eq!(
            json(Queued::retry(&run.id, 2)),
            literal!({"relation": "retry", "triggerType": "retry", "retryOf": "run_1", "launchAttempt": 2})
        );
        assert_eq!(
            json(AttemptFailed { message: "m", code: None, retry: true }),
            literal!({"message": "m", "code": null, "retry": true})
        );
        let runtime = RuntimeRecord {
            adapter: crate::model::RuntimeAdapter::Docker,
            resource_id: "c1".into(),
            reference: "sluice-run_1".into(),
            status: crate::model::RuntimeStatus::Running,
            endpoint: None,
            deadline: None,
        };
        assert_eq!(
            json(RuntimeEvent { retained: Some("why"), ..RuntimeEvent::of(&runtime, &plain) }),
            literal!({"adapter": "docker", "resourceId": "c1", "reference": "sluice-run_1", "status": "running",
                      "runId": "run_1", "retained": "why"})
        );
    }

    #[test]
    fn sluices_own_events_keep_their_nulls() {
        let run_id = RunId::from("run_1");
        let drain = DrainChanged {
            run_id: &run_id,
            state: Some("kept"),
            pending: None,
            pending_bytes: Some(5),
            registered: None,
            uploaded_bytes: None,
            final_complete: false,
        };
        assert_eq!(
            json(drain),
            literal!({"runId": "run_1", "state": "kept", "pending": null, "pendingBytes": 5, "registered": null,
                      "uploadedBytes": null, "finalComplete": false})
        );
        let attempt = RecoveryAttempted { run_id: &run_id, attempt: 2, error: None, next_attempt_at: None };
        assert_eq!(json(attempt), literal!({"runId": "run_1", "attempt": 2, "error": null, "nextAttemptAt": null}));
        let ended =
            SessionEnded { session_id: "ses_1", kind: "shell", principal: "p", outcome: "cut", exit_status: None };
        assert_eq!(
            json(ended),
            literal!({"sessionId": "ses_1", "kind": "shell", "principal": "p", "outcome": "cut", "exitStatus": null})
        );
        let disabled = WebhookDisabled { webhook_id: "wh_1", failures: 3, reason: "500" };
        assert_eq!(json(disabled), literal!({"webhookId": "wh_1", "failures": 3, "reason": "500"}));
    }
}
