//! The store suite: every test runs unchanged on SQLite and on PostgreSQL.

use std::collections::BTreeMap;

use serde_json::json;
use sluice_domain::ids::{
    ConsoleSessionId, IdempotencyKey, LaunchId, OwnerId, PreviewId, RunId, SshSessionId, WorkerId, WorkspaceId,
};
use sluice_domain::transition::{Answer, Outcome, Request};
use sluice_store::testing::{databases, open};
use sluice_store::*;

fn new_workspace(owner: &str, key: Option<(&str, &str)>) -> NewWorkspace {
    NewWorkspace {
        owner_user_id: owner.into(),
        name: "dev".into(),
        registry_id: "local".into(),
        repository: "sluice/busybox".into(),
        tag: "1".into(),
        spec: sluice_store::spec::Spec::parse(json!({"cpu": 1})).unwrap(),
        ttl_ms: None,
        launch_id: Some("launch-1".into()),
        idempotency: key.map(|(k, h)| Idempotency { key: k.into(), request_hash: h.into() }),
        secret_env: None,
        capture_token: None,
        broker: None,
    }
}

/// A local executor's record, as a launch writes it.
fn launched(runtime: &RuntimeRecord, preservation_starts_at: Option<i64>) -> Outcome {
    Outcome::Launched { runtime: runtime.clone(), published: None, preservation_starts_at }
}

fn stop(owner: &str, intent: StopIntent) -> Request {
    Request::Stop { by: owner.into(), intent }
}

/// What a stop said of its attestation.
fn completion(next: Option<sluice_domain::transition::Transition>) -> Option<(AttestationOutcome, Option<String>)> {
    match next.expect("the owner's workspace").answer {
        Answer::Stop { completion } => completion,
        other => panic!("a stop answered {other:?}"),
    }
}

/// What a recovery request said; `None`: not the owner's.
async fn recover(store: &Store, owner: &str, id: &str) -> Option<Option<bool>> {
    let next = store.request(&OwnerId::from(owner), &WorkspaceId::from(id), Request::Recover).await.unwrap()?;
    match next.answer {
        Answer::Recover { recoverable } => Some(recoverable),
        other => panic!("a recovery request answered {other:?}"),
    }
}

fn running_runtime() -> RuntimeRecord {
    RuntimeRecord {
        adapter: RuntimeAdapter::Local,
        resource_id: "r1".into(),
        reference: "r1".into(),
        status: RuntimeStatus::Running,
        endpoint: None,
        deadline: None,
    }
}

/// Asks `check` again and again (a few milliseconds apart) until it answers
/// `Some`; panics naming `what` after thirty seconds. How a test waits for
/// a lease or a grace to run out, or for the feed to show what committed:
/// never a fixed sleep.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(what: &str, mut check: impl FnMut() -> F) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(done) = check().await {
            return done;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: not within thirty seconds");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

fn created(outcome: CreateOutcome) -> WorkspaceView {
    match outcome {
        CreateOutcome::Created(v) => v,
        CreateOutcome::Replayed(_) => panic!("expected a fresh create"),
    }
}

#[tokio::test]
async fn create_writes_workspace_run_and_events_together() {
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let run = view.current_run.clone().expect("a first run");
        assert_eq!(view.workspace.status, WorkspaceStatus::Queued, "{}", db.label);
        assert_eq!(run.status, WorkspaceStatus::Queued);
        assert_eq!(run.relation, RunRelation::Launch);
        assert_eq!(run.launch_id.as_deref(), Some("launch-1"));

        let events = store.list_events(&OwnerId::from("alice"), &view.workspace.id, 100).await.unwrap().unwrap();
        let kinds: Vec<_> = events.iter().map(|e| (e.seq, e.event_type)).collect();
        assert_eq!(kinds, vec![(1, EventType::WorkspaceCreated), (2, EventType::AttemptQueued)], "{}", db.label);
        assert_eq!(events[1].attempt_id.as_deref(), Some(run.id.as_str()));

        let runs = store.list_runs(&OwnerId::from("alice"), &view.workspace.id, 10).await.unwrap().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(store.get_workspace(&OwnerId::from("alice"), &view.workspace.id).await.unwrap(), Some(view.clone()));
    }
}

#[tokio::test]
async fn other_owners_see_nothing() {
    for db in databases().await {
        let store = open(&db).await;
        let id = created(store.create_workspace(new_workspace("alice", None)).await.unwrap()).workspace.id;
        assert!(store.get_workspace(&OwnerId::from("mallory"), &id).await.unwrap().is_none(), "{}", db.label);
        assert!(store.list_events(&OwnerId::from("mallory"), &id, 10).await.unwrap().is_none());
        assert!(store.list_runs(&OwnerId::from("mallory"), &id, 10).await.unwrap().is_none());
        assert!(store.rename_workspace(&OwnerId::from("mallory"), &id, "x").await.unwrap().is_none());
        assert!(store.set_expiry(&OwnerId::from("mallory"), &id, Some(1)).await.unwrap().is_none());
        let filter = WorkspaceFilter { limit: 10, ..Default::default() };
        assert!(store.list_workspaces(&OwnerId::from("mallory"), &filter).await.unwrap().is_empty());
        assert_eq!(store.list_workspaces(&OwnerId::from("alice"), &filter).await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn idempotent_create_replays_refuses_and_cancels() {
    for db in databases().await {
        let store = open(&db).await;
        let first = created(store.create_workspace(new_workspace("alice", Some(("k1", "h1")))).await.unwrap());
        match store.create_workspace(new_workspace("alice", Some(("k1", "h1")))).await.unwrap() {
            CreateOutcome::Replayed(v) => assert_eq!(v.workspace.id, first.workspace.id, "{}", db.label),
            CreateOutcome::Created(_) => panic!("{}: a repeat made a second workspace", db.label),
        }
        assert!(matches!(
            store.create_workspace(new_workspace("alice", Some(("k1", "other")))).await,
            Err(StoreError::IdempotencyKeyReused)
        ));
        // Keys are scoped to the owner.
        created(store.create_workspace(new_workspace("bob", Some(("k1", "other")))).await.unwrap());

        let key = store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("k1")).await.unwrap();
        assert_eq!(key.state, CreateKeyState::Found);
        assert_eq!(key.workspace_id.as_deref(), Some(first.workspace.id.as_str()));
        assert_eq!(key.launch_id.as_deref(), Some("launch-1"));
        // Cancelling a committed create leaves it found.
        assert_eq!(
            store.cancel_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("k1")).await.unwrap().state,
            CreateKeyState::Found
        );

        assert_eq!(
            store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("k2")).await.unwrap().state,
            CreateKeyState::None
        );
        assert_eq!(
            store.cancel_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("k2")).await.unwrap().state,
            CreateKeyState::Cancelled
        );
        assert!(matches!(
            store.create_workspace(new_workspace("alice", Some(("k2", "h1")))).await,
            Err(StoreError::CreateCancelled)
        ));
        let filter = WorkspaceFilter { limit: 10, idempotency_key: Some("k2".into()), ..Default::default() };
        assert!(store.list_workspaces(&OwnerId::from("alice"), &filter).await.unwrap().is_empty(), "{}", db.label);
        let filter = WorkspaceFilter { limit: 10, idempotency_key: Some("k1".into()), ..Default::default() };
        assert_eq!(store.list_workspaces(&OwnerId::from("alice"), &filter).await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn concurrent_creates_with_one_key_make_one_workspace() {
    for db in databases().await {
        let store = open(&db).await;
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.create_workspace(new_workspace("alice", Some(("same", "h")))).await })
            })
            .collect();
        let mut ids = std::collections::BTreeSet::new();
        let mut fresh = 0;
        for t in tasks {
            match t.await.unwrap().unwrap() {
                CreateOutcome::Created(v) => {
                    fresh += 1;
                    ids.insert(v.workspace.id);
                }
                CreateOutcome::Replayed(v) => {
                    ids.insert(v.workspace.id);
                }
            }
        }
        assert_eq!((fresh, ids.len()), (1, 1), "{}", db.label);
        let all = store
            .list_workspaces(&OwnerId::from("alice"), &WorkspaceFilter { limit: 100, ..Default::default() })
            .await
            .unwrap();
        assert_eq!(all.len(), 1, "{}", db.label);
    }
}

#[tokio::test]
async fn cancel_racing_creates_leaves_all_or_nothing() {
    for db in databases().await {
        let store = open(&db).await;
        for round in 0..10 {
            let key = format!("race-{round}");
            let creates: Vec<_> = (0..5)
                .map(|_| {
                    let (store, key) = (store.clone(), key.clone());
                    tokio::spawn(async move { store.create_workspace(new_workspace("alice", Some((&key, "h")))).await })
                })
                .collect();
            let cancel = store.cancel_create_key(&OwnerId::from("alice"), &IdempotencyKey::from(&key)).await.unwrap();
            let mut committed = 0;
            for c in creates {
                match c.await.unwrap() {
                    Ok(CreateOutcome::Created(_)) => committed += 1,
                    Ok(CreateOutcome::Replayed(_)) | Err(StoreError::CreateCancelled) => {}
                    Err(e) => panic!("{}: unexpected {e}", db.label),
                }
            }
            let filter = WorkspaceFilter {
                limit: 10,
                idempotency_key: Some(IdempotencyKey::from(key.clone())),
                ..Default::default()
            };
            let made = store.list_workspaces(&OwnerId::from("alice"), &filter).await.unwrap().len();
            let state = store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from(&key)).await.unwrap().state;
            match cancel.state {
                CreateKeyState::Cancelled => {
                    assert_eq!((committed, made, state), (0, 0, CreateKeyState::Cancelled), "{}", db.label)
                }
                CreateKeyState::Found => {
                    assert_eq!((committed, made, state), (1, 1, CreateKeyState::Found), "{}", db.label)
                }
                other => panic!("cancel answered {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn secrets_are_sealed_and_open_back() {
    for db in databases().await {
        let store = open(&db).await;
        let mut new = new_workspace("alice", None);
        new.secret_env = Some(Secret::new(BTreeMap::from([("API_KEY".to_owned(), "s3cr3t-value-123".to_owned())])));
        new.capture_token = Some(Secret::new("capture-token-xyz".into()));
        let id = created(store.create_workspace(new).await.unwrap()).workspace.id;
        assert!(!store.any_column_contains("s3cr3t-value-123").await.unwrap(), "{}", db.label);
        assert!(!store.any_column_contains("capture-token-xyz").await.unwrap());
        assert!(store.any_column_contains("sluice/busybox").await.unwrap(), "the scan must see plain columns");
        let env = store.open_secret(&id, SecretKind::SecretEnv).await.unwrap().unwrap();
        assert!(String::from_utf8_lossy(env.expose()).contains("s3cr3t-value-123"));
        let token = store.open_secret(&id, SecretKind::CaptureToken).await.unwrap().unwrap();
        assert_eq!(token.expose(), b"capture-token-xyz");
        // Once the executor is ready the token stays sealed: a restart's new executor claims with it.
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        let run_id = store.load_reconcile_state(&id).await.unwrap().unwrap().current_run.unwrap().id;
        store.record(&lease, &run_id, launched(&running_runtime(), None)).await.unwrap();
        store.record(&lease, &run_id, Outcome::Ready).await.unwrap();
        assert!(store.open_secret(&id, SecretKind::CaptureToken).await.unwrap().is_some(), "{}", db.label);
        assert!(store.open_secret(&id, SecretKind::SecretEnv).await.unwrap().is_some(), "secretEnv stays");
        assert!(!store.any_column_contains("capture-token-xyz").await.unwrap(), "still sealed");
    }
}

#[tokio::test]
async fn guard_refuses_credentials_in_spec_and_writes_nothing() {
    for db in databases().await {
        let store = open(&db).await;
        let mut new = new_workspace("alice", Some(("g", "h")));
        new.spec = sluice_store::spec::Spec::parse(json!({"env": {"AWS": "AKIAIOSFODNN7EXAMPLE"}})).unwrap();
        match store.create_workspace(new).await {
            Err(StoreError::Guard(v)) => assert_eq!(v.path, "spec.env.AWS"),
            other => panic!("{}: expected a guard refusal, got {other:?}", db.label),
        }
        assert_eq!(
            store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("g")).await.unwrap().state,
            CreateKeyState::None
        );
        assert!(!store.any_column_contains("AKIAIOSFODNN7EXAMPLE").await.unwrap());
    }
}

#[tokio::test]
async fn rename_expire_list_and_purge() {
    for db in databases().await {
        let store = open(&db).await;
        let a = created(store.create_workspace(new_workspace("alice", Some(("old", "h")))).await.unwrap()).workspace.id;
        let b = created(store.create_workspace(new_workspace("alice", None)).await.unwrap()).workspace.id;
        let renamed = store.rename_workspace(&OwnerId::from("alice"), &a, "renamed").await.unwrap().unwrap();
        assert_eq!(renamed.name, "renamed");
        let expiring = store.set_expiry(&OwnerId::from("alice"), &a, Some(123_000)).await.unwrap().unwrap();
        assert_eq!(expiring.expires_at, Some(123_000));
        assert_eq!(store.set_expiry(&OwnerId::from("alice"), &a, None).await.unwrap().unwrap().expires_at, None);

        let all = store
            .list_workspaces(&OwnerId::from("alice"), &WorkspaceFilter { limit: 10, ..Default::default() })
            .await
            .unwrap();
        assert_eq!(
            all.iter().map(|v| v.workspace.id.clone()).collect::<Vec<_>>(),
            vec![b.clone(), a.clone()],
            "newest first"
        );
        let one = store
            .list_workspaces(&OwnerId::from("alice"), &WorkspaceFilter { limit: 1, ..Default::default() })
            .await
            .unwrap();
        assert_eq!(one.len(), 1);
        let stopped = WorkspaceFilter { limit: 10, status: Some(WorkspaceStatus::Stopped), ..Default::default() };
        assert!(store.list_workspaces(&OwnerId::from("alice"), &stopped).await.unwrap().is_empty());
        assert!(all.iter().all(|v| v.current_run.is_some()));

        assert_eq!(store.purge_create_keys(0).await.unwrap(), 0);
        assert_eq!(store.purge_create_keys(clock::now_ms() + 1).await.unwrap(), 1, "{}", db.label);
        assert_eq!(
            store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("old")).await.unwrap().state,
            CreateKeyState::None
        );
        // Purged, the key is forgotten in memory too: a create with it makes a new workspace.
        let again = created(store.create_workspace(new_workspace("alice", Some(("old", "h")))).await.unwrap());
        assert_ne!(again.workspace.id, a, "{}", db.label);
    }
}

#[tokio::test]
async fn a_create_refused_before_it_commits_leaves_nothing() {
    for db in databases().await {
        let store = open(&db).await;
        // The create is refused: its event data would carry a secret.
        let mut doomed = new_workspace("alice", Some(("half", "h")));
        doomed.name = "AKIAIOSFODNN7EXAMPLE".into();
        assert!(matches!(store.create_workspace(doomed).await, Err(StoreError::Guard(_))), "{}", db.label);
        let key = store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("half")).await.unwrap();
        assert_eq!((key.state, key.workspace_id), (CreateKeyState::None, None), "{}", db.label);
        assert!(
            store
                .list_workspaces(&OwnerId::from("alice"), &WorkspaceFilter { limit: 10, ..Default::default() })
                .await
                .unwrap()
                .is_empty()
        );

        // A repeat of the same request creates.
        let made = created(store.create_workspace(new_workspace("alice", Some(("half", "h")))).await.unwrap());
        assert_eq!(
            store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("half")).await.unwrap().workspace_id,
            Some(made.workspace.id)
        );

        // A key cancelled first never lets a create commit.
        assert_eq!(
            store.cancel_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("half-2")).await.unwrap().state,
            CreateKeyState::Cancelled
        );
        assert!(matches!(
            store.create_workspace(new_workspace("alice", Some(("half-2", "h")))).await,
            Err(StoreError::CreateCancelled)
        ));

        // A key an earlier release left pending: a repeat of its request
        // finishes it, another request is refused, a cancel holds.
        store.plant_pending_key(&OwnerId::from("alice"), &IdempotencyKey::from("old"), "h").await;
        assert!(matches!(
            store.create_workspace(new_workspace("alice", Some(("old", "other")))).await,
            Err(StoreError::IdempotencyKeyReused)
        ));
        let finished = created(store.create_workspace(new_workspace("alice", Some(("old", "h")))).await.unwrap());
        let key = store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("old")).await.unwrap();
        assert_eq!((key.state, key.workspace_id), (CreateKeyState::Found, Some(finished.workspace.id)), "{}", db.label);
        store.plant_pending_key(&OwnerId::from("alice"), &IdempotencyKey::from("old-2"), "h").await;
        assert_eq!(
            store.cancel_create_key(&OwnerId::from("alice"), &IdempotencyKey::from("old-2")).await.unwrap().state,
            CreateKeyState::Cancelled
        );
        assert!(matches!(
            store.create_workspace(new_workspace("alice", Some(("old-2", "h")))).await,
            Err(StoreError::CreateCancelled)
        ));
    }
}

/// Creates in flight together commit together: each key is taken once
/// (repeats inside one batch replay the first), each create answers what
/// it made, and every workspace reads back whole with its two events and
/// its due job.
#[tokio::test]
async fn concurrent_creates_share_commits_and_keys_stay_once() {
    for db in databases().await {
        let store = open(&db).await;
        let mut creates = Vec::new();
        for i in 0..48 {
            let store = store.clone();
            creates.push(tokio::spawn(async move {
                // Every third create repeats key k(i % 8); a third carry no key.
                let key = match i % 3 {
                    0 => None,
                    _ => Some(format!("k{}", i % 8)),
                };
                let mut new = new_workspace("alice", None);
                new.idempotency =
                    key.clone().map(|key| Idempotency { key: IdempotencyKey::from(key), request_hash: "h".into() });
                new.secret_env = Some(Secret::new(BTreeMap::from([("TOKEN".to_owned(), format!("s-{i}"))])));
                (key, store.create_workspace(new).await.unwrap())
            }));
        }
        let mut by_key: BTreeMap<String, (usize, std::collections::BTreeSet<String>)> = BTreeMap::new();
        let mut made = Vec::new();
        for create in creates {
            let (key, outcome) = create.await.unwrap();
            let (view, created) = match outcome {
                CreateOutcome::Created(v) => (v, true),
                CreateOutcome::Replayed(v) => (v, false),
            };
            if created {
                made.push(view.workspace.id.clone());
            }
            if let Some(key) = key {
                let entry = by_key.entry(key).or_default();
                entry.0 += usize::from(created);
                entry.1.insert(view.workspace.id.to_string());
            }
        }
        for (key, (creations, ids)) in &by_key {
            assert_eq!((*creations, ids.len()), (1, 1), "{}: key {key} made one workspace", db.label);
            let stored = store.get_create_key(&OwnerId::from("alice"), &IdempotencyKey::from(key)).await.unwrap();
            assert_eq!(stored.workspace_id.as_deref(), ids.iter().next().map(String::as_str), "{}", db.label);
        }
        assert_eq!(made.len(), 16 + by_key.len(), "{}: every keyless create made its own", db.label);
        let listed = store
            .list_workspaces(&OwnerId::from("alice"), &WorkspaceFilter { limit: 100, ..Default::default() })
            .await
            .unwrap();
        assert_eq!(listed.len(), made.len(), "{}", db.label);
        for id in &made {
            let events = store.list_events(&OwnerId::from("alice"), id, 10).await.unwrap().unwrap();
            let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
            assert_eq!(seqs, vec![1, 2], "{}: {id}", db.label);
            assert!(store.open_secret(id, SecretKind::SecretEnv).await.unwrap().is_some(), "{}", db.label);
        }
        let claimed = store.claim_jobs(&WorkerId::from("w"), "h", 100, 60_000).await.unwrap();
        assert_eq!(claimed.len(), made.len(), "{}: every create left its job due", db.label);
        // The next event of a created workspace takes the next number.
        let first = &made[0];
        let lease = claimed.iter().find(|l| &l.subject == first).unwrap();
        let run_id =
            store.get_workspace(&OwnerId::from("alice"), first).await.unwrap().unwrap().current_run.unwrap().id;
        let error = RunError { message: "no".into(), code: None };
        store.record(lease, &run_id, Outcome::Failed { error, retry: false }).await.unwrap();
        let seqs: Vec<i64> = store
            .list_events(&OwnerId::from("alice"), first, 10)
            .await
            .unwrap()
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs[..3], [1, 2, 3], "{}", db.label);
        assert!(!store.any_column_contains("s-1").await.unwrap(), "{}: secrets stay sealed", db.label);
    }
}

/// A kept lease outlives its own length while its holder works, and runs
/// out once the holder lets it go.
#[tokio::test]
async fn a_kept_lease_is_renewed_until_it_is_let_go() {
    for db in databases().await {
        let store = open(&db).await;
        store.create_workspace(new_workspace("alice", None)).await.unwrap();
        let lease = store.claim_jobs(&WorkerId::from("worker-a"), "host-a", 1, 300).await.unwrap().remove(0);
        let kept = store.keep_renewed(lease.clone(), 300);
        // Renewed until well past its own length, and never claimable.
        eventually("the kept lease renewed", || async {
            let current = kept.current();
            assert_eq!(current.generation, lease.generation, "{}", db.label);
            (current.expires_at > lease.expires_at + 600).then_some(())
        })
        .await;
        assert!(
            store.claim_jobs(&WorkerId::from("worker-b"), "host-a", 1, 60_000).await.unwrap().is_empty(),
            "{}: kept",
            db.label
        );
        drop(kept);
        let taken = eventually("the let-go lease ran out", || async {
            let taken = store.claim_jobs(&WorkerId::from("worker-b"), "host-a", 1, 60_000).await.unwrap();
            (!taken.is_empty()).then_some(taken)
        })
        .await;
        assert_eq!(taken.len(), 1, "{}: let go, it ran out", db.label);
    }
}

/// A create leaves its reconcile job due; claims take new generations; a
/// renewal keeps the generation; once another worker took the job over
/// after the lease ran out, the old holder's writes are refused and nothing
/// of them is applied.
#[tokio::test]
async fn a_stale_lease_holders_writes_are_refused() {
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let run_id = view.current_run.unwrap().id;

        let first = store.claim_jobs(&WorkerId::from("worker-a"), "host-a", 10, 60_000).await.unwrap();
        assert_eq!(first.len(), 1, "{}: the create's reconcile job is due", db.label);
        let a = first[0].clone();
        assert_eq!((a.kind, a.subject.as_str()), (JobKind::Reconcile, view.workspace.id.as_str()));
        assert!(
            store.claim_jobs(&WorkerId::from("worker-b"), "host-a", 10, 60_000).await.unwrap().is_empty(),
            "{}: held leases are not claimable",
            db.label
        );
        let renewed = store.renew_lease(&a, 1).await.unwrap();
        assert_eq!(renewed.generation, a.generation, "{}: renewal keeps the generation", db.label);

        let taken = eventually("the renewed lease ran out", || async {
            let taken = store.claim_jobs(&WorkerId::from("worker-b"), "host-a", 10, 60_000).await.unwrap();
            (!taken.is_empty()).then_some(taken)
        })
        .await;
        assert_eq!(taken.len(), 1, "{}: an expired lease is taken over", db.label);
        let b = taken[0].clone();
        assert_eq!(b.generation, a.generation + 1, "{}: takeover increments the generation", db.label);

        let runtime = running_runtime();
        let late = store.record(&renewed, &run_id, launched(&runtime, None)).await;
        assert!(matches!(late, Err(StoreError::Fenced { .. })), "{}: {late:?}", db.label);
        assert!(matches!(store.renew_lease(&renewed, 60_000).await, Err(StoreError::Fenced { .. })));
        assert!(matches!(store.finish_job(&renewed, None, None).await, Err(StoreError::Fenced { .. })));
        let state = store.load_reconcile_state(&view.workspace.id).await.unwrap().unwrap();
        assert_eq!(state.current_run.as_ref().unwrap().runtime, None, "{}: the refused write left nothing", db.label);
        assert_eq!(
            store.list_events(&OwnerId::from("alice"), &view.workspace.id, 100).await.unwrap().unwrap().len(),
            2
        );

        store.record(&b, &run_id, launched(&runtime, None)).await.unwrap();
        let state = store.load_reconcile_state(&view.workspace.id).await.unwrap().unwrap();
        assert_eq!(state.workspace.status, WorkspaceStatus::Running, "{}", db.label);
        store.finish_job(&b, None, None).await.unwrap();
        assert!(
            store.claim_jobs(&WorkerId::from("worker-c"), "host-a", 10, 60_000).await.unwrap().is_empty(),
            "{}: a finished job is gone",
            db.label
        );
    }
}

/// A request that arrives while a pass holds the job is not lost: finishing
/// the pass leaves the job due at once.
#[tokio::test]
async fn a_nudge_during_a_pass_survives_its_finish() {
    for db in databases().await {
        let store = open(&db).await;
        let id = created(store.create_workspace(new_workspace("alice", None)).await.unwrap()).workspace.id;
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        let run_id = store.get_workspace(&OwnerId::from("alice"), &id).await.unwrap().unwrap().current_run.unwrap().id;
        store.record(&lease, &run_id, launched(&running_runtime(), None)).await.unwrap();
        store
            .request(&OwnerId::from("alice"), &id, stop("alice", StopIntent::default()))
            .await
            .unwrap()
            .expect("the owner's workspace");
        store.finish_job(&lease, None, None).await.unwrap();
        let again = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap();
        assert_eq!(again.len(), 1, "{}: the stop's nudge kept the job", db.label);
        assert_eq!(again[0].generation, lease.generation + 1);
    }
}

/// A parked job is never claimed, is listed with its reason, and comes back
/// on an operator's retry or on a new request for it.
#[tokio::test]
async fn a_parked_job_waits_for_a_retry_or_a_new_request() {
    for db in databases().await {
        let store = open(&db).await;
        let id = created(store.create_workspace(new_workspace("alice", None)).await.unwrap()).workspace.id;
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        assert_eq!(lease.attempts, 1);
        store.park_job(&lease, "stored data is inconsistent: a test").await.unwrap();
        assert!(
            store.claim_jobs(&WorkerId::from("w"), "host-a", 10, 60_000).await.unwrap().is_empty(),
            "{}: parked",
            db.label
        );
        assert_eq!(store.job_counts().await.unwrap(), (1, 0), "{}: it exists but is not due", db.label);
        let failed = store.failed_jobs(10).await.unwrap();
        assert_eq!(failed.len(), 1, "{}", db.label);
        assert_eq!(
            (failed[0].kind, failed[0].subject.as_str(), failed[0].attempts),
            (JobKind::Reconcile, id.as_str(), 1)
        );
        assert_eq!(failed[0].last_error, "stored data is inconsistent: a test");

        assert!(store.retry_job(JobKind::Reconcile, &id).await.unwrap(), "{}", db.label);
        assert!(!store.retry_job(JobKind::Reconcile, &id).await.unwrap(), "{}: only a parked job is retried", db.label);
        assert!(store.failed_jobs(10).await.unwrap().is_empty());
        let again = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        assert_eq!(again.attempts, 1, "{}: counted afresh", db.label);

        // Parked again, then the owner asks for a stop: the request brings it back.
        let run_id = store.get_workspace(&OwnerId::from("alice"), &id).await.unwrap().unwrap().current_run.unwrap().id;
        store.record(&again, &run_id, launched(&running_runtime(), None)).await.unwrap();
        store.park_job(&again, "again").await.unwrap();
        store.request(&OwnerId::from("alice"), &id, stop("alice", StopIntent::default())).await.unwrap().unwrap();
        let revived = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap();
        assert_eq!(revived.len(), 1, "{}: a new request revives a parked job", db.label);
        assert_eq!(revived[0].attempts, 1);
        assert!(store.failed_jobs(10).await.unwrap().is_empty());
    }
}

/// Stop, restart and expiry: each records intent and leaves a job due.
#[tokio::test]
async fn lifecycle_requests_leave_work_due() {
    for db in databases().await {
        let store = open(&db).await;
        let id = created(store.create_workspace(new_workspace("alice", None)).await.unwrap()).workspace.id;
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        store.finish_job(&lease, None, None).await.unwrap();

        // Queued and wanting to run: mid-launch.
        let refused = store.request(&OwnerId::from("alice"), &id, Request::Restart).await;
        assert!(
            matches!(refused, Err(StoreError::Conflict { code: ConflictCode::MidLaunch, .. })),
            "{}: {refused:?}",
            db.label
        );
        let runs = store.list_runs(&OwnerId::from("alice"), &id, 10).await.unwrap().unwrap();
        assert_eq!(runs.len(), 1, "{}: a refused restart writes nothing", db.label);
        assert!(
            store
                .request(&OwnerId::from("mallory"), &id, stop("mallory", StopIntent::default()))
                .await
                .unwrap()
                .is_none()
        );
        assert!(store.stop_expired(sluice_store::clock::now_ms(), 10).await.unwrap().is_empty());
        store.set_expiry(&OwnerId::from("alice"), &id, Some(0)).await.unwrap();
        assert_eq!(
            store.stop_expired(sluice_store::clock::now_ms(), 10).await.unwrap(),
            vec![id.clone()],
            "{}",
            db.label
        );
        assert!(store.stop_expired(sluice_store::clock::now_ms(), 10).await.unwrap().is_empty(), "{}: once", db.label);
        let state = store.load_reconcile_state(&id).await.unwrap().unwrap();
        assert_eq!(state.workspace.desired_state, DesiredState::Stopped);
        assert_eq!(store.claim_jobs(&WorkerId::from("w"), "host-a", 5, 60_000).await.unwrap().len(), 1, "{}", db.label);
    }
}

/// Exec stdin is sealed: the run keeps its length and digest, the worker
/// opens the text, and it is gone once the run has ended.
/// An exec run of `true` in alice's workspace `id`, created taken by
/// `taker` for `lease_ms`.
async fn taken_run(store: &Store, label: &str, id: &str, taker: &str, lease_ms: i64) -> TakenExecRun {
    let command = ExecCommand { argv: vec!["true".into()], cwd: None, env: None, stdin_digest: None, timeout_ms: None };
    let created = store
        .create_taken_exec_run(
            &OwnerId::from("alice"),
            &WorkspaceId::from(id),
            vec![command],
            vec![None],
            &WorkerId::from(taker),
            lease_ms,
        )
        .await;
    match created.unwrap() {
        Some(CreatedExecRun::Taken(taken)) => taken,
        other => panic!("{label}: not taken at once (a ready executor's endpoint was not found): {other:?}"),
    }
}

/// A run's output is appended by its lease holder, read back in order
/// after any position by its owner only, and refused to a stale holder.
#[tokio::test]
async fn exec_output_is_appended_under_the_lease_and_read_after_a_position() {
    use sluice_store::exec_output::OutputKind;
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (id, run_id) = (view.workspace.id.clone(), view.current_run.unwrap().id);
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        let runtime = RuntimeRecord { endpoint: Some("unix:///run/x/control.sock".into()), ..running_runtime() };
        store.record(&lease, &run_id, launched(&runtime, None)).await.unwrap();
        store.record(&lease, &run_id, Outcome::Ready).await.unwrap();
        store.finish_job(&lease, None, None).await.unwrap();
        let taken = taken_run(&store, db.label, id.as_str(), "api-1", 60_000).await;
        let alice = OwnerId::from("alice");
        let records = [
            (0, OutputKind::Stdout, "one\n".to_owned()),
            (0, OutputKind::Stderr, "oops\n".to_owned()),
            (0, OutputKind::Exit, "{\"command\":0}".to_owned()),
        ];
        store.append_exec_output(&taken.lease, &taken.run.id, &records[..2]).await.unwrap();
        // How the command ended comes with its result, in one commit.
        let result = ExecCommandResult {
            argv: vec!["echo".into()],
            outcome: sluice_protocol::ExecResponse::exited(0, "one\n".into(), "oops\n".into()),
        };
        let (ending, _) = store.exec_output_after(&alice, &taken.run.id, 0, 10).await.unwrap().unwrap();
        assert_eq!(ending.status, ExecRunStatus::Running, "{}", db.label);
        store.record_exec_results(&taken.lease, &taken.run.id, &[result], &records[2..]).await.unwrap();
        let (run, read) = store.exec_output_after(&alice, &taken.run.id, 0, 10).await.unwrap().unwrap();
        assert_eq!(run.id, taken.run.id);
        assert_eq!(run.results.len(), 1, "{}: the result is recorded with its end", db.label);
        let seen: Vec<(i64, i64, OutputKind, &str)> =
            read.iter().map(|r| (r.seq, r.command, r.kind, r.body.as_str())).collect();
        assert_eq!(
            seen,
            [
                (1, 0, OutputKind::Stdout, "one\n"),
                (2, 0, OutputKind::Stderr, "oops\n"),
                (3, 0, OutputKind::Exit, "{\"command\":0}")
            ],
            "{}",
            db.label
        );
        let after = store.exec_output_after(&alice, &taken.run.id, 2, 10).await.unwrap().unwrap().1;
        assert_eq!(after.iter().map(|r| r.seq).collect::<Vec<_>>(), [3], "{}", db.label);
        assert!(store.exec_output_after(&OwnerId::from("bob"), &taken.run.id, 0, 10).await.unwrap().is_none());
        // Another holder took the job over: the old one appends nothing.
        store.expire_predecessor_leases(&WorkerId::from("w-new")).await.unwrap();
        let other = store.claim_jobs(&WorkerId::from("w-new"), "host-a", 10, 60_000).await.unwrap();
        assert!(!other.is_empty(), "{}: the run's job was taken over", db.label);
        let stale = store.append_exec_output(&taken.lease, &taken.run.id, &records[..1]).await;
        assert!(stale.is_err(), "{}: a stale holder's output is refused", db.label);
    }
}

#[tokio::test]
async fn a_commit_that_records_events_is_heard_in_process() {
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let run_id = view.current_run.unwrap().id;
        let mut commits = store.event_commits();
        commits.borrow_and_update();
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        assert!(!commits.has_changed().unwrap(), "{}: a claim records no event", db.label);
        store.record(&lease, &run_id, launched(&running_runtime(), None)).await.unwrap();
        assert!(commits.has_changed().unwrap(), "{}: the launch's events are heard", db.label);
    }
}

#[tokio::test]
async fn exec_stdin_is_sealed_and_dropped_when_the_run_ends() {
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (id, run_id) = (view.workspace.id.clone(), view.current_run.unwrap().id);
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        let runtime = RuntimeRecord { endpoint: Some("unix:///run/x/control.sock".into()), ..running_runtime() };
        store.record(&lease, &run_id, launched(&runtime, None)).await.unwrap();
        store.record(&lease, &run_id, Outcome::Ready).await.unwrap();
        store.finish_job(&lease, None, None).await.unwrap();

        let command = |argv: &str| ExecCommand {
            argv: vec![argv.into()],
            cwd: None,
            env: None,
            stdin_digest: None,
            timeout_ms: None,
        };
        let secret_input = "stdin-carrying-a-password-4711";
        let exec = store
            .create_exec_run(
                &OwnerId::from("alice"),
                &id,
                vec![command("cat"), command("true")],
                vec![Some(secret_input.into()), None],
            )
            .await
            .unwrap()
            .unwrap();
        assert!(!store.any_column_contains(secret_input).await.unwrap(), "{}: stdin is not stored in plain", db.label);
        let stored = store.load_exec_run(&exec.id).await.unwrap().unwrap();
        assert_eq!(stored.commands[0].stdin_digest, Some(StdinDigest::of(secret_input)));
        assert_eq!(stored.commands[0].stdin_digest.as_ref().unwrap().bytes, secret_input.len() as u64);
        assert_eq!(stored.commands[1].stdin_digest, None);

        let inputs = store.open_exec_stdin(&exec.id).await.unwrap();
        assert_eq!(inputs.len(), 2, "{}", db.label);
        assert_eq!(inputs[0].as_ref().map(|s| s.expose().as_str()), Some(secret_input));
        assert!(inputs[1].is_none());

        let exec_lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        assert_eq!(exec_lease.kind, JobKind::Exec);
        store.finish_exec_run(&exec_lease, &exec.id, Some(&[]), None, &[]).await.unwrap();
        assert!(store.open_exec_stdin(&exec.id).await.unwrap().is_empty(), "{}: dropped at the end", db.label);
        assert!(
            store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 0).await.unwrap().is_empty(),
            "{}: its job ended with it",
            db.label
        );

        // Taken by its creator: running at once, its job held, so no worker claims it.
        let taken = taken_run(&store, db.label, &id, "api-1", 60_000).await;
        assert_eq!(taken.run.status, ExecRunStatus::Running, "{}", db.label);
        assert_eq!(Some(taken.endpoint.as_str()), runtime.endpoint.as_deref(), "{}", db.label);
        assert_eq!((taken.lease.owner.as_str(), taken.lease.kind), ("api-1", JobKind::Exec));
        assert!(
            store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().is_empty(),
            "{}: held",
            db.label
        );
        let result = ExecCommandResult {
            argv: vec!["true".into()],
            outcome: sluice_protocol::ExecResponse::exited(3, "out".into(), String::new()),
        };
        store.finish_exec_run(&taken.lease, &taken.run.id, Some(&[result]), None, &[]).await.unwrap();
        let ended = store.load_exec_run(&taken.run.id).await.unwrap().unwrap();
        assert_eq!((ended.status, ended.exit_code, ended.results.len()), (ExecRunStatus::Completed, Some(3), 1));
        assert!(
            store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 0).await.unwrap().is_empty(),
            "{}: its job ended",
            db.label
        );
        // A taker that is lost: its lease runs out, and a worker claims the job of a run already running.
        let lost = taken_run(&store, db.label, &id, "api-2", 0).await;
        let claimed = eventually("the lost taker's lease ran out", || async {
            store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().pop()
        })
        .await;
        assert_eq!((claimed.subject.as_str(), claimed.generation), (lost.run.id.as_str(), 2), "{}", db.label);
        assert!(claimed.taken_over, "{}", db.label);
        let fenced = store.finish_exec_run(&lost.lease, &lost.run.id, Some(&[]), None, &[]).await;
        assert!(matches!(fenced, Err(StoreError::Fenced { .. })), "{}: the lost taker is fenced", db.label);
        let error = RunError { message: "lost".into(), code: Some("worker-lost".into()) };
        store.finish_exec_run(&claimed, &lost.run.id, None, Some(&error), &[]).await.unwrap();
        let ended = store.load_exec_run(&lost.run.id).await.unwrap().unwrap();
        assert_eq!(ended.status, ExecRunStatus::Failed, "{}", db.label);
        // Finished, its results are forgotten once they are older than the retention.
        let purge = |before| store.purge_records(sluice_store::records::Record::ExecResults, before, 100);
        assert_eq!(purge(0).await.unwrap(), 0, "{}", db.label);
        assert_eq!(purge(sluice_store::clock::now_ms() + 1).await.unwrap(), 3, "{}: every ended run", db.label);
        assert!(store.load_exec_run(&exec.id).await.unwrap().is_none(), "{}", db.label);
        assert!(
            store.create_exec_run(&OwnerId::from("alice"), &id, vec![command("cat")], vec![]).await.is_err(),
            "one stdin entry per command"
        );
        // Its executor failed: no longer ready, so no command runs.
        store.enqueue_job(JobKind::Reconcile, &id, 0).await.unwrap();
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        let error = RunError { message: "it broke".into(), code: None };
        store.record(&lease, &run_id, Outcome::Failed { error, retry: false }).await.unwrap();
        let refused = store.create_exec_run(&OwnerId::from("alice"), &id, vec![command("cat")], vec![None]).await;
        assert!(matches!(refused, Err(StoreError::Conflict { code: ConflictCode::NoLiveRuntime, .. })), "{refused:?}");
    }
}

/// What the store tells the orphan sweep about the run a resource names.
#[tokio::test]
async fn resource_facts_come_from_the_records() {
    for db in databases().await {
        let store = open(&db).await;
        assert_eq!(store.resource_facts(&RunId::from("run_unknown")).await.unwrap(), None, "{}", db.label);

        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let run_id = view.current_run.unwrap().id;
        let facts = store.resource_facts(&run_id).await.unwrap().unwrap();
        assert_eq!(
            facts,
            ResourceFacts {
                status: WorkspaceStatus::Queued,
                is_current: true,
                recorded: false,
                removed: false,
                capture_sourced: false
            },
            "{}: a launch may be in flight",
            db.label
        );
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        let runtime = running_runtime();
        store.record(&lease, &run_id, launched(&runtime, None)).await.unwrap();
        assert!(store.resource_facts(&run_id).await.unwrap().unwrap().recorded);
        store.request(&OwnerId::from("alice"), &view.workspace.id, stop("alice", StopIntent::default())).await.unwrap();
        store.record(&lease, &run_id, Outcome::Removed).await.unwrap();
        let facts = store.resource_facts(&run_id).await.unwrap().unwrap();
        assert!(facts.recorded && facts.removed, "{}: {facts:?}", db.label);
        let state = store.load_reconcile_state(&view.workspace.id).await.unwrap().unwrap();
        assert_eq!(state.workspace.status, WorkspaceStatus::Stopped);

        // A capture-sourced workspace; its failed run is no longer current.
        let mut capture = new_workspace("alice", None);
        capture.spec =
            sluice_store::spec::Spec::parse(json!({"source": {"kind": "capture", "sessionId": "cs_1"}})).unwrap();
        capture.capture_token = Some(Secret::new("capture-token-value-123456".into()));
        let view = created(store.create_workspace(capture).await.unwrap());
        let first = view.current_run.unwrap().id;
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        let error = RunError { message: "boom".into(), code: Some("launch-failed".into()) };
        let next = store.record(&lease, &first, Outcome::Failed { error, retry: true }).await.unwrap();
        let retry = next.queued_run.map(|r| r.id);
        assert!(retry.is_some(), "{}: a retry run was queued", db.label);
        let retry_run = store.get_run(&RunId::from(retry.as_deref().unwrap())).await.unwrap().unwrap();
        assert_eq!(retry_run.launch_id.as_deref(), Some("launch-1"), "{}: a retry keeps the launch id", db.label);
        let facts = store.resource_facts(&first).await.unwrap().unwrap();
        assert!(facts.capture_sourced && !facts.is_current, "{}: {facts:?}", db.label);
        assert_eq!(facts.status, WorkspaceStatus::Failed);
    }
}

fn stamp(epoch: u64, observation: u64) -> sluice_protocol::Origin {
    sluice_protocol::Origin {
        epoch,
        launch: "launch-1".into(),
        boot_id: "boot".into(),
        boot_generation: 1,
        observation,
        head_n: None,
    }
}

fn capture(epoch: u64, n: u64, run: &str, key: &str) -> capture::NewCapture {
    use sluice_protocol::capture::CaptureClass;
    capture::NewCapture {
        epoch,
        n,
        run_id: run.into(),
        launch: "launch-1".into(),
        classes: vec![(CaptureClass::Small, capture::ManifestHead { key: key.into(), depth: n - 1 })],
        bytes: 10,
        used_bytes: 10 * n,
        origin: stamp(epoch, n),
        sweep_generation: 0,
        counts: Default::default(),
    }
}

#[tokio::test]
async fn capture_sessions_fence_older_claims_and_keep_their_chain() {
    for db in databases().await {
        let store = open(&db).await;
        let (session, token) =
            store.create_capture_session(&OwnerId::from("alice"), Some(1 << 20), Default::default()).await.unwrap();
        assert!(token.expose().starts_with("slcap_"));
        assert!(store.capture_token_matches(&session.id, token.expose()).await.unwrap());
        assert!(!store.capture_token_matches(&session.id, "slcap_wrong").await.unwrap());
        assert!(!store.any_column_contains(token.expose()).await.unwrap(), "{}: only a keyed hash is kept", db.label);
        assert!(store.get_capture_session(&OwnerId::from("bob"), &session.id).await.unwrap().is_none(), "owner-scoped");
        assert_eq!((session.epoch, session.head_n, session.quota_bytes), (0, 0, Some(1 << 20)));

        let first = store
            .claim_capture_session(&session.id, &RunId::from("run-a"), &LaunchId::from("launch-1"), None)
            .await
            .unwrap();
        assert_eq!(first.epoch, 1);
        store.register_capture(&session.id, &capture(1, 1, "run-a", "k1")).await.unwrap();
        // Not the head's next: refused, nothing written.
        let err = store.register_capture(&session.id, &capture(1, 3, "run-a", "k3")).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict { code: ConflictCode::HeadMoved, .. }), "{}: {err}", db.label);

        let second = store
            .claim_capture_session(&session.id, &RunId::from("run-b"), &LaunchId::from("launch-2"), None)
            .await
            .unwrap();
        assert_eq!(second.epoch, 2);
        assert_eq!(second.small, Some(capture::ManifestHead { key: "k1".into(), depth: 0 }));
        for (epoch, run) in [(1, "run-a"), (2, "run-a")] {
            let err = store.register_capture(&session.id, &capture(epoch, 2, run, "late")).await.unwrap_err();
            assert!(matches!(err, StoreError::Conflict { code: ConflictCode::Fenced, .. }), "{}: {err}", db.label);
        }
        let seal = capture::FinalSeal {
            capture_n: 1,
            epoch: 1,
            executor_id: "run-a".into(),
            launch_id: "launch-1".into(),
            sealed_at: 5,
            origin: stamp(1, 9),
        };
        let err = store.record_final_seal(&session.id, &seal, &RunId::from("run-a")).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Conflict { code: ConflictCode::Fenced, .. }),
            "a fenced executor cannot seal"
        );

        store.register_capture(&session.id, &capture(2, 2, "run-b", "k2")).await.unwrap();
        let seal = capture::FinalSeal { capture_n: 2, epoch: 2, executor_id: "run-b".into(), ..seal };
        store.record_final_seal(&session.id, &seal, &RunId::from("run-b")).await.unwrap();

        let view = store.get_capture_session(&OwnerId::from("alice"), &session.id).await.unwrap().unwrap();
        assert_eq!((view.session.epoch, view.session.head_n, view.session.used_bytes), (2, 2, 20));
        assert_eq!(view.session.small, Some(capture::ManifestHead { key: "k2".into(), depth: 1 }));
        assert_eq!(view.session.bulk, None, "a class never registered has no head");
        let chain: Vec<_> = view.captures.iter().map(|c| (c.n, c.epoch, c.run_id.as_str())).collect();
        assert_eq!(chain, vec![(1, 1, "run-a"), (2, 2, "run-b")], "{}", db.label);
        assert_eq!(view.session.final_seal, Some(seal), "{}", db.label);
    }
}

/// A branch names the source capture's manifests as each new session's
/// first capture (nothing else copied), keeps its quota and retention, and
/// is refused for a capture not kept or another owner's; the live
/// manifests still name what the branches need once the source is deleted,
/// which is refused while a workspace that has not ended names it.
#[tokio::test]
async fn branched_sessions_name_the_source_capture_and_outlive_its_session() {
    for db in databases().await {
        let store = open(&db).await;
        let alice = OwnerId::from("alice");
        let policy = capture::Retention { keep_last: Some(4), keep_within_ms: None };
        let (source, _) = store.create_capture_session(&alice, Some(1 << 20), policy).await.unwrap();
        store
            .claim_capture_session(&source.id, &RunId::from("run-a"), &LaunchId::from("launch-1"), None)
            .await
            .unwrap();
        store.register_capture(&source.id, &capture(1, 1, "run-a", "k1")).await.unwrap();
        let point = capture::RewoundTree {
            small: Some(capture::ManifestHead { key: "k1".into(), depth: 0 }),
            bulk: None,
            bytes: 10,
            counts: capture::CaptureCounts { files: 3, added: 3, changed: 0, removed: 0 },
            origin: stamp(0, 1),
        };
        for (owner, n) in [("alice", 2), ("bob", 1)] {
            let err = store.branch_capture_sessions(&OwnerId::from(owner), &source.id, n, &point, 2).await.unwrap_err();
            let code = match err {
                StoreError::Conflict { code, .. } => code,
                other => panic!("{}: {other}", db.label),
            };
            assert_eq!(code, ConflictCode::CaptureNotKept, "{}: {owner} {n}", db.label);
        }
        let branched = store.branch_capture_sessions(&alice, &source.id, 1, &point, 3).await.unwrap();
        assert_eq!(branched.len(), 3);
        for (session, token) in &branched {
            assert!(store.capture_token_matches(&session.id, token.expose()).await.unwrap(), "{}", db.label);
            let view = store.get_capture_session(&alice, &session.id).await.unwrap().unwrap();
            assert_eq!((view.session.head_n, view.session.epoch, view.session.used_bytes), (1, 0, 10), "{}", db.label);
            assert_eq!(view.session.small, point.small, "{}", db.label);
            assert_eq!((view.session.quota_bytes, view.session.retention), (Some(1 << 20), policy), "{}", db.label);
            assert_eq!(view.session.branched_from, Some((source.id.clone(), 1)), "{}", db.label);
            let first: Vec<_> = view.captures.iter().map(|c| (c.n, c.counts.map(|k| k.files))).collect();
            assert_eq!(first, [(1, Some(3))], "{}", db.label);
        }

        // A workspace on the source that has not ended keeps it.
        let mut new = new_workspace("alice", None);
        new.spec = spec::Spec::parse(json!({"source": {"kind": "capture", "sessionId": source.id}})).unwrap();
        let user = created(store.create_workspace(new).await.unwrap());
        let err = store.delete_capture_session(&alice, &source.id).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict { code: ConflictCode::SessionInUse, .. }), "{}: {err}", db.label);
        assert!(err.to_string().contains(user.workspace.id.as_str()), "{}: names the workspace: {err}", db.label);
        // Never launched: ended by the broker's kind of stop, then cancelled.
        store.request(&alice, &user.workspace.id, Request::End { by: "alice".into() }).await.unwrap();
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        store.record(&lease, &user.current_run.unwrap().id, Outcome::Cancelled).await.unwrap();
        assert!(!store.delete_capture_session(&OwnerId::from("bob"), &source.id).await.unwrap(), "owner-scoped");
        assert!(store.delete_capture_session(&alice, &source.id).await.unwrap(), "{}", db.label);
        assert!(store.get_capture_session(&alice, &source.id).await.unwrap().is_none(), "{}", db.label);
        let live = store.live_manifests().await.unwrap();
        assert!(live.iter().any(|m| m.key == "k1"), "{}: the branches still name k1", db.label);
        assert!(live.iter().all(|m| m.session_id.as_ref() != Some(&source.id)), "{}", db.label);
    }
}

/// Retention forgets what no rule keeps (never the head or the seal), each
/// kept capture still names both classes' manifests, uploads are counted
/// against the quota, and a registration that a sweep could have raced is
/// refused until it checks its objects again.
#[tokio::test]
async fn captures_are_kept_by_policy_counted_by_upload_and_fenced_by_sweeps() {
    use sluice_protocol::capture::CaptureClass;
    for db in databases().await {
        let store = open(&db).await;
        let policy = capture::Retention { keep_last: Some(2), keep_within_ms: None };
        let (session, _) = store.create_capture_session(&OwnerId::from("alice"), Some(100), policy).await.unwrap();
        assert_eq!(session.retention, policy);
        store
            .claim_capture_session(&session.id, &RunId::from("run-a"), &LaunchId::from("launch-1"), None)
            .await
            .unwrap();
        let mut first = capture(1, 1, "run-a", "small-1");
        first.classes.push((CaptureClass::Bulk, capture::ManifestHead { key: "bulk-1".into(), depth: 0 }));
        store.register_capture(&session.id, &first).await.unwrap();
        for n in 2..=5 {
            store.register_capture(&session.id, &capture(1, n, "run-a", &format!("small-{n}"))).await.unwrap();
        }
        let now = sluice_store::clock::now_ms();
        let asked = store.forget_captures(&session.id, Default::default(), now, false).await.unwrap();
        assert_eq!(asked, vec![1, 2, 3], "{}", db.label);
        assert_eq!(
            store.get_capture_session(&OwnerId::from("alice"), &session.id).await.unwrap().unwrap().captures.len(),
            5
        );
        let forgotten = store.forget_captures(&session.id, Default::default(), now, true).await;
        assert_eq!(forgotten.unwrap(), vec![1, 2, 3], "{}", db.label);
        let view = store.get_capture_session(&OwnerId::from("alice"), &session.id).await.unwrap().unwrap();
        assert_eq!(view.captures.iter().map(|c| c.n).collect::<Vec<_>>(), vec![4, 5]);
        let live: Vec<(String, Option<u64>)> = store
            .live_manifests()
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.session_id.as_deref() == Some(session.id.as_str()))
            .map(|m| (m.key, m.capture_n))
            .collect();
        let expected = [
            ("bulk-1", None),
            ("bulk-1", Some(4)),
            ("bulk-1", Some(5)),
            ("small-4", Some(4)),
            ("small-5", None),
            ("small-5", Some(5)),
        ];
        let expected: Vec<(String, Option<u64>)> = expected.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(live, expected, "{}: the bulk class of 1 is named by every kept capture and the head", db.label);

        // Uploads count against the quota; one that would pass it counts nothing.
        assert!(store.reserve_stored_bytes(&session.id, 60).await.unwrap());
        assert!(!store.reserve_stored_bytes(&session.id, 41).await.unwrap(), "{}", db.label);
        assert!(store.reserve_stored_bytes(&session.id, 40).await.unwrap());
        let counted = store.stored_counts().await.unwrap();
        let counted = counted.into_iter().find(|c| c.session_id == session.id).unwrap();
        assert_eq!(counted.stored_bytes, 100);
        store.recount_stored_bytes(&counted, 30).await.unwrap();
        let now = store.capture_session(&session.id).await.unwrap().unwrap();
        assert_eq!(now.stored_bytes, 30, "{}: recounted to what the kept captures need", db.label);

        // A sweep deleting: registrations wait; one checked under the
        // generation before it checks again.
        let before = store.object_sweep_generation().await.unwrap();
        let until = sluice_store::clock::now_ms() + 60_000;
        let generation = store.begin_object_deletion(until).await.unwrap().expect("no other sweep");
        assert_eq!(generation, before + 1);
        assert_eq!(
            store.begin_object_deletion(until).await.unwrap(),
            None,
            "{}: one sweep deletes at a time",
            db.label
        );
        let mut next = capture(1, 6, "run-a", "small-6");
        next.sweep_generation = generation;
        let err = store.register_capture(&session.id, &next).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict { code: ConflictCode::Collecting, .. }), "{}: {err}", db.label);
        assert!(store.renew_object_deletion(generation, until + 1).await.unwrap());
        store.end_object_deletion(generation).await.unwrap();
        next.sweep_generation = before;
        let err = store.register_capture(&session.id, &next).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Conflict { code: ConflictCode::Collecting, .. }),
            "{}: checked before the sweep",
            db.label
        );
        next.sweep_generation = generation;
        let err = store.register_capture(&session.id, &next).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Conflict { code: ConflictCode::Collecting, .. }),
            "{}: checked while it deleted",
            db.label
        );
        next.sweep_generation = store.object_sweep_generation().await.unwrap();
        assert_eq!(next.sweep_generation, generation + 1);
        store.register_capture(&session.id, &next).await.unwrap();
        assert!(!store.renew_object_deletion(generation, until).await.unwrap(), "{}: an ended sweep", db.label);
    }
}

fn report(observation: u64, saved: bool) -> sluice_protocol::attest::Report {
    let mut origin = stamp(1, observation);
    origin.head_n = Some(4);
    sluice_protocol::attest::Report { origin, saved }
}

fn observed(state: DrainState, report: Option<sluice_protocol::attest::Report>) -> DrainObservation {
    DrainObservation {
        state,
        detail: Some(format!("{state}")),
        report,
        progress: DrainProgress {
            pending: Some(1),
            pending_bytes: Some(10),
            registered: Some(2),
            uploaded_bytes: Some(3),
        },
    }
}

/// Stop intent, reports, attestations, retention and removal of a
/// capture-sourced executor's drain, as one record per run.
#[tokio::test]
async fn drains_record_intent_evidence_attestations_and_retention() {
    for db in databases().await {
        let store = open(&db).await;
        let mut capture = new_workspace("alice", None);
        capture.spec =
            sluice_store::spec::Spec::parse(json!({"source": {"kind": "capture", "sessionId": "cs_1"}})).unwrap();
        capture.capture_token = Some(Secret::new("capture-token-value-123456".into()));
        let view = created(store.create_workspace(capture).await.unwrap());
        let (id, run_id) = (view.workspace.id.clone(), view.current_run.unwrap().id);

        // Nothing launched: the policy refuses, and nothing is written.
        let refused = store.request(&OwnerId::from("alice"), &id, stop("alice", StopIntent::default())).await;
        assert!(matches!(refused, Err(StoreError::Conflict { code: ConflictCode::NeverLaunched, .. })), "{}", db.label);
        assert!(store.drain(&run_id).await.unwrap().is_none());

        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        store.record(&lease, &run_id, launched(&running_runtime(), Some(123))).await.unwrap();
        assert_eq!(store.drain(&run_id).await.unwrap().unwrap().preservation_starts_at, Some(123), "{}", db.label);

        // The stop, with an attestation nothing contradicts yet.
        let seal = sluice_protocol::attest::Attestation {
            capture_n: 4,
            epoch: 1,
            executor_id: "r1".into(),
            launch_id: Some("launch-1".into()),
            origin: Some(stamp(1, 5)),
        };
        let intent =
            StopIntent { discard: false, attestation: Some((seal.clone(), Some("2026-11-30T00:00:00Z".into()))) };
        let stopped =
            completion(store.request(&OwnerId::from("alice"), &id, stop("alice", intent.clone())).await.unwrap());
        assert_eq!(stopped, Some((AttestationOutcome::Accepted, None)), "{}", db.label);
        let drain = store.drain(&run_id).await.unwrap().unwrap();
        assert_eq!(drain.stop_requested.as_ref().map(|(by, _)| by.as_str()), Some("alice"));
        assert_eq!(drain.state, None, "{}: nothing observed yet", db.label);
        assert!(store.accepted_attestation(&run_id).await.unwrap().is_some());
        let in_progress = store.drains_in_progress(10).await.unwrap();
        assert_eq!(
            in_progress.iter().map(|d| d.run.id.as_str()).collect::<Vec<_>>(),
            [run_id.as_str()],
            "{}",
            db.label
        );
        assert_eq!(in_progress[0].owner_user_id, "alice", "{}", db.label);

        // Reports: an earlier not-saved one is placed before the seal;
        // equal consecutive ones are kept as one row with the newest stamp.
        store
            .record(&lease, &run_id, Outcome::DrainObserved(observed(DrainState::Draining, Some(report(3, false)))))
            .await
            .unwrap();
        assert!(store.accepted_attestation(&run_id).await.unwrap().is_some(), "{}: placed before the seal", db.label);
        store
            .record(&lease, &run_id, Outcome::DrainObserved(observed(DrainState::Draining, Some(report(4, false)))))
            .await
            .unwrap();
        let reports = store.executor_reports(&run_id).await.unwrap();
        assert_eq!(reports.len(), 1, "{}: {reports:?}", db.label);
        assert_eq!(reports[0].origin.observation, 4);
        // A later not-saved report revokes it, with the rule's detail.
        store
            .record(&lease, &run_id, Outcome::DrainObserved(observed(DrainState::Kept, Some(report(9, false)))))
            .await
            .unwrap();
        assert!(store.accepted_attestation(&run_id).await.unwrap().is_none(), "{}: revoked", db.label);
        let revoked = store.revoked_attestation(&run_id).await.unwrap().expect("revoked");
        assert!(revoked.detail.unwrap().contains("not-saved"), "{}", db.label);
        // The same attestation again is ignored at once.
        let again = completion(store.request(&OwnerId::from("alice"), &id, stop("alice", intent)).await.unwrap());
        assert!(
            matches!(&again, Some((AttestationOutcome::Ignored, Some(d))) if d.starts_with("not-saved")),
            "{}: {:?}",
            db.label,
            again
        );
        let drain = store.drain(&run_id).await.unwrap().unwrap();
        assert_eq!((drain.state, drain.final_complete), (Some(DrainState::Kept), false), "{}", db.label);
        assert_eq!(drain.progress.pending, Some(1));

        // A report read outside the drain (through the API) is evidence too.
        store.record_report(&run_id, &report(12, true), None).await.unwrap();
        assert_eq!(store.executor_reports(&run_id).await.unwrap().len(), 3, "{}", db.label);
        store.record_report(&RunId::from("run_unknown"), &report(12, true), None).await.unwrap();

        // Retained, recovery asked for, an attempt counted.
        let retained =
            Outcome::Retained { reason: "it ended".into(), recoverable: true, first_attempt_at: 10_000_000_000_000 };
        store.record(&lease, &run_id, retained).await.unwrap();
        let state = store.load_reconcile_state(&id).await.unwrap().unwrap();
        assert_eq!(state.workspace.status, WorkspaceStatus::Retained);
        assert_eq!(state.reports.len(), 3, "{}: the reconcile state carries the evidence", db.label);
        let retention = state.drain.unwrap().retention.unwrap();
        assert_eq!((retention.reason.as_str(), retention.attempts, retention.recoverable), ("it ended", 0, true));
        assert_eq!(store.list_retained(10).await.unwrap().len(), 1, "{}", db.label);
        let gauges = store.read_state(10).await.unwrap();
        assert!(gauges.workspaces.contains(&("retained".into(), 1)), "{}: {gauges:?}", db.label);
        assert_eq!(gauges.drains.iter().map(|(_, n)| n).sum::<i64>(), 1, "{}: {gauges:?}", db.label);
        assert_eq!(gauges.retained_by_reason, vec![("it ended".to_string(), 1)], "{}", db.label);
        assert_eq!(gauges.retained.iter().map(|r| r.workspace_id.as_str()).collect::<Vec<_>>(), vec![id.as_str()]);
        assert!(store.read_state(0).await.unwrap().retained.is_empty(), "{}: the list is bounded", db.label);
        assert_eq!(recover(&store, "bob", &id).await, None, "{}: owner-scoped", db.label);
        assert_eq!(recover(&store, "alice", &id).await, Some(Some(true)), "{}", db.label);
        let due = store.drain(&run_id).await.unwrap().unwrap().retention.unwrap().next_recovery_at.unwrap();
        assert!(due <= sluice_store::clock::now_ms(), "{}: due now", db.label);
        let attempt = Outcome::RecoveryAttempted { error: Some("no disk".into()), next_at: 42 };
        store.record(&lease, &run_id, attempt).await.unwrap();
        let retention = store.drain(&run_id).await.unwrap().unwrap().retention.unwrap();
        assert_eq!(
            (retention.attempts, retention.next_recovery_at, retention.last_error.as_deref()),
            (1, Some(42), Some("no disk"))
        );

        // The owner discards: the removal reads `discarded`, retention ends.
        let discard = StopIntent { discard: true, attestation: None };
        store.request(&OwnerId::from("alice"), &id, stop("alice", discard)).await.unwrap().unwrap();
        store.record(&lease, &run_id, Outcome::Removed).await.unwrap();
        let drain = store.drain(&run_id).await.unwrap().unwrap();
        assert_eq!(drain.state, Some(DrainState::Discarded), "{}", db.label);
        assert_eq!(drain.discard.unwrap().requested_by, "alice");
        let state = store.load_reconcile_state(&id).await.unwrap().unwrap();
        assert_eq!(state.workspace.status, WorkspaceStatus::Stopped, "{}", db.label);
        assert!(store.list_retained(10).await.unwrap().is_empty(), "{}", db.label);
        let gauges = store.read_state(10).await.unwrap();
        assert!(gauges.retained.is_empty() && gauges.retained_by_reason.is_empty(), "{}: {gauges:?}", db.label);
        assert!(gauges.drains.is_empty(), "{}: a removed executor's drain is not shown: {gauges:?}", db.label);
        assert_eq!(recover(&store, "alice", &id).await, Some(None), "{}: nothing retained", db.label);
    }
}

#[tokio::test]
async fn a_claim_over_a_lapsed_lease_says_it_took_the_job_over() {
    for db in databases().await {
        let store = open(&db).await;
        store.create_workspace(new_workspace("alice", None)).await.unwrap();
        let first = store.claim_jobs(&WorkerId::from("w1"), "h1", 1, 1).await.unwrap();
        assert_eq!(first.iter().map(|l| l.taken_over).collect::<Vec<_>>(), vec![false], "{}", db.label);
        let second = eventually("the first lease lapsed", || async {
            Some(store.claim_jobs(&WorkerId::from("w2"), "h1", 1, 60_000).await.unwrap()).filter(|s| !s.is_empty())
        })
        .await;
        assert_eq!(second.iter().map(|l| l.taken_over).collect::<Vec<_>>(), vec![true], "{}", db.label);
        store.finish_job(&second[0], Some(0), None).await.unwrap();
        let third = store.claim_jobs(&WorkerId::from("w1"), "h1", 1, 60_000).await.unwrap();
        assert_eq!(third.iter().map(|l| l.taken_over).collect::<Vec<_>>(), vec![false], "{}: released", db.label);
    }
}

#[tokio::test]
async fn the_state_reading_counts_the_queue_and_the_fleet() {
    for db in databases().await {
        let store = open(&db).await;
        let empty = store.read_state(10).await.unwrap();
        assert_eq!((empty.jobs_due, empty.jobs_leased, empty.oldest_due_at), (0, 0, None), "{}", db.label);
        assert_eq!((empty.workers, empty.capture_stored_bytes, empty.gateway_sessions), (0, 0, 0), "{}", db.label);
        let before = sluice_store::clock::now_ms();
        for _ in 0..3 {
            store.create_workspace(new_workspace("alice", None)).await.unwrap();
        }
        let queued = store.read_state(10).await.unwrap();
        assert_eq!(queued.workspaces, vec![("queued".to_string(), 3)], "{}", db.label);
        assert_eq!(queued.jobs_due, 3, "{}: each create enqueues its reconcile", db.label);
        assert!(queued.oldest_due_at.is_some_and(|at| at >= before - 1), "{}: {queued:?}", db.label);
        let leases = store.claim_jobs(&WorkerId::from("w1"), "h1", 2, 60_000).await.unwrap();
        assert_eq!(leases.len(), 2);
        let claimed = store.read_state(10).await.unwrap();
        assert_eq!((claimed.jobs_due, claimed.jobs_leased, claimed.jobs_parked), (1, 2, 0), "{}", db.label);
        store.park_job(&leases[0], "it kept failing").await.unwrap();
        assert_eq!(store.read_state(10).await.unwrap().jobs_parked, 1, "{}", db.label);
        assert!(store.live_capture_executors(10).await.unwrap().is_empty(), "{}", db.label);
    }
}

fn broker_scope() -> sluice_store::broker::BrokerScope {
    sluice_store::broker::BrokerScope {
        max_concurrent_workspaces: 2,
        images: vec!["img:1".into()],
        max_lifetime_seconds: 60,
        idle_timeout_seconds: 30,
        max_snapshots: 3,
        snapshot_ttl_seconds: 600,
        egress_ceiling: Some(vec!["pypi.org".into(), "*.example.test".into()]),
    }
}

/// Broker tokens: issued, rotated with a grace, revoked; admission per
/// instance and for every instance.
#[tokio::test]
async fn broker_tokens_and_admission() {
    use sluice_store::broker::*;
    for db in databases().await {
        let store = open(&db).await;
        let scope = broker_scope();
        let token = store.issue_broker_token("inst", &scope, None).await.unwrap();
        assert!(token.expose().starts_with(TOKEN_PREFIX));
        assert!(!store.any_column_contains(token.expose()).await.unwrap(), "{}: only a keyed hash", db.label);
        let lease = store.broker_lease(token.expose()).await.unwrap().unwrap();
        assert_eq!((lease.instance.as_str(), lease.state, &lease.scope), ("inst", LeaseState::Active, &scope));
        assert_eq!(store.broker_lease("slbrk_nope").await.unwrap(), Err(LeaseRefusal::Unknown));

        let rotated = store.rotate_broker_token("inst", 0).await.unwrap().unwrap();
        assert_eq!(store.broker_lease(token.expose()).await.unwrap(), Err(LeaseRefusal::Superseded), "{}", db.label);
        assert_eq!(store.broker_lease(rotated.expose()).await.unwrap().unwrap().scope, scope, "the scope carries over");
        let graced = store.rotate_broker_token("inst", 60).await.unwrap().unwrap();
        assert_eq!(store.broker_lease(rotated.expose()).await.unwrap().unwrap().state, LeaseState::Superseded);
        assert_eq!(store.rotate_broker_token("nobody", 60).await.unwrap(), None);
        assert_eq!(store.revoke_broker_tokens("inst").await.unwrap(), 3);
        assert_eq!(store.broker_lease(graced.expose()).await.unwrap(), Err(LeaseRefusal::Revoked));

        let short = store.issue_broker_token("brief", &scope, Some(1)).await.unwrap();
        assert!(store.broker_lease(short.expose()).await.unwrap().unwrap().expires_at.is_some());

        assert_eq!(store.broker_admission("inst").await.unwrap(), Admission::Open);
        store.set_broker_admission(EVERY_INSTANCE, &Admission::Paused(None)).await.unwrap();
        store.set_broker_admission("inst", &Admission::Paused(Some("payment".into()))).await.unwrap();
        assert_eq!(store.broker_admission("inst").await.unwrap(), Admission::Paused(Some("payment".into())));
        assert_eq!(store.broker_admission("other").await.unwrap(), Admission::Paused(None));
        store.set_broker_admission(EVERY_INSTANCE, &Admission::EmergencyStopped(None)).await.unwrap();
        assert_eq!(store.broker_admission("inst").await.unwrap(), Admission::EmergencyStopped(None), "{}", db.label);
        store.set_broker_admission(EVERY_INSTANCE, &Admission::Open).await.unwrap();
        store.set_broker_admission("inst", &Admission::Open).await.unwrap();
        assert_eq!(store.broker_admission("inst").await.unwrap(), Admission::Open);
    }
}

/// Concurrent acquisitions of one broker instance never pass its limit.
#[tokio::test]
async fn a_broker_instance_never_passes_its_concurrency_limit() {
    use sluice_store::broker::*;
    for db in databases().await {
        let store = open(&db).await;
        let scope = broker_scope();
        store.issue_broker_token("busy", &scope, None).await.unwrap();
        let creates = (0..8).map(|i| {
            let store = store.clone();
            async move {
                let mut new = new_workspace("broker:busy", None);
                new.broker = Some(NewBrokerWorkspace {
                    instance: "busy".into(),
                    label: format!("w{i}"),
                    size: "small".into(),
                    image: "img:1".into(),
                    agent: None,
                    attributed_run: None,
                    idle_timeout_seconds: 30,
                    max_live: 2,
                    env: None,
                    restore_snapshot: None,
                });
                store.create_workspace(new).await
            }
        });
        let results = futures::future::join_all(creates).await;
        let made = results.iter().filter(|r| r.is_ok()).count();
        let limited = results
            .iter()
            .filter(|r| matches!(r, Err(StoreError::Conflict { code: ConflictCode::ConcurrencyLimit, .. })))
            .count();
        assert_eq!((made, limited), (2, 6), "{}: {results:?}", db.label);
    }
}

/// Broker snapshots: one key claims one snapshot (in progress, replayed,
/// conflicting), the quota counts live ones, a failure frees its key, the
/// directory is sealed, and deletion leaves a gone row.
#[tokio::test]
async fn broker_snapshots_claim_their_keys_and_hold_the_quota() {
    use sluice_store::broker_snapshots::*;
    for db in databases().await {
        let store = open(&db).await;
        let mut scope = broker_scope();
        scope.max_snapshots = 2;
        store.issue_broker_token("snaps", &scope, None).await.unwrap();
        let snapshotted = WorkspaceId::from("ws_x");
        let new = |key: &'static str, hash: &'static str| NewSnapshot {
            instance: "snaps",
            workspace_id: &snapshotted,
            key,
            request_hash: hash,
            dir: "/work/marker-dir-4471",
            max_snapshots: 2,
            ttl_seconds: 600,
        };
        let SnapshotClaim::Take(first) = store.claim_broker_snapshot(&new("k1", "h1")).await.unwrap() else {
            panic!("{}: a new key takes", db.label)
        };
        assert!(!store.any_column_contains("marker-dir-4471").await.unwrap(), "{}: the dir is sealed", db.label);
        assert_eq!(store.claim_broker_snapshot(&new("k1", "h1")).await.unwrap(), SnapshotClaim::InProgress);
        assert!(matches!(store.claim_broker_snapshot(&new("k1", "h2")).await, Err(StoreError::IdempotencyKeyReused)));
        let taken = TakenSnapshot { small_manifest: "a".repeat(64), bulk_manifest: "b".repeat(64), files: 1, bytes: 2 };
        let ready = store.finish_broker_snapshot(&first, &taken, 600).await.unwrap();
        assert_eq!(ready.state, SnapshotState::Ready);
        assert!(ready.usable(ready.created_at) && !ready.usable(ready.expires_at));
        let SnapshotClaim::Replay(replayed) = store.claim_broker_snapshot(&new("k1", "h1")).await.unwrap() else {
            panic!("{}: a settled key replays", db.label)
        };
        assert_eq!(replayed, ready);

        // A failed take frees its key and its place in the quota.
        let SnapshotClaim::Take(failed) = store.claim_broker_snapshot(&new("k2", "h")).await.unwrap() else { panic!() };
        let quota = store.claim_broker_snapshot(&new("k3", "h")).await;
        assert!(
            matches!(quota, Err(StoreError::Conflict { code: ConflictCode::SnapshotQuotaExceeded, .. })),
            "{quota:?}"
        );
        store.abandon_broker_snapshot(&failed).await.unwrap();
        assert_eq!(store.broker_snapshot("snaps", &failed).await.unwrap(), None);
        let SnapshotClaim::Take(second) = store.claim_broker_snapshot(&new("k2", "h")).await.unwrap() else {
            panic!("{}: the freed key takes again", db.label)
        };
        assert_ne!(second, failed);

        // Deleted: gone from the quota, due for the sweep, then a gone row.
        assert!(store.delete_broker_snapshot("snaps", &first).await.unwrap());
        assert!(!store.delete_broker_snapshot("other", &first).await.unwrap(), "another instance's id is unknown");
        let due = store.due_snapshot_deletions(sluice_store::clock::now_ms(), 10).await.unwrap();
        assert_eq!(
            due,
            vec![DueDeletion {
                snapshot_id: first.clone(),
                manifests: vec!["a".repeat(64), "b".repeat(64)],
                abandoned: false
            }]
        );
        store.record_snapshot_deleted(&first).await.unwrap();
        assert_eq!(store.broker_snapshot("snaps", &first).await.unwrap().unwrap().state, SnapshotState::Deleted);
        assert!(store.due_snapshot_deletions(sluice_store::clock::now_ms(), 10).await.unwrap().is_empty());
        assert!(matches!(store.claim_broker_snapshot(&new("k4", "h")).await.unwrap(), SnapshotClaim::Take(_)));
        // Past its TTL a ready snapshot is due too.
        store.finish_broker_snapshot(&second, &taken, 0).await.unwrap();
        let due = store.due_snapshot_deletions(sluice_store::clock::now_ms() + 1, 10).await.unwrap();
        assert_eq!(due.iter().map(|d| d.snapshot_id.as_str()).collect::<Vec<_>>(), vec![second.as_str()]);
    }
}

/// A seal of an executor's earlier boot does not cover it once it claimed
/// the session again (it was started again on its disk): an attestation of
/// that seal is ignored on arrival, or revoked by the next report, and the
/// reconcile state no longer lets it cover the ended executor.
#[tokio::test]
async fn an_attestation_of_an_earlier_boot_gives_way_to_a_newer_claim() {
    for db in databases().await {
        let store = open(&db).await;
        let (session, _) =
            store.create_capture_session(&OwnerId::from("alice"), None, Default::default()).await.unwrap();
        let mut new = new_workspace("alice", None);
        new.spec =
            sluice_store::spec::Spec::parse(json!({"source": {"kind": "capture", "sessionId": session.id}})).unwrap();
        new.capture_token = Some(Secret::new("capture-token-value-123456".into()));
        let view = created(store.create_workspace(new).await.unwrap());
        let (id, run_id) = (view.workspace.id.clone(), view.current_run.unwrap().id);
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        store.record(&lease, &run_id, launched(&running_runtime(), None)).await.unwrap();
        let first =
            store.claim_capture_session(&session.id, &run_id, &LaunchId::from("launch-1"), None).await.unwrap().epoch;
        let seal = sluice_protocol::attest::Attestation {
            capture_n: 4,
            epoch: first as u64,
            executor_id: "r1".into(),
            launch_id: Some("launch-1".into()),
            origin: Some(sluice_protocol::Origin { head_n: Some(4), ..stamp(first as u64, 5) }),
        };
        let intent = StopIntent { discard: false, attestation: Some((seal, None)) };
        let accepted =
            completion(store.request(&OwnerId::from("alice"), &id, stop("alice", intent.clone())).await.unwrap());
        assert_eq!(accepted, Some((AttestationOutcome::Accepted, None)), "{}", db.label);
        let state = store.load_reconcile_state(&id).await.unwrap().unwrap();
        let run = state.current_run.clone().unwrap();
        assert!(sluice_domain::reconcile::attestation_holds(&state, &run), "{}", db.label);

        // Started again on its disk: its daemon claims the session anew.
        store.claim_capture_session(&session.id, &run_id, &LaunchId::from("launch-1"), None).await.unwrap();
        let state = store.load_reconcile_state(&id).await.unwrap().unwrap();
        assert_eq!(state.claimed_epoch, Some(first as u64 + 1), "{}", db.label);
        assert!(!sluice_domain::reconcile::attestation_holds(&state, &run), "{}: no longer covers it", db.label);
        let again = completion(store.request(&OwnerId::from("alice"), &id, stop("alice", intent)).await.unwrap());
        assert!(
            matches!(&again, Some((AttestationOutcome::Ignored, Some(d))) if d.starts_with("older-epoch")),
            "{}: {again:?}",
            db.label
        );
        // The next report of the executor revokes the accepted one on record.
        let report = sluice_protocol::attest::Report { origin: stamp(first as u64 + 1, 1), saved: false };
        store.record_report(&run_id, &report, None).await.unwrap();
        assert!(store.accepted_attestation(&run_id).await.unwrap().is_none(), "{}: revoked", db.label);
    }
}

/// A workspace created at an earlier capture pins it against retention
/// until its first executor claims the session; that claim registers the
/// point's tree as the next capture, once, and a point no longer kept
/// cannot be asked for.
#[tokio::test]
async fn a_restore_point_is_pinned_until_its_first_claim_applies_it_once() {
    use sluice_protocol::capture::CaptureClass;
    for db in databases().await {
        let store = open(&db).await;
        let policy = capture::Retention { keep_last: Some(1), keep_within_ms: None };
        let (session, _) = store.create_capture_session(&OwnerId::from("alice"), None, policy).await.unwrap();
        store
            .claim_capture_session(&session.id, &RunId::from("run-a"), &LaunchId::from("launch-1"), None)
            .await
            .unwrap();
        for n in 1..=3 {
            store.register_capture(&session.id, &capture(1, n, "run-a", &format!("small-{n}"))).await.unwrap();
        }
        let at = |n: u64| {
            let mut new = new_workspace("alice", None);
            new.spec = sluice_store::spec::Spec::parse(
                json!({"source": {"kind": "capture", "sessionId": session.id, "captureN": n}}),
            )
            .unwrap();
            new.capture_token = Some(Secret::new("capture-token-value-123456".into()));
            new
        };
        let view = created(store.create_workspace(at(2)).await.unwrap());
        let run_id = view.current_run.unwrap().id;
        assert_eq!(store.pending_restore_point(&run_id).await.unwrap(), Some(2), "{}", db.label);
        let now = sluice_store::clock::now_ms();
        let forgotten = store.forget_captures(&session.id, Default::default(), now, true).await.unwrap();
        assert_eq!(forgotten, vec![1], "{}: 2 is pinned by the waiting workspace", db.label);
        let err = store.create_workspace(at(1)).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict { code: ConflictCode::CaptureNotKept, .. }), "{}: {err}", db.label);

        // A claim worked out against another head is refused, applying nothing.
        let tree = capture::RewoundTree {
            small: Some(capture::ManifestHead { key: "small-2".into(), depth: 1 }),
            bulk: None,
            bytes: 10,
            counts: capture::CaptureCounts { files: 1, added: 0, changed: 1, removed: 0 },
            origin: stamp(2, 0),
        };
        let stale = capture::Rewind { point: 2, expected_head: 2, tree: Some(tree.clone()) };
        let err = store
            .claim_capture_session(&session.id, &run_id, &LaunchId::from("launch-2"), Some(&stale))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Conflict { code: ConflictCode::HeadMoved, .. }), "{}: {err}", db.label);
        assert_eq!(store.pending_restore_point(&run_id).await.unwrap(), Some(2), "{}", db.label);

        let rewind = capture::Rewind { point: 2, expected_head: 3, tree: Some(tree) };
        let claimed = store
            .claim_capture_session(&session.id, &run_id, &LaunchId::from("launch-2"), Some(&rewind))
            .await
            .unwrap();
        assert_eq!((claimed.epoch, claimed.head_n, claimed.used_bytes), (2, 4, 10), "{}", db.label);
        assert_eq!(claimed.head(CaptureClass::Small), Some(&capture::ManifestHead { key: "small-2".into(), depth: 1 }));
        let listed = store.list_captures(&OwnerId::from("alice"), &session.id, 3, 10).await.unwrap().unwrap();
        let restored: Vec<_> = listed.iter().map(|c| (c.n, c.epoch, c.restored_from)).collect();
        assert_eq!(restored, vec![(4, 2, Some(2))], "{}", db.label);
        assert_eq!(store.pending_restore_point(&run_id).await.unwrap(), None, "{}: applied", db.label);
        // Claimed again (its daemon started anew), the point is not applied twice.
        let again = store
            .claim_capture_session(&session.id, &run_id, &LaunchId::from("launch-2"), Some(&rewind))
            .await
            .unwrap();
        assert_eq!((again.epoch, again.head_n), (3, 4), "{}", db.label);
        let forgotten = store.forget_captures(&session.id, Default::default(), now, true).await.unwrap();
        assert_eq!(forgotten, vec![2, 3], "{}: no longer pinned", db.label);
    }
}

/// Events and the reports of removed executors are forgotten by age, a
/// batch at a time; a report of an executor still on its runtime is kept
/// however old. (Exec results: in the exec run test.)
#[tokio::test]
async fn old_records_are_forgotten_by_age_in_batches() {
    use sluice_store::records::Record;
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (id, run_id) = (view.workspace.id.clone(), view.current_run.unwrap().id);
        let lease = store.claim_jobs(&WorkerId::from("w"), "host-a", 1, 60_000).await.unwrap().remove(0);
        store.record(&lease, &run_id, launched(&running_runtime(), None)).await.unwrap();
        store.record_report(&run_id, &report(1, false), None).await.unwrap();
        store.record_report(&run_id, &report(2, false), None).await.unwrap();
        let later = sluice_store::clock::now_ms() + 1;
        let events = store.list_events(&OwnerId::from("alice"), &id, 1000).await.unwrap().unwrap().len() as u64;
        assert!(events >= 2, "{}: the create and the launch wrote events", db.label);
        assert_eq!(store.purge_records(Record::Events, 0, 100).await.unwrap(), 0, "{}: none that old", db.label);
        assert_eq!(store.purge_records(Record::Events, later, 1).await.unwrap(), 1, "{}: one batch", db.label);
        assert_eq!(store.purge_records(Record::Events, later, 100).await.unwrap(), events - 1, "{}", db.label);
        assert!(store.list_events(&OwnerId::from("alice"), &id, 1000).await.unwrap().unwrap().is_empty());
        let kept = store.purge_records(Record::DrainReports, later, 100).await.unwrap();
        assert_eq!(kept, 0, "{}: its executor is still on its runtime", db.label);
        store.request(&OwnerId::from("alice"), &id, stop("alice", StopIntent::default())).await.unwrap();
        store.record(&lease, &run_id, Outcome::Removed).await.unwrap();
        let reports = store.executor_reports(&run_id).await.unwrap().len() as u64;
        assert!(reports >= 1, "{}", db.label);
        assert_eq!(store.purge_records(Record::DrainReports, later, 100).await.unwrap(), reports, "{}", db.label);
        assert!(store.executor_reports(&run_id).await.unwrap().is_empty(), "{}", db.label);
        // Events written since are newer than the cut-off.
        assert_eq!(store.purge_records(Record::Events, later - 1, 100).await.unwrap(), 0, "{}", db.label);
    }
}

#[tokio::test]
async fn a_pack_holds_its_members_until_a_newer_pack_or_a_repack_takes_them() {
    use sluice_store::packs::{PackMember, PackState, PackedObject};
    let member = |key: &str, offset: u64, length: u64| PackMember { object_key: key.into(), offset, length };
    let keys = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    for db in databases().await {
        let store = open(&db).await;
        // More members than one statement binds.
        let many: Vec<PackMember> = (0..450).map(|i| member(&format!("k{i:03}"), i * 10, 10)).collect();
        store.begin_pack("p1", 4500).await.unwrap();
        assert!(
            store.packed_objects(&keys(&["k000"])).await.unwrap().is_empty(),
            "{}: written, not yet found",
            db.label
        );
        assert!(store.record_pack("p1", &many).await.unwrap());
        store.begin_pack("p2", 30).await.unwrap();
        assert!(store.record_pack("p2", &[member("k001", 0, 10), member("x", 10, 20)]).await.unwrap());
        let found = store.packed_objects(&keys(&["k000", "k001", "x", "absent"])).await.unwrap();
        assert_eq!(found.len(), 3, "{}: {found:?}", db.label);
        assert_eq!(found["k000"], PackedObject { pack_key: "p1".into(), offset: 0, length: 10 });
        assert_eq!(found["k001"].pack_key, "p2", "{}: the newer pack holds an object written again", db.label);
        let all: Vec<String> = (0..450).map(|i| format!("k{i:03}")).collect();
        assert_eq!(store.packed_objects(&all).await.unwrap().len(), 450, "{}", db.label);

        let packs = store.recorded_packs().await.unwrap();
        let shape: Vec<(&str, PackState, usize)> =
            packs.iter().map(|p| (p.pack_key.as_str(), p.state, p.members.len())).collect();
        assert_eq!(shape, [("p1", PackState::Ready, 449), ("p2", PackState::Ready, 2)], "{}", db.label);
        assert!(packs[0].members.windows(2).all(|w| w[0].offset < w[1].offset), "in pack order");

        // A repack moves what it keeps; what p2 took stays with p2, the rest of p1 is gone.
        let kept = [member("k000", 0, 10), member("k001", 10, 10)];
        store.begin_pack("p3", 20).await.unwrap();
        assert!(store.repack(&["p1".into()], "p3", &kept).await.unwrap());
        let found = store.packed_objects(&keys(&["k000", "k001", "k002"])).await.unwrap();
        assert_eq!(found["k000"], PackedObject { pack_key: "p3".into(), offset: 0, length: 10 }, "{}", db.label);
        assert_eq!(found["k001"].pack_key, "p2", "{}", db.label);
        assert!(!found.contains_key("k002"), "{}: a member not kept is forgotten", db.label);
        let states = |packs: Vec<sluice_store::packs::RecordedPack>| {
            packs.into_iter().map(|p| (p.pack_key, p.state)).collect::<Vec<_>>()
        };
        assert_eq!(
            states(store.recorded_packs().await.unwrap()),
            [
                ("p1".to_string(), PackState::Deleting),
                ("p2".to_string(), PackState::Ready),
                ("p3".to_string(), PackState::Ready)
            ]
        );
        store.forget_pack("p1").await.unwrap();

        // Retired, a pack holds nothing; a write under its key that was
        // under way cannot record it.
        assert!(store.retire_pack("p2", PackState::Ready).await.unwrap());
        assert!(!store.retire_pack("p2", PackState::Ready).await.unwrap(), "{}: once", db.label);
        assert!(store.packed_objects(&keys(&["k001", "x"])).await.unwrap().is_empty(), "{}", db.label);
        store.begin_pack("p2", 30).await.unwrap();
        assert!(!store.record_pack("p2", &[member("x", 10, 20)]).await.unwrap(), "{}", db.label);
        assert!(store.packed_objects(&keys(&["x"])).await.unwrap().is_empty(), "{}", db.label);
        store.forget_pack("p2").await.unwrap();
        // A file no row names is claimed once; then a write under its key fails.
        assert!(store.claim_unrecorded_pack("p4", 5).await.unwrap());
        assert!(!store.claim_unrecorded_pack("p4", 5).await.unwrap());
        store.begin_pack("p4", 5).await.unwrap();
        assert!(!store.record_pack("p4", &[member("y", 0, 5)]).await.unwrap(), "{}", db.label);
        store.forget_pack("p4").await.unwrap();
        // A write that ran out of time under a sweep: the sweep retires it first.
        store.begin_pack("p5", 5).await.unwrap();
        assert!(store.retire_pack("p5", PackState::Writing).await.unwrap());
        assert!(!store.record_pack("p5", &[member("z", 0, 5)]).await.unwrap(), "{}", db.label);
        store.forget_pack("p5").await.unwrap();
        // Recording the same pack twice (a write made again) is one pack.
        assert!(store.record_pack("p3", &kept).await.unwrap());
        assert_eq!(states(store.recorded_packs().await.unwrap()), [("p3".to_string(), PackState::Ready)]);
    }
}

fn member(id: &str, host: &str, capacity: i64) -> sluice_store::fleet::WorkerMember {
    sluice_store::fleet::WorkerMember {
        id: id.into(),
        host: host.into(),
        runtime: "local".into(),
        capacity: Some(capacity),
        internal_url: Some(format!("https://{host}:7421")),
        version: "test".into(),
        warm_pool: Vec::new(),
        images: Vec::new(),
        builder: None,
    }
}

/// Claims a workspace's due reconcile job as a worker of `host`, and
/// places its queued run from there.
async fn place(store: &Store, host: &str, id: &str, run_id: &str) -> sluice_store::fleet::Placement {
    let lease = store.claim_jobs(&WorkerId::from(format!("w-{host}")), host, 10, 60_000).await.unwrap();
    let lease = lease.into_iter().find(|l| l.subject == id).expect("the workspace's job is claimable");
    let placed = store.place_run(&lease, &RunId::from(run_id), host).await.unwrap();
    store.finish_job(&lease, Some(0), None).await.unwrap();
    placed
}

#[tokio::test]
async fn placement_fills_the_least_loaded_host_and_jobs_stay_with_their_host() {
    use sluice_store::fleet::Placement;
    for db in databases().await {
        let store = open(&db).await;
        assert!(store.hosts().await.unwrap().is_empty(), "{}", db.label);
        store.beat(&member("a1", "host-a", 2), 60_000).await.unwrap();
        store.beat(&member("b1", "host-b", 1), 60_000).await.unwrap();
        let hosts = store.hosts().await.unwrap();
        let names: Vec<&str> = hosts.iter().map(|h| h.load.name.as_str()).collect();
        assert_eq!(names, ["host-a", "host-b"], "{}", db.label);
        assert!(hosts.iter().all(|h| h.load.live_workers == 1 && h.load.load == 0 && h.load.state == HostState::Up));

        // First workspace: both empty, ties go by name, so host-a; asked
        // from host-b, it is placed elsewhere.
        let first = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (first_id, first_run) = (first.workspace.id.clone(), first.current_run.unwrap().id);
        assert_eq!(place(&store, "host-b", &first_id, &first_run).await, Placement::Elsewhere("host-a".into()));
        // Placed, the job goes to host-a's workers only.
        assert!(
            store.claim_jobs(&WorkerId::from("w-b"), "host-b", 10, 60_000).await.unwrap().is_empty(),
            "{}",
            db.label
        );
        assert_eq!(place(&store, "host-a", &first_id, &first_run).await, Placement::Here, "{}", db.label);

        // Second: host-b has less load now.
        let second = created(store.create_workspace(new_workspace("bob", None)).await.unwrap());
        let (second_id, second_run) = (second.workspace.id.clone(), second.current_run.unwrap().id);
        assert_eq!(place(&store, "host-b", &second_id, &second_run).await, Placement::Here, "{}", db.label);
        // Third: host-b is full (capacity 1), host-a has room for one more.
        let third = created(store.create_workspace(new_workspace("carol", None)).await.unwrap());
        let (third_id, third_run) = (third.workspace.id.clone(), third.current_run.unwrap().id);
        assert_eq!(place(&store, "host-b", &third_id, &third_run).await, Placement::Elsewhere("host-a".into()));
        // Fourth: nobody has room.
        let fourth = created(store.create_workspace(new_workspace("dave", None)).await.unwrap());
        let (fourth_id, fourth_run) = (fourth.workspace.id.clone(), fourth.current_run.unwrap().id);
        assert_eq!(place(&store, "host-b", &fourth_id, &fourth_run).await, Placement::NoRoom, "{}", db.label);
        let loads: Vec<i64> = store.hosts().await.unwrap().iter().map(|h| h.load.load).collect();
        assert_eq!(loads, [2, 1], "{}", db.label);

        // A cordoned host gets nothing new, even with room.
        store.beat(&member("b1", "host-b", 5), 60_000).await.unwrap();
        assert!(store.cordon("host-b", Some("ops")).await.unwrap());
        assert!(!store.cordon("host-z", Some("ops")).await.unwrap(), "{}: unknown host", db.label);
        assert_eq!(place(&store, "host-b", &fourth_id, &fourth_run).await, Placement::NoRoom, "{}", db.label);
        let b = store.hosts().await.unwrap().remove(1);
        assert_eq!(b.cordoned.as_ref().map(|(who, _)| who.as_str()), Some("ops"), "{}", db.label);
        store.cordon("host-b", None).await.unwrap();
        // A host whose workers all missed their heartbeat gets nothing new.
        store.beat(&member("b1", "host-b", 5), -1).await.unwrap();
        assert_eq!(place(&store, "host-b", &fourth_id, &fourth_run).await, Placement::NoRoom, "{}", db.label);
        let workers = store.workers().await.unwrap();
        let health: Vec<_> = workers.iter().map(|w| (w.member.id.as_str(), w.health)).collect();
        use sluice_domain::fleet::WorkerHealth;
        assert_eq!(health, [("a1", WorkerHealth::Healthy), ("b1", WorkerHealth::Missing)], "{}", db.label);
        // A beat carries the host's warm pool and image cache as the worker last saw them.
        let pool = vec![sluice_store::fleet::PoolLevel { image: "a/b:1".into(), target: 3, idle: 2, starting: 1 }];
        let images = vec![sluice_store::fleet::HostImage {
            names: vec!["hub/app:1".into()],
            digest: format!("sha256:{}", "a".repeat(64)),
            size_bytes: 123,
            layers: 3,
            shared_layers: 1,
            last_used_at: 1_700_000_000_000,
            executors: 2,
        }];
        let reporting = sluice_store::fleet::WorkerMember {
            warm_pool: pool.clone(),
            images: images.clone(),
            ..member("b1", "host-b", 5)
        };
        store.beat(&reporting, 60_000).await.unwrap();
        let b1 = store.workers().await.unwrap().into_iter().find(|w| w.member.id == "b1").unwrap();
        assert_eq!((b1.member.warm_pool, b1.member.images), (pool, images), "{}", db.label);
        store.beat(&member("b1", "host-b", 5), 60_000).await.unwrap();
        assert_eq!(place(&store, "host-b", &fourth_id, &fourth_run).await, Placement::Here, "{}", db.label);

        // Every later job of an executor is claimed by its host's workers
        // only, a second worker of the host included; exec jobs too.
        let runtime = running_runtime();
        let lease = store.claim_jobs(&WorkerId::from("a1"), "host-a", 10, 60_000).await.unwrap();
        let subjects: Vec<&str> = lease.iter().map(|l| l.subject.as_str()).collect();
        assert!(subjects.contains(&first_id.as_str()) && subjects.contains(&third_id.as_str()), "{}", db.label);
        assert!(!subjects.contains(&second_id.as_str()) && !subjects.contains(&fourth_id.as_str()));
        let first_lease = lease.iter().find(|l| l.subject == first_id).unwrap().clone();
        store.record(&first_lease, &first_run, launched(&runtime, None)).await.unwrap();
        store.record(&first_lease, &first_run, Outcome::Ready).await.unwrap();
        for lease in &lease {
            store.finish_job(lease, None, None).await.unwrap();
        }
        let command =
            ExecCommand { argv: vec!["true".into()], cwd: None, env: None, stdin_digest: None, timeout_ms: None };
        let exec = store
            .create_exec_run(&OwnerId::from("alice"), &first_id, vec![command], vec![None])
            .await
            .unwrap()
            .unwrap();
        let b_jobs = store.claim_jobs(&WorkerId::from("b1"), "host-b", 10, 60_000).await.unwrap();
        assert!(b_jobs.iter().all(|l| l.subject != exec.id && l.subject != first_id), "{}: {b_jobs:?}", db.label);
        let a_jobs = store.claim_jobs(&WorkerId::from("a2"), "host-a", 10, 60_000).await.unwrap();
        assert!(a_jobs.iter().any(|l| l.kind == JobKind::Exec && l.subject == exec.id), "{}: {a_jobs:?}", db.label);

        // Draining a host stops what runs there.
        assert_eq!(
            store.workspaces_on_host("host-a").await.unwrap(),
            [(OwnerId::from("alice"), first_id.clone()), (OwnerId::from("carol"), third_id.clone())],
            "{}",
            db.label
        );
        // A worker that leaves is gone from the list; its host stays.
        store.leave(&WorkerId::from("a1")).await.unwrap();
        let ids: Vec<WorkerId> = store.workers().await.unwrap().into_iter().map(|w| w.member.id).collect();
        assert_eq!(ids, ["b1"], "{}", db.label);
        assert_eq!(store.hosts().await.unwrap().len(), 2, "{}", db.label);
        // A worker that sets no limit lifts its host's.
        store
            .beat(&sluice_store::fleet::WorkerMember { capacity: None, ..member("b2", "host-b", 0) }, 60_000)
            .await
            .unwrap();
        let b = store.host("host-b").await.unwrap().unwrap();
        assert_eq!((b.load.capacity, b.load.live_workers, b.load.takes_new_work()), (None, 2, true), "{}", db.label);
        assert!(store.host("host-z").await.unwrap().is_none(), "{}", db.label);
    }
}

/// Launches `id`'s queued run on `host` (placed there), ready.
async fn launch_on(store: &Store, host: &str, id: &str, run_id: &str) {
    let leases = store.claim_jobs(&WorkerId::from(format!("w-{host}")), host, 10, 60_000).await.unwrap();
    let lease = leases.iter().find(|l| l.subject == id).expect("the job is claimable by the host").clone();
    assert_eq!(
        store.place_run(&lease, &RunId::from(run_id), host).await.unwrap(),
        sluice_store::fleet::Placement::Here
    );
    store.record(&lease, &RunId::from(run_id), launched(&running_runtime(), None)).await.unwrap();
    store.record(&lease, &RunId::from(run_id), Outcome::Ready).await.unwrap();
    for lease in leases {
        store.finish_job(&lease, None, None).await.unwrap();
    }
}

#[tokio::test]
async fn a_silent_host_keeps_its_executors_and_a_forgotten_one_gives_them_up() {
    for db in databases().await {
        let store = open(&db).await;
        store.beat(&member("a1", "host-a", 10), 60_000).await.unwrap();
        let mut capture = new_workspace("alice", None);
        capture.spec =
            sluice_store::spec::Spec::parse(json!({"source": {"kind": "capture", "sessionId": "cs_1"}})).unwrap();
        capture.capture_token = Some(Secret::new("capture-token-value-123456".into()));
        let kept = created(store.create_workspace(capture).await.unwrap());
        let (kept_id, kept_run) = (kept.workspace.id.clone(), kept.current_run.unwrap().id);
        launch_on(&store, "host-a", &kept_id, &kept_run).await;
        let plain = created(store.create_workspace(new_workspace("bob", None)).await.unwrap());
        let (plain_id, plain_run) = (plain.workspace.id.clone(), plain.current_run.unwrap().id);
        launch_on(&store, "host-a", &plain_id, &plain_run).await;

        // Within the grace nothing moves.
        assert!(store.sweep_unreachable_hosts(60_000).await.unwrap().is_empty(), "{}", db.label);
        let swept = eventually("the short grace ran out", || async {
            Some(store.sweep_unreachable_hosts(10).await.unwrap()).filter(|swept| !swept.is_empty())
        })
        .await;
        assert_eq!(swept, ["host-a"], "{}", db.label);
        assert!(store.sweep_unreachable_hosts(10).await.unwrap().is_empty(), "{}: once", db.label);
        assert_eq!(store.host("host-a").await.unwrap().unwrap().load.state, HostState::Unreachable);
        let state = store.load_reconcile_state(&kept_id).await.unwrap().unwrap();
        let run = state.current_run.unwrap();
        assert_eq!((state.workspace.status, run.status), (WorkspaceStatus::Retained, WorkspaceStatus::Retained));
        assert_eq!(run.runtime_removed_at, None, "{}: nothing is written off", db.label);
        let retention = state.drain.unwrap().retention.unwrap();
        assert_eq!(retention.reason, "host-unreachable", "{}", db.label);
        let plain_state = store.load_reconcile_state(&plain_id).await.unwrap().unwrap();
        assert_eq!(plain_state.workspace.status, WorkspaceStatus::Failed, "{}", db.label);
        assert_eq!(plain_state.current_run.unwrap().error.unwrap().code.as_deref(), Some("host-unreachable"));
        // Their jobs wait for the host's own workers.
        store.beat(&member("b1", "host-b", 10), 60_000).await.unwrap();
        assert!(
            store.claim_jobs(&WorkerId::from("b1"), "host-b", 10, 60_000).await.unwrap().is_empty(),
            "{}",
            db.label
        );

        // Back: the host is up, and its worker finds the jobs due.
        store.beat(&member("a1", "host-a", 10), 60_000).await.unwrap();
        assert_eq!(store.host("host-a").await.unwrap().unwrap().load.state, HostState::Up, "{}", db.label);
        let leases = store.claim_jobs(&WorkerId::from("a1"), "host-a", 10, 60_000).await.unwrap();
        let lease = leases.iter().find(|l| l.subject == kept_id).expect("the retained one's job").clone();
        store.record(&lease, &kept_run, Outcome::Readopted).await.unwrap();
        let state = store.load_reconcile_state(&kept_id).await.unwrap().unwrap();
        assert_eq!(state.workspace.status, WorkspaceStatus::Ready, "{}: adopted again", db.label);
        for lease in &leases {
            store.finish_job(lease, None, None).await.unwrap();
        }

        // Forgotten: written off, and a launch placed there goes elsewhere.
        let queued = created(store.create_workspace(new_workspace("carol", None)).await.unwrap());
        let (queued_id, queued_run) = (queued.workspace.id.clone(), queued.current_run.unwrap().id);
        store.cordon("host-b", Some("ops")).await.unwrap();
        let lease = store.claim_jobs(&WorkerId::from("a1"), "host-a", 10, 60_000).await.unwrap().remove(0);
        assert_eq!(lease.subject, queued_id);
        store.place_run(&lease, &queued_run, "host-a").await.unwrap();
        store.finish_job(&lease, None, None).await.unwrap();
        assert!(store.forget_host("host-z", "ops").await.unwrap().is_none(), "{}", db.label);
        let lost = store.forget_host("host-a", "night-shift").await.unwrap().unwrap();
        assert_eq!(lost.len(), 2, "{}: {lost:?}", db.label);
        let a = store.host("host-a").await.unwrap().unwrap();
        assert_eq!(a.load.state, HostState::Lost, "{}", db.label);
        assert_eq!(a.forgotten.map(|(by, _)| by), Some("night-shift".to_owned()), "{}", db.label);
        let state = store.load_reconcile_state(&kept_id).await.unwrap().unwrap();
        let run = state.current_run.unwrap();
        assert!(run.runtime_removed_at.is_some(), "{}", db.label);
        assert_eq!(run.error.unwrap().code.as_deref(), Some("executor-lost"), "{}", db.label);
        let placed = store.load_reconcile_state(&queued_id).await.unwrap().unwrap().current_run.unwrap();
        assert_eq!(placed.host, None, "{}: placed anew", db.label);
        store.cordon("host-b", None).await.unwrap();
        let b_jobs = store.claim_jobs(&WorkerId::from("b1"), "host-b", 10, 60_000).await.unwrap();
        assert!(b_jobs.iter().any(|l| l.subject == queued_id), "{}: {b_jobs:?}", db.label);
    }
}

#[tokio::test]
async fn an_ssh_key_belongs_to_one_principal() {
    use sluice_store::ssh_keys::{Registration, SshKey};
    let key = |fingerprint: &str, principal: &str| SshKey {
        fingerprint: fingerprint.into(),
        principal: principal.into(),
        algorithm: "ssh-ed25519".into(),
        public_key: format!("AAAA{fingerprint}"),
        created_at: 0,
    };
    for db in databases().await {
        let store = open(&db).await;
        let first = match store.register_ssh_key(&key("SHA256:one", "alice")).await.unwrap() {
            Registration::Created(k) => k,
            other => panic!("{}: {other:?}", db.label),
        };
        assert!(first.created_at > 0, "{}", db.label);
        // Again for alice: the same record; for bob: refused, alice's kept.
        assert_eq!(
            store.register_ssh_key(&key("SHA256:one", "alice")).await.unwrap(),
            Registration::Existing(first.clone()),
            "{}",
            db.label
        );
        assert_eq!(
            store.register_ssh_key(&key("SHA256:one", "bob")).await.unwrap(),
            Registration::HeldByAnother,
            "{}",
            db.label
        );
        assert_eq!(store.ssh_key("SHA256:one").await.unwrap().unwrap().principal, "alice", "{}", db.label);
        store.register_ssh_key(&key("SHA256:two", "alice")).await.unwrap();
        store.register_ssh_key(&key("SHA256:three", "bob")).await.unwrap();
        let alice: Vec<String> = store.ssh_keys_of("alice").await.unwrap().into_iter().map(|k| k.fingerprint).collect();
        assert_eq!(alice.len(), 2, "{}", db.label);
        assert!(alice.contains(&"SHA256:one".to_owned()) && alice.contains(&"SHA256:two".to_owned()));
        assert!(store.delete_ssh_key("SHA256:one").await.unwrap(), "{}", db.label);
        assert!(!store.delete_ssh_key("SHA256:one").await.unwrap(), "{}", db.label);
        assert!(store.ssh_key("SHA256:one").await.unwrap().is_none(), "{}", db.label);
        // Once deleted, another principal may register it.
        assert!(matches!(store.register_ssh_key(&key("SHA256:one", "bob")).await.unwrap(), Registration::Created(_)));
    }
}

#[tokio::test]
async fn gateway_sessions_are_recorded_once_started_and_ended_once() {
    use sluice_store::ssh_keys::SessionOutcome;
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (id, run) = (view.workspace.id.clone(), view.current_run.clone().unwrap().id);
        let shell = store.session_started(&id, &run, "alice", Some("SHA256:abc"), "shell").await.unwrap();
        let forward = store.session_started(&id, &run, "carol", None, "port-forward").await.unwrap();
        store.session_ended(&SshSessionId::from(&shell), SessionOutcome::Exited, Some(7)).await.unwrap();
        // A second end (the relay's and a late one) changes nothing.
        store.session_ended(&SshSessionId::from(&shell), SessionOutcome::Cut, None).await.unwrap();
        let sessions = store.sessions_of(&id).await.unwrap();
        assert_eq!(sessions.len(), 2, "{}", db.label);
        let first = sessions.iter().find(|s| s.id == shell).unwrap();
        assert_eq!(
            (first.kind.as_str(), first.exit_status, first.outcome.as_deref(), first.key_fingerprint.as_deref()),
            ("shell", Some(7), Some("exited"), Some("SHA256:abc")),
            "{}",
            db.label
        );
        assert!(first.ended_at.is_some_and(|end| end >= first.started_at));
        let open_one = sessions.iter().find(|s| s.id == forward).unwrap();
        assert_eq!((open_one.principal.as_str(), open_one.ended_at), ("carol", None), "{}", db.label);
    }
}

#[tokio::test]
async fn preview_grants_are_found_by_token_or_as_public_and_revoked_once() {
    use sluice_store::previews::NewPreview;
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (id, run) = (view.workspace.id.clone(), view.current_run.clone().unwrap().id);
        let new = |port: u16, public: bool| NewPreview {
            workspace_id: &id,
            run_id: &run,
            port,
            public,
            created_by: "alice",
            expires_at: 4_000_000_000_000,
        };
        let (private, token) = store.create_preview(&new(3000, false)).await.unwrap();
        let token = token.expect("a private grant comes with its token");
        let found = store.preview_by_token(token.expose()).await.unwrap().expect("found by its token");
        assert_eq!(found, private, "{}", db.label);
        assert_eq!((found.grant.port, found.grant.public, found.grant.revoked), (3000, false, false));
        assert!(store.preview_by_token("not-a-token").await.unwrap().is_none(), "{}", db.label);
        assert!(store.public_preview(&id, 3000).await.unwrap().is_none(), "a private grant is not public");

        let (public, no_token) = store.create_preview(&new(8080, true)).await.unwrap();
        assert!(no_token.is_none(), "a public grant needs no token");
        assert_eq!(store.public_preview(&id, 8080).await.unwrap().map(|p| p.id), Some(public.id.clone()));
        assert_eq!(store.previews_of(&id).await.unwrap().len(), 2, "{}", db.label);

        assert!(store.revoke_preview(&id, &public.id).await.unwrap());
        assert!(store.revoke_preview(&id, &public.id).await.unwrap(), "revoking again is no error");
        assert!(!store.revoke_preview(&id, &PreviewId::from("pv_nope")).await.unwrap(), "{}", db.label);
        assert!(
            !store.revoke_preview(&WorkspaceId::from("ws_other"), &private.id).await.unwrap(),
            "only the workspace's own"
        );
        assert!(store.public_preview(&id, 8080).await.unwrap().is_none(), "revoked: no longer public");
        assert!(store.preview(&id, &public.id).await.unwrap().unwrap().grant.revoked, "{}", db.label);
    }
}

/// A reader that follows the feed while sixteen writers append to it
/// meets every event once, each workspace's in sequence order.
#[tokio::test]
async fn the_feed_meets_every_event_once_while_it_is_written() {
    use sluice_store::event_feed::FeedCursor;
    for db in databases().await {
        let store = open(&db).await;
        let writers: Vec<_> = (0..16)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move {
                    for _ in 0..10 {
                        store.create_workspace(new_workspace("alice", None)).await.unwrap();
                    }
                })
            })
            .collect();
        let mut cursor = FeedCursor::default();
        let mut seen: Vec<(String, i64)> = Vec::new();
        let mut read = |batch: Vec<sluice_store::event_feed::FeedEvent>, cursor: &mut FeedCursor| {
            for fed in batch {
                assert!(fed.cursor > *cursor, "{}: the feed went back", db.label);
                *cursor = fed.cursor;
                let sluice_store::model::FeedItem::Workspace(event) = fed.item else {
                    panic!("{}: only workspace events were written", db.label)
                };
                seen.push((event.workspace_id.to_string(), event.seq));
            }
            seen.len()
        };
        while !writers.iter().all(|w| w.is_finished()) {
            read(store.feed_after(cursor, 7).await.unwrap(), &mut cursor);
        }
        for writer in writers {
            writer.await.unwrap();
        }
        // Each create writes two events. On PostgreSQL the feed waits for
        // every older transaction of the server (other tests' too) to end:
        // read until all have shown.
        let reader = std::cell::RefCell::new((cursor, read));
        eventually("every event read", || async {
            loop {
                let from = reader.borrow().0;
                let batch = store.feed_after(from, 7).await.unwrap();
                let empty = batch.is_empty();
                let (cursor, read) = &mut *reader.borrow_mut();
                let count = read(batch, cursor);
                if empty {
                    return (count >= 320).then_some(());
                }
            }
        })
        .await;
        let mut expected = 0;
        let mut per_workspace: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for (workspace, seq) in &seen {
            per_workspace.entry(workspace.clone()).or_default().push(*seq);
        }
        for (workspace, seqs) in &per_workspace {
            let all = store
                .events_after(&OwnerId::from("alice"), &WorkspaceId::from(workspace), 0, 100)
                .await
                .unwrap()
                .unwrap();
            expected += all.len();
            assert_eq!(seqs, &all.iter().map(|e| e.seq).collect::<Vec<_>>(), "{}: {workspace}", db.label);
        }
        assert_eq!(per_workspace.len(), 160, "{}", db.label);
        assert_eq!(seen.len(), expected, "{}: every event once", db.label);
        let later =
            store.events_after(&OwnerId::from("alice"), &WorkspaceId::from(&seen[0].0), 1, 100).await.unwrap().unwrap();
        assert!(later.iter().all(|e| e.seq > 1), "{}", db.label);
        assert!(
            store.events_after(&OwnerId::from("bob"), &WorkspaceId::from(&seen[0].0), 0, 100).await.unwrap().is_none(),
            "owner-scoped"
        );
    }
}

/// sluice's own events take feed positions, in order with the contract's,
/// and never a place in a workspace's own log.
#[tokio::test]
async fn sluice_events_are_on_the_feed_and_not_in_a_workspace_log() {
    use sluice_store::event_feed::FeedCursor;
    use sluice_store::model::{FeedItem, SluiceEventType};
    use sluice_store::ssh_keys::SessionOutcome;
    for db in databases().await {
        let store = open(&db).await;
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (workspace, run) = (view.workspace.id.clone(), view.current_run.unwrap().id);
        let before = store.events_after(&OwnerId::from("alice"), &workspace, 0, 100).await.unwrap().unwrap();
        let session = store.session_started(&workspace, &run, "alice", None, "shell").await.unwrap();
        store.session_ended(&SshSessionId::from(&session), SessionOutcome::Exited, Some(0)).await.unwrap();
        store.session_ended(&SshSessionId::from(&session), SessionOutcome::Cut, None).await.unwrap();
        let after = store.events_after(&OwnerId::from("alice"), &workspace, 0, 100).await.unwrap().unwrap();
        assert_eq!(before, after, "{}: a workspace's own log holds only the contract's events", db.label);

        // PostgreSQL's feed waits for every older transaction of the
        // server (other tests' too) to end: read until the end shows.
        let fed = eventually("the session's end in the feed", || async {
            let fed = store.feed_after(FeedCursor::default(), 100).await.unwrap();
            fed.iter().any(|f| f.item.type_name() == "sluice.gateway.session.ended").then_some(fed)
        })
        .await;
        let kinds: Vec<&str> = fed.iter().map(|f| f.item.type_name()).collect();
        let sluice: Vec<_> = fed
            .iter()
            .filter_map(|f| match &f.item {
                FeedItem::Sluice(e) => Some(e.clone()),
                FeedItem::Workspace(_) => None,
            })
            .collect();
        assert_eq!(
            sluice.iter().map(|e| e.event_type).collect::<Vec<_>>(),
            [SluiceEventType::GatewaySessionStarted, SluiceEventType::GatewaySessionEnded],
            "{}: one start, one end however often the end is recorded: {kinds:?}",
            db.label
        );
        assert_eq!(&kinds[kinds.len() - 2..], ["sluice.gateway.session.started", "sluice.gateway.session.ended"]);
        assert!(sluice.iter().all(|e| e.workspace_id.as_deref() == Some(workspace.as_str())), "{}", db.label);
        assert_eq!(sluice[1].data.as_ref().unwrap()["outcome"], "exited", "{}", db.label);
        let body = fed.last().unwrap().body();
        assert_eq!(body["type"], "sluice.gateway.session.ended");
        assert!(body.get("sequence").is_none(), "{}: no sequence number: {body}", db.label);
    }
}

/// The operator's reads: every owner's workspaces by status and owner, a
/// workspace's timeline (the contract's events and sluice's own), and the
/// feed's end.
#[tokio::test]
async fn operators_read_every_owners_workspaces_and_a_timeline() {
    use sluice_store::model::{FeedItem, WorkspaceStatus};
    for db in databases().await {
        let store = open(&db).await;
        let alice = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let bob = created(store.create_workspace(new_workspace("bob", None)).await.unwrap());
        let ids = |list: Vec<sluice_store::model::Workspace>| list.into_iter().map(|w| w.id).collect::<Vec<_>>();
        let all = ids(store.all_workspaces(None, None, 10).await.unwrap());
        assert_eq!(all, [bob.workspace.id.clone(), alice.workspace.id.clone()], "{}: newest change first", db.label);
        let bobs = ids(store.all_workspaces(None, Some(&OwnerId::from("bob")), 10).await.unwrap());
        assert_eq!(bobs, std::slice::from_ref(&bob.workspace.id), "{}", db.label);
        assert_eq!(store.all_workspaces(Some(WorkspaceStatus::Queued), None, 10).await.unwrap().len(), 2);
        assert!(store.all_workspaces(Some(WorkspaceStatus::Ready), None, 10).await.unwrap().is_empty());
        assert_eq!(store.all_workspaces(None, None, 1).await.unwrap().len(), 1, "{}: the limit holds", db.label);

        let run = alice.current_run.unwrap().id;
        let session = store.session_started(&alice.workspace.id, &run, "alice", None, "shell").await.unwrap();
        store
            .session_ended(&SshSessionId::from(&session), sluice_store::ssh_keys::SessionOutcome::Exited, Some(0))
            .await
            .unwrap();
        let timeline = store.timeline(&alice.workspace.id, 10).await.unwrap();
        let kinds: Vec<&str> = timeline.iter().map(FeedItem::type_name).collect();
        assert_eq!(
            kinds,
            ["workspace.created", "attempt.queued", "sluice.gateway.session.started", "sluice.gateway.session.ended"],
            "{}",
            db.label
        );
        let newest = store.timeline(&alice.workspace.id, 1).await.unwrap();
        assert_eq!(newest.iter().map(FeedItem::type_name).collect::<Vec<_>>(), ["sluice.gateway.session.ended"]);

        // The feed's end is its last readable event (PostgreSQL waits for
        // older transactions of the server, other tests' too).
        let (fed, end) = eventually("six events readable", || async {
            let fed = store.feed_after(Default::default(), 100).await.unwrap();
            let end = store.feed_end().await.unwrap();
            (fed.len() == 6).then_some((fed, end))
        })
        .await;
        assert_eq!(Some(end), fed.last().map(|f| f.cursor), "{}", db.label);
        assert!(store.feed_after(end, 10).await.unwrap().is_empty(), "{}: nothing after the end", db.label);
    }
}

/// On PostgreSQL an enqueue announces itself to listening workers when it
/// commits, and a worker's own claim announces nothing (so workers do not
/// wake each other in a loop). SQLite has no announcements: its workers
/// share the process that enqueues.
#[tokio::test]
async fn enqueues_are_announced_and_claims_are_not() {
    use std::time::Duration;
    for db in databases().await {
        let store = open(&db).await;
        let Some(mut heard) = store.job_announcements().await.unwrap() else {
            assert_eq!(store.backend(), BackendKind::Sqlite, "{}", db.label);
            continue;
        };
        store.create_workspace(new_workspace("alice", None)).await.unwrap();
        let announced = tokio::time::timeout(Duration::from_secs(10), heard.next()).await;
        assert!(matches!(announced, Ok(Ok(()))), "{}: the create's job was announced", db.label);
        assert_eq!(store.claim_jobs(&WorkerId::from("w"), "h", 10, 60_000).await.unwrap().len(), 1);
        let quiet = tokio::time::timeout(Duration::from_millis(500), heard.next()).await;
        assert!(quiet.is_err(), "{}: a claim announces nothing", db.label);
    }
}

/// A workspace that has ended may be deleted, and then no read on its
/// owner's behalf finds it, while its events stay on the feed with the
/// deletion's; one still live, retained, or whose runtime is not removed is
/// refused and left as it was. The purge deletes what ended before its
/// cutoff, by the same rule.
#[tokio::test]
async fn ended_workspaces_are_deleted_and_live_ones_are_refused() {
    use sluice_store::deletions::Deletion;
    let alice = OwnerId::from("alice");
    for db in databases().await {
        let store = open(&db).await;
        let mut new = new_workspace("alice", Some(("k-del", "h")));
        new.secret_env = Some(Secret::new(BTreeMap::from([("API_KEY".to_owned(), "del-secret".to_owned())])));
        new.capture_token = Some(Secret::new("del-capture-token".into()));
        let keyed = created(store.create_workspace(new).await.unwrap());
        let id = keyed.workspace.id.clone();
        let run_id = keyed.current_run.unwrap().id;
        let refused = |d: Option<Deletion>| match d {
            Some(Deletion::Refused(r)) => Some(r.code),
            _ => None,
        };

        // Queued, then launched and stopping: not ended.
        assert_eq!(refused(store.delete_workspace(&alice, &id).await.unwrap()), Some(ConflictCode::NotEnded));
        let lease = hold(&store, "host-a", &id).await;
        store.record(&lease, &run_id, launched(&running_runtime(), None)).await.unwrap();
        store.record(&lease, &run_id, Outcome::Ready).await.unwrap();
        assert_eq!(refused(store.delete_workspace(&alice, &id).await.unwrap()), Some(ConflictCode::NotEnded));
        store.request(&alice, &id, stop("alice", StopIntent::default())).await.unwrap();
        store.record(&lease, &run_id, Outcome::Removed).await.unwrap();
        store.finish_job(&lease, Some(0), None).await.unwrap();
        assert!(store.get_workspace(&alice, &id).await.unwrap().is_some(), "{}: refusals change nothing", db.label);

        // Stopped with its runtime removed: another owner cannot, the owner can, once.
        assert_eq!(store.delete_workspace(&OwnerId::from("bob"), &id).await.unwrap(), None);
        let deleted = store.delete_workspace(&alice, &id).await.unwrap();
        assert!(matches!(deleted, Some(Deletion::Deleted { .. })), "{}: {deleted:?}", db.label);
        for kind in [SecretKind::SecretEnv, SecretKind::CaptureToken] {
            assert!(store.open_secret(&id, kind).await.unwrap().is_none(), "{}: its secrets go with it", db.label);
        }
        assert_eq!(store.delete_workspace(&alice, &id).await.unwrap(), None, "{}: already gone", db.label);
        assert!(store.get_workspace(&alice, &id).await.unwrap().is_none(), "{}", db.label);
        assert!(store.list_events(&alice, &id, 100).await.unwrap().is_none(), "{}", db.label);
        assert!(store.list_runs(&alice, &id, 100).await.unwrap().is_none(), "{}", db.label);
        let listed =
            store.list_workspaces(&alice, &WorkspaceFilter { limit: 100, ..Default::default() }).await.unwrap();
        assert!(listed.iter().all(|v| v.workspace.id != id), "{}", db.label);
        assert!(store.all_workspaces(None, None, 100).await.unwrap().iter().all(|w| w.id != id), "{}", db.label);
        let restart = store.request(&alice, &id, Request::Restart).await.unwrap();
        assert!(restart.is_none(), "{}: a request finds nothing", db.label);
        let key = store.get_create_key(&alice, &IdempotencyKey::from("k-del")).await.unwrap();
        assert_eq!((key.state, key.workspace_id), (CreateKeyState::Found, Some(id.clone())), "{}", db.label);
        let fed = eventually("the deletion on the feed", || async {
            let fed = store.feed_after(Default::default(), 500).await.unwrap();
            fed.iter().any(|f| f.item.type_name() == "sluice.workspace.deleted").then_some(fed)
        })
        .await;
        let of_it: Vec<&str> = fed
            .iter()
            .filter(|f| match &f.item {
                FeedItem::Workspace(e) => e.workspace_id == id,
                FeedItem::Sluice(e) => e.workspace_id.as_ref() == Some(&id),
            })
            .map(|f| f.item.type_name())
            .collect();
        assert_eq!(of_it.first(), Some(&"workspace.created"), "{}: {of_it:?}", db.label);
        assert_eq!(of_it.last(), Some(&"sluice.workspace.deleted"), "{}: {of_it:?}", db.label);

        // Retained: refused as such.
        let kept = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (kept_id, kept_run) = (kept.workspace.id.clone(), kept.current_run.unwrap().id);
        let lease = hold(&store, "host-a", &kept_id).await;
        store.record(&lease, &kept_run, launched(&running_runtime(), None)).await.unwrap();
        let retained = Outcome::Retained { reason: "kept".into(), recoverable: true, first_attempt_at: 0 };
        store.record(&lease, &kept_run, retained).await.unwrap();
        store.finish_job(&lease, Some(0), None).await.unwrap();
        let answer = store.delete_workspace(&alice, &kept_id).await.unwrap();
        assert_eq!(refused(answer), Some(ConflictCode::Retained), "{}", db.label);

        // The purge: only what ended before its cutoff.
        let ended = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let (ended_id, ended_run) = (ended.workspace.id.clone(), ended.current_run.unwrap().id);
        let lease = hold(&store, "host-a", &ended_id).await;
        store.record(&lease, &ended_run, launched(&running_runtime(), None)).await.unwrap();
        store.request(&alice, &ended_id, stop("alice", StopIntent::default())).await.unwrap();
        store.record(&lease, &ended_run, Outcome::Removed).await.unwrap();
        store.finish_job(&lease, Some(0), None).await.unwrap();
        let finished = store.get_workspace(&alice, &ended_id).await.unwrap().unwrap().workspace.finished_at.unwrap();
        assert_eq!(store.purge_ended_workspaces(finished, 100).await.unwrap(), 0, "{}: not before", db.label);
        assert_eq!(store.purge_ended_workspaces(finished + 1, 100).await.unwrap(), 1, "{}", db.label);
        assert!(store.get_workspace(&alice, &ended_id).await.unwrap().is_none(), "{}", db.label);
        assert!(store.get_workspace(&alice, &kept_id).await.unwrap().is_some(), "{}: retained stays", db.label);
    }
}

/// A waiter on a workspace hears of its events: PostgreSQL announces each
/// recorded event's workspace as it commits, and the feed lists the
/// workspace of every event after a cursor (the backstop, and SQLite's only
/// way).
#[tokio::test]
async fn each_event_names_its_workspace_to_waiters() {
    use std::time::Duration;
    for db in databases().await {
        let store = open(&db).await;
        let start = store.feed_end().await.unwrap();
        let mut heard = store.event_announcements().await.unwrap();
        assert_eq!(heard.is_none(), store.backend() == BackendKind::Sqlite, "{}", db.label);
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let id = view.workspace.id.clone();
        if let Some(heard) = &mut heard {
            let announced = tokio::time::timeout(Duration::from_secs(10), heard.next_workspace()).await;
            assert_eq!(announced.ok().and_then(Result::ok).flatten(), Some(id.clone()), "{}", db.label);
        }
        let touched = eventually("the create's events readable", || async {
            let touched = store.touched_after(start, 100).await.unwrap();
            (touched.len() >= 2).then_some(touched)
        })
        .await;
        assert!(touched.iter().all(|(_, w)| w.as_ref() == Some(&id)), "{}: {touched:?}", db.label);
        let last = touched.last().unwrap().0;
        assert!(store.touched_after(last, 100).await.unwrap().is_empty(), "{}: nothing after", db.label);
    }
}

/// A worker starting on a host makes the passes of that host's ready
/// executors due at once (each pass opens its watch), and no one else's.
#[tokio::test]
async fn a_starting_worker_hastens_the_passes_of_its_hosts_ready_executors() {
    let far = sluice_store::clock::now_ms() + 600_000;
    for db in databases().await {
        let store = open(&db).await;
        store.beat(&member("a1", "host-a", 1), 60_000).await.unwrap();
        let mut ready = Vec::new();
        // Host a's executor, then host b's: each placed, launched, ready,
        // and its next pass far off.
        for (host, capacity) in [("host-a", 1), ("host-b", 1)] {
            store.beat(&member(&format!("{host}1"), host, capacity), 60_000).await.unwrap();
            let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
            let (id, run_id) = (view.workspace.id.clone(), view.current_run.unwrap().id);
            let lease = store.claim_jobs(&WorkerId::from("w"), host, 10, 60_000).await.unwrap();
            let lease = lease.into_iter().find(|l| l.subject == id).unwrap();
            assert_eq!(store.place_run(&lease, &run_id, host).await.unwrap(), sluice_store::fleet::Placement::Here);
            store.record(&lease, &run_id, launched(&running_runtime(), None)).await.unwrap();
            store.record(&lease, &run_id, Outcome::Ready).await.unwrap();
            store.finish_job(&lease, Some(far), None).await.unwrap();
            ready.push(id);
        }
        assert!(store.claim_jobs(&WorkerId::from("w"), "host-a", 10, 60_000).await.unwrap().is_empty(), "{}", db.label);
        assert_eq!(store.hasten_ready_on_host("host-a").await.unwrap(), 1, "{}", db.label);
        let due: Vec<String> = store
            .claim_jobs(&WorkerId::from("w"), "host-a", 10, 60_000)
            .await
            .unwrap()
            .into_iter()
            .map(|l| l.subject)
            .collect();
        assert_eq!(due, vec![ready[0].clone()], "{}: host a's ready executor only", db.label);
        assert!(store.claim_jobs(&WorkerId::from("w"), "host-b", 10, 60_000).await.unwrap().is_empty(), "{}", db.label);
        assert_eq!(store.hasten_ready_on_host("host-c").await.unwrap(), 0, "{}", db.label);
    }
}

#[tokio::test]
async fn console_sessions_hold_until_signed_out_revoked_or_past_their_time() {
    let now = sluice_store::clock::now_ms();
    for db in databases().await {
        let store = open(&db).await;
        store.begin_console_session(&ConsoleSessionId::from("a"), now + 60_000).await.unwrap();
        store.begin_console_session(&ConsoleSessionId::from("b"), now + 60_000).await.unwrap();
        store.begin_console_session(&ConsoleSessionId::from("old"), now - 1).await.unwrap();
        assert!(store.console_session_holds(&ConsoleSessionId::from("a")).await.unwrap(), "{}", db.label);
        assert!(
            !store.console_session_holds(&ConsoleSessionId::from("old")).await.unwrap(),
            "{}: past its time",
            db.label
        );
        assert!(!store.console_session_holds(&ConsoleSessionId::from("never")).await.unwrap(), "{}", db.label);
        store.end_console_session(&ConsoleSessionId::from("a")).await.unwrap();
        assert!(!store.console_session_holds(&ConsoleSessionId::from("a")).await.unwrap(), "{}: signed out", db.label);
        assert!(
            store.console_session_holds(&ConsoleSessionId::from("b")).await.unwrap(),
            "{}: the others hold",
            db.label
        );
        assert_eq!(store.end_all_console_sessions().await.unwrap(), 1, "{}: only b still held", db.label);
        assert!(!store.console_session_holds(&ConsoleSessionId::from("b")).await.unwrap(), "{}: revoked", db.label);
    }
}

/// A broker's release or reaping ends its workspace through the transition:
/// one never launched is simply wanted stopped (never refused), and a
/// launched capture-sourced one is stopped like any stop, its intent
/// recorded under the broker's name, with a reconcile due.
#[tokio::test]
async fn a_broker_end_is_a_stop_through_the_transition() {
    for db in databases().await {
        let store = open(&db).await;
        let never = created(store.create_workspace(new_workspace("alice", None)).await.unwrap()).workspace.id;
        store.end_broker_workspace(&never, TerminationReason::Released).await.unwrap();
        let state = store.load_reconcile_state(&never).await.unwrap().unwrap();
        assert_eq!(state.workspace.desired_state, DesiredState::Stopped, "{}", db.label);

        let mut capture = new_workspace("alice", None);
        capture.spec =
            sluice_store::spec::Spec::parse(json!({"source": {"kind": "capture", "sessionId": "cs_1"}})).unwrap();
        capture.capture_token = Some(Secret::new("capture-token-value-123456".into()));
        let view = created(store.create_workspace(capture).await.unwrap());
        let (id, run_id) = (view.workspace.id.clone(), view.current_run.unwrap().id);
        // The first create's reconcile job, and the end's of the first.
        for lease in store.claim_jobs(&WorkerId::from("w"), "host-a", 5, 60_000).await.unwrap() {
            if lease.subject == id {
                store.record(&lease, &run_id, launched(&running_runtime(), None)).await.unwrap();
            }
            store.finish_job(&lease, None, None).await.unwrap();
        }
        store.end_broker_workspace(&id, TerminationReason::Idle).await.unwrap();
        store.end_broker_workspace(&id, TerminationReason::Released).await.unwrap();
        let drain = store.drain(&run_id).await.unwrap().unwrap();
        assert_eq!(
            drain.stop_requested.as_ref().map(|(by, _)| by.as_str()),
            Some("broker: idle"),
            "{}: the first end's intent stays",
            db.label
        );
        let state = store.load_reconcile_state(&id).await.unwrap().unwrap();
        assert_eq!(state.workspace.desired_state, DesiredState::Stopped, "{}", db.label);
        let due = store.claim_jobs(&WorkerId::from("w"), "host-a", 5, 60_000).await.unwrap();
        assert!(due.iter().any(|l| l.subject == id), "{}: a reconcile is due", db.label);
    }
}

/// Which of two hosts' workers can claim the workspace's job now (each
/// claim handed straight back, due again).
async fn claimable_by(store: &Store, id: &WorkspaceId) -> Vec<&'static str> {
    let mut by = Vec::new();
    for host in ["host-a", "host-b"] {
        store.enqueue_job(JobKind::Reconcile, id, 0).await.unwrap();
        let leases = store.claim_jobs(&WorkerId::from(format!("probe-{host}")), host, 50, 60_000).await.unwrap();
        for lease in leases {
            if lease.subject == id.as_str() {
                by.push(host);
            }
            store.finish_job(&lease, Some(0), None).await.unwrap();
        }
    }
    by
}

/// The job a host's worker holds for the workspace (claimed now).
async fn hold(store: &Store, host: &str, id: &WorkspaceId) -> Lease {
    store.enqueue_job(JobKind::Reconcile, id, 0).await.unwrap();
    let leases = store.claim_jobs(&WorkerId::from(format!("w-{host}")), host, 50, 60_000).await.unwrap();
    let mut held = None;
    for lease in leases {
        if lease.subject == id.as_str() {
            held = Some(lease);
        } else {
            store.finish_job(&lease, Some(0), None).await.unwrap();
        }
    }
    held.unwrap_or_else(|| panic!("{host} could not claim {id}'s job"))
}

/// The store claims a workspace's job by the domain's rule
/// (`reconcile::job_host`), written in SQL: held to it through the states
/// that move it (placed, restarted with the old executor still there, the
/// old one retained, the new one's executor removed).
#[tokio::test]
async fn jobs_are_claimed_by_the_host_the_domain_names() {
    for db in databases().await {
        let store = open(&db).await;
        store.beat(&member("a1", "host-a", 10), 60_000).await.unwrap();
        store.beat(&member("b1", "host-b", 10), 60_000).await.unwrap();
        let view = created(store.create_workspace(new_workspace("alice", None)).await.unwrap());
        let id = view.workspace.id.clone();
        let first = view.current_run.unwrap().id;
        let agree = |stage: &'static str| {
            let (store, id, label) = (&store, &id, db.label);
            async move {
                let state = store.load_reconcile_state(id).await.unwrap().unwrap();
                let named = sluice_domain::reconcile::job_host(&state).map(str::to_owned);
                let by = claimable_by(store, id).await;
                let expected: Vec<&str> = match &named {
                    None => vec!["host-a", "host-b"],
                    Some(host) => vec![host.as_str()],
                };
                assert_eq!(by, expected, "{label}, {stage}: the domain names {named:?}");
                named
            }
        };
        assert_eq!(agree("not placed").await, None);

        let lease = hold(&store, "host-a", &id).await;
        store.place_run(&lease, &first, "host-a").await.unwrap();
        store.record(&lease, &first, launched(&running_runtime(), None)).await.unwrap();
        store.record(&lease, &first, Outcome::Ready).await.unwrap();
        store.finish_job(&lease, Some(0), None).await.unwrap();
        assert_eq!(agree("running on host-a").await.as_deref(), Some("host-a"));

        // A restart queues a new run while the old executor is still there.
        store.request(&OwnerId::from("alice"), &id, Request::Restart).await.unwrap();
        let second = store.load_reconcile_state(&id).await.unwrap().unwrap().current_run.unwrap().id;
        assert_ne!(second, first, "{}", db.label);
        assert_eq!(agree("restarted, the old executor still there").await.as_deref(), Some("host-a"));

        // Retained, the old executor no longer holds the job: the new run,
        // once placed on host-b, does.
        let lease = hold(&store, "host-a", &id).await;
        let retained = Outcome::Retained { reason: "kept".into(), recoverable: true, first_attempt_at: 0 };
        store.record(&lease, &first, retained).await.unwrap();
        store.finish_job(&lease, Some(0), None).await.unwrap();
        assert_eq!(agree("the old one retained, the new one not placed").await, None);
        let lease = hold(&store, "host-b", &id).await;
        store.place_run(&lease, &second, "host-b").await.unwrap();
        store.record(&lease, &second, launched(&running_runtime(), None)).await.unwrap();
        store.finish_job(&lease, Some(0), None).await.unwrap();
        assert_eq!(agree("the new one running on host-b").await.as_deref(), Some("host-b"));

        // Its executor removed, any host's worker takes the job.
        let lease = hold(&store, "host-b", &id).await;
        store.record(&lease, &second, Outcome::Removed).await.unwrap();
        store.finish_job(&lease, Some(0), None).await.unwrap();
        assert_eq!(agree("the new one's executor removed").await, None);
    }
}

#[tokio::test]
async fn template_builds_go_to_builders_keep_their_output_and_an_unchanged_rebuild_is_a_hit() {
    use sluice_store::TemplateBuildState;
    use sluice_store::templates::{MAX_BUILD_LOG_BYTES, NewBuild};
    for db in databases().await {
        let store = open(&db).await;
        let new = |key: &str| NewBuild {
            template: "web".into(),
            dockerfile: "FROM x\n".into(),
            context: Some(vec![1, 2, 3]),
            build_key: key.into(),
            start_command: Some("serve".into()),
            ready_command: None,
        };
        let first = store.request_template_build(new("k1")).await.unwrap();
        assert_eq!((first.state, first.cache_hit), (TemplateBuildState::Queued, false), "{}", db.label);
        assert!(!store.can_build().await.unwrap());

        // A worker that cannot build never claims the build; one that can does.
        store.beat(&member("plain", "host-a", 5), 60_000).await.unwrap();
        let plain = store.claim_jobs(&WorkerId::from("plain"), "host-a", 10, 60_000).await.unwrap();
        assert!(plain.iter().all(|l| l.kind != JobKind::Build), "{}", db.label);
        let builder = sluice_store::fleet::WorkerMember { builder: Some("docker".into()), ..member("b", "host-a", 5) };
        store.beat(&builder, 60_000).await.unwrap();
        assert!(store.can_build().await.unwrap());
        let claimed = store.claim_jobs(&WorkerId::from("b"), "host-a", 10, 60_000).await.unwrap();
        let lease = claimed.into_iter().find(|l| l.kind == JobKind::Build).expect("the builder claims the build");
        assert_eq!(lease.subject, first.id.as_str());

        let work = store.start_template_build(&lease, "docker", "host-a").await.unwrap().expect("it starts");
        assert_eq!((work.build.state, work.context.as_deref()), (TemplateBuildState::Building, Some(&[1u8, 2, 3][..])));
        // Output is kept in order, up to its bound, then one line says so.
        let big = "x".repeat(MAX_BUILD_LOG_BYTES as usize / 2 + 1);
        store.append_build_log(&lease, &["step 1\n".into(), big.clone(), big.clone(), big]).await.unwrap();
        let lines = store.build_log_after(&first.id, 0, 100).await.unwrap();
        assert_eq!(lines.len(), 3, "{}", db.label);
        assert_eq!(lines[0], (1, "step 1\n".to_owned()));
        assert!(lines[2].1.contains("is not kept"), "{}", db.label);
        assert_eq!(store.build_log_after(&first.id, 2, 100).await.unwrap().len(), 1);

        // A lease taken over fences the old holder's writes.
        let stale = Lease { generation: lease.generation - 1, ..lease.clone() };
        assert!(matches!(
            store.finish_template_build(&stale, Ok(("sha256:aa".into(), 7))).await,
            Err(StoreError::Fenced { .. })
        ));
        store.finish_template_build(&lease, Ok(("sha256:aa".into(), 7))).await.unwrap();
        let done = store.template_build(&first.id).await.unwrap().unwrap();
        assert_eq!(
            (done.state, done.digest.as_deref(), done.size_bytes),
            (TemplateBuildState::Succeeded, Some("sha256:aa"), Some(7))
        );
        assert!(done.started_at.is_some() && done.finished_at.is_some());

        // The same key again: succeeded at once with the same image, no job.
        assert!(store.template_build_hit("web", "k1").await.unwrap());
        assert!(!store.template_build_hit("web", "k2").await.unwrap());
        let hit = store.request_template_build(new("k1")).await.unwrap();
        assert_eq!(
            (hit.state, hit.cache_hit, hit.digest.as_deref()),
            (TemplateBuildState::Succeeded, true, Some("sha256:aa"))
        );
        let jobs = store.claim_jobs(&WorkerId::from("b"), "host-a", 10, 60_000).await.unwrap();
        assert!(jobs.iter().all(|l| l.kind != JobKind::Build), "{}", db.label);
        let current = store.current_template_build("web").await.unwrap().unwrap();
        assert_eq!(current.id, hit.id);
        // Another key builds again; a failure is kept with its reason and
        // never becomes the template's current build.
        let other = store.request_template_build(new("k2")).await.unwrap();
        let claimed = store.claim_jobs(&WorkerId::from("b"), "host-a", 10, 60_000).await.unwrap();
        let lease = claimed.into_iter().find(|l| l.subject == other.id.as_str()).unwrap();
        store.start_template_build(&lease, "docker", "host-a").await.unwrap().unwrap();
        store.finish_template_build(&lease, Err("step 2 exited 7".into())).await.unwrap();
        let failed = store.template_build(&other.id).await.unwrap().unwrap();
        assert_eq!((failed.state, failed.error.as_deref()), (TemplateBuildState::Failed, Some("step 2 exited 7")));
        assert_eq!(store.current_template_build("web").await.unwrap().unwrap().id, hit.id);
        let template = store.template("web", 10).await.unwrap().unwrap();
        assert_eq!(template.builds.len(), 3);
        assert_eq!(template.current().map(|b| &b.id), Some(&hit.id));
        assert!(store.template("nothing", 10).await.unwrap().is_none());
        // Each end is on the global feed.
        let built = eventually("the builds' ends in the feed", || async {
            let fed = store.feed_after(Default::default(), 100).await.unwrap();
            let built = fed.iter().filter(|f| f.item.type_name() == "sluice.template.built").count();
            (built == 3).then_some(built)
        });
        assert_eq!(built.await, 3, "{}", db.label);
    }
}
