//! The capture engine: claims the session, restores its head on a fresh
//! disk, snaps the worktree on an interval and after exec runs, ships what
//! changed to the registrar, and answers flush, status and re-plan.
//!
//! One task owns the engine and does one thing at a time; status reads come
//! from a shared account it keeps current, so a status never waits on a
//! snap. Nothing is dropped: a capture that cannot ship stays queued and is
//! tried again; a capture whose files changed under it, or that the
//! registrar refused for missing objects, is rebuilt from disk.

pub mod changes;
pub mod materialize;
pub mod registrar;
pub mod snap;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{Read, Seek};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_protocol::Origin;
use sluice_protocol::capture::{
    CaptureClass, CaptureStatus, ChangesFrom, ClassSnaps, FlushKind, FlushRequest, IncompleteReason, Overdue, Replanned,
};
use sluice_protocol::registrar::{self as wire, Manifest, Plan, refusal};
use tokio::sync::{mpsc, oneshot};

use self::registrar::{RegistrarClient, RegistrarError};
use self::snap::{ObjectRef, SeenFiles, SnapConfig, SnapError, SnapKind, Snapped};
use crate::processes::Processes;
use crate::workload::FsWorker;

/// Bytes per upload request.
const UPLOAD_BATCH_BYTES: usize = 8 << 20;
/// How many upload batches are sent at once.
const UPLOADS_IN_FLIGHT: usize = 2;
/// How long a snap or a ship may run before it shows as overdue.
const STEP_BOUND: Duration = Duration::from_secs(120);
/// The longest pause between attempts to ship a pending capture: a freed
/// disk or a store that is back is noticed within it.
const MAX_RETRY: Duration = Duration::from_secs(5);
/// How often the same shipping failure is logged again while it lasts.
const SHIP_ERROR_LOG_EVERY: Duration = Duration::from_secs(60);
/// How soon a shipping failure with another cause is logged (two causes
/// taking turns must not fill the log either).
const SHIP_ERROR_LOG_CHANGED: Duration = Duration::from_secs(5);
/// How many unreadable paths a status names.
const NAMED_UNREADABLE: usize = 20;

/// What the engine starts with.
pub struct CaptureConfig {
    pub registrar_socket: PathBuf,
    pub token: String,
    pub snap: SnapConfig,
    /// How often automatic snaps may run: each walks the worktree if the
    /// kernel told of a change since (or cannot tell).
    pub interval: Duration,
    /// How often an automatic snap walks even when no change was told.
    pub sweep: Duration,
    /// The most directories watched for changes (0: walk every interval).
    pub watch_max_dirs: usize,
    /// Materialize the session's head into the worktree at boot (a fresh disk).
    pub restore: bool,
}

/// Makes origin stamps: `(epoch, headN)` in, the next stamp of this boot out.
pub type Stamper = Arc<dyn Fn(u64, Option<u64>) -> Origin + Send + Sync>;

#[derive(Debug, Default)]
struct ClassAccount {
    failed: u64,
    last_error: Option<String>,
    failing_since_ms: Option<u64>,
}

/// The engine's account, read by status answers.
#[derive(Debug, Default)]
struct Account {
    epoch: u64,
    worktree_id: String,
    head_n: Option<u64>,
    pending: u64,
    staged_bytes: u64,
    pending_bulk: u64,
    uploaded_objects: u64,
    uploaded_bytes: u64,
    registered: u64,
    fenced: bool,
    last_snap_ms: Option<u64>,
    refused: BTreeSet<CaptureClass>,
    complete: Option<bool>,
    incomplete_reason: Option<IncompleteReason>,
    unreadable: Vec<String>,
    unreadable_count: u64,
    carried: u64,
    not_kept: Vec<String>,
    not_kept_count: u64,
    register_refused: Option<String>,
    register_refused_n: Option<u64>,
    register_missing: Vec<String>,
    register_refusals: u64,
    repairing: bool,
    bulk_building: bool,
    snaps: BTreeMap<CaptureClass, ClassAccount>,
    /// The step running now: its name, when it started (Unix ms), its bound.
    step: Option<(String, u64, Duration)>,
    /// A final flush has begun: the daemon takes no new work.
    finalizing: bool,
    /// How worktree changes are learned (once the engine booted).
    changes: Option<changes::Changes>,
    /// Why shipping fails, and since when (Unix ms), while it does.
    ship_error: Option<(String, u64)>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

impl Account {
    fn status(&self, origin: Origin) -> CaptureStatus {
        let failing: Vec<(&CaptureClass, &ClassAccount)> =
            self.snaps.iter().filter(|(_, a)| a.last_error.is_some()).collect();
        let longest = failing.iter().min_by_key(|(_, a)| a.failing_since_ms.unwrap_or(u64::MAX));
        let now = now_ms();
        let overdue = self.step.as_ref().and_then(|(step, started, bound)| {
            let running = now.saturating_sub(*started);
            (running > bound.as_millis() as u64).then(|| Overdue {
                step: step.clone(),
                started_unix_ms: *started,
                running_ms: running,
                bound_ms: bound.as_millis() as u64,
            })
        });
        CaptureStatus {
            epoch: self.epoch,
            worktree_id: self.worktree_id.clone(),
            head_n: self.head_n,
            pending: self.pending,
            staged_bytes: self.staged_bytes,
            uploaded_objects: self.uploaded_objects,
            uploaded_bytes: self.uploaded_bytes,
            registered: self.registered,
            fenced: self.fenced,
            paused: false,
            last_snap_unix_ms: self.last_snap_ms,
            changes_from: self
                .changes
                .as_ref()
                .map(|c| if c.walking().is_some() { ChangesFrom::Walk } else { ChangesFrom::Kernel }),
            walk_reason: self.changes.as_ref().and_then(|c| c.walking()),
            refused: Some(self.refused.iter().copied().collect()),
            pending_bytes: Some(self.staged_bytes),
            pending_bulk: Some(self.pending_bulk),
            complete: Some(self.complete == Some(true)),
            incomplete_reason: if self.complete == Some(true) {
                None
            } else {
                Some(self.incomplete_reason.unwrap_or(IncompleteReason::NotFinal))
            },
            unreadable: Some(self.unreadable_count),
            carried: Some(self.carried),
            unreadable_paths: (!self.unreadable.is_empty()).then(|| self.unreadable.clone()),
            not_kept: Some(self.not_kept_count),
            not_kept_paths: (!self.not_kept.is_empty()).then(|| self.not_kept.clone()),
            register_refused: self.register_refused.clone(),
            register_refused_n: self.register_refused_n,
            register_missing: (!self.register_missing.is_empty()).then(|| self.register_missing.clone()),
            register_refusals: Some(self.register_refusals),
            repairing: Some(self.repairing),
            bulk_building: Some(self.bulk_building),
            snaps: Some(
                CaptureClass::ALL
                    .iter()
                    .map(|class| {
                        let a = self.snaps.get(class);
                        ClassSnaps {
                            class: *class,
                            snaps_failed: a.map_or(0, |a| a.failed),
                            last_snap_error: a.and_then(|a| a.last_error.clone()),
                            snap_failing_since_unix_ms: a.and_then(|a| a.failing_since_ms),
                        }
                    })
                    .collect(),
            ),
            last_snap_error: longest.and_then(|(_, a)| a.last_error.clone()),
            snap_failing_since_unix_ms: longest.and_then(|(_, a)| a.failing_since_ms),
            snaps_failed: Some(self.snaps.values().map(|a| a.failed).sum()),
            ship_error: self.ship_error.as_ref().map(|(e, _)| e.clone()),
            ship_failing_since_unix_ms: self.ship_error.as_ref().map(|(_, since)| *since),
            origin: Some(origin),
            overdue,
        }
    }
}

enum Command {
    /// Something may have changed (an exec run ended): snap soon.
    Nudge,
    Flush {
        request: FlushRequest,
        done: oneshot::Sender<()>,
    },
    Replan {
        done: oneshot::Sender<Result<Replanned, String>>,
    },
}

/// The daemon's handle on its capture engine.
#[derive(Clone)]
pub struct Capture {
    commands: mpsc::UnboundedSender<Command>,
    account: Arc<Mutex<Account>>,
    stamper: Stamper,
    /// Set once the session is claimed and its head restored.
    ready: Arc<AtomicBool>,
    /// The registrar, asked who holds the lease when a status is read: an
    /// executor learns it was fenced whether or not it has anything to ship.
    lease: RegistrarClient,
    /// When the lease was last asked about.
    lease_checked: Arc<Mutex<Option<std::time::Instant>>>,
}

/// A stream of status reads asks the registrar about the lease at most this often.
const LEASE_CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long a status read waits for that answer before it answers anyway.
const LEASE_CHECK_WITHIN: Duration = Duration::from_secs(2);

impl Capture {
    /// Starts the engine.
    pub fn start(config: CaptureConfig, fs: FsWorker, processes: Arc<Processes>, stamper: Stamper) -> Capture {
        let (commands, queue) = mpsc::unbounded_channel();
        let account = Arc::new(Mutex::new(Account::default()));
        let ready = Arc::new(AtomicBool::new(false));
        let lease = RegistrarClient::new(config.registrar_socket.clone(), config.token.clone());
        let engine = Engine {
            client: lease.clone(),
            fs,
            processes,
            stamper: stamper.clone(),
            account: account.clone(),
            ready: ready.clone(),
            config,
            epoch: 0,
            head_n: 0,
            registered: Arc::new(BTreeMap::new()),
            seen: Some(SeenFiles::default()),
            known: HashSet::new(),
            staged: None,
            sealed_n: None,
            final_pending: false,
            ship_error_logged: None,
        };
        tokio::spawn(engine.run(queue));
        Capture { commands, account, stamper, ready, lease, lease_checked: Arc::default() }
    }

    /// Whether the session is claimed and the worktree restored.
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    /// Whether a final flush has begun (the daemon takes no new work).
    pub fn finalizing(&self) -> bool {
        self.account.lock().unwrap().finalizing
    }

    pub fn status(&self) -> CaptureStatus {
        let account = self.account.lock().unwrap();
        let origin = (self.stamper)(account.epoch, account.head_n);
        account.status(origin)
    }

    /// The status, once the registrar was asked whether this executor
    /// still holds the session (at most every [`LEASE_CHECK_EVERY`]).
    pub async fn checked_status(&self) -> CaptureStatus {
        self.check_lease().await;
        self.status()
    }

    async fn check_lease(&self) {
        let (claimed, fenced) = {
            let account = self.account.lock().unwrap();
            (account.epoch > 0, account.fenced)
        };
        if fenced || !claimed {
            return;
        }
        {
            let mut last = self.lease_checked.lock().unwrap();
            if last.is_some_and(|at| at.elapsed() < LEASE_CHECK_EVERY) {
                return;
            }
            *last = Some(std::time::Instant::now());
        }
        let superseded = match tokio::time::timeout(LEASE_CHECK_WITHIN, self.lease.lease()).await {
            Ok(Ok(lease)) => !lease.held,
            Ok(Err(RegistrarError::Refused(r))) => r.code == refusal::FENCED,
            // Unreachable for now: the next ship or check will tell.
            _ => false,
        };
        if superseded {
            self.account.lock().unwrap().fenced = true;
            log_line!("sluiced: fenced: a newer executor claimed the capture session");
        }
    }

    pub fn nudge(&self) {
        let _ = self.commands.send(Command::Nudge);
    }

    /// Flushes; answers once done or at the deadline, whichever is first
    /// (a final past its deadline keeps going in the engine).
    pub async fn flush(&self, request: FlushRequest, deadline: Duration) -> CaptureStatus {
        let kind = request.kind;
        if kind == FlushKind::Final {
            // Refuses new work from this moment, before the engine gets to it.
            self.account.lock().unwrap().finalizing = true;
        }
        let (done, finished) = oneshot::channel();
        let _ = self.commands.send(Command::Flush { request, done });
        let in_time = tokio::time::timeout(deadline, finished).await.is_ok();
        let mut status = self.status();
        if !in_time && kind == FlushKind::Final && status.complete != Some(true) {
            status.incomplete_reason = Some(IncompleteReason::Deadline);
        }
        status
    }

    pub async fn replan(&self) -> Result<Replanned, String> {
        let (done, answer) = oneshot::channel();
        self.commands.send(Command::Replan { done }).map_err(|_| "the capture engine stopped".to_owned())?;
        answer.await.map_err(|_| "the capture engine stopped".to_owned())?
    }
}

/// A capture staged on the executor and not yet registered.
struct Staged {
    /// The classes that changed, with their full manifests.
    manifests: BTreeMap<CaptureClass, Manifest>,
    objects: Vec<ObjectRef>,
}

/// Why shipping stopped.
/// Why an upload stopped short.
enum UploadStop {
    /// The session's quota refused it: nothing of the batch was stored.
    Quota,
    Outcome(ShipOutcome),
}

/// One upload batch on its way to the registrar.
type Sending = tokio::task::JoinHandle<Result<(), RegistrarError>>;

/// What became of a staged capture.
enum Shipped {
    /// Registered: these classes are the head now.
    Registered(Vec<CaptureClass>),
    /// Given up (every class past the quota).
    Done(ShipOutcome),
    /// Kept, to ship again.
    Kept(ShipOutcome),
}

enum ShipOutcome {
    /// Everything staged is registered.
    Done,
    /// The registrar or the store is unavailable: try again later.
    Pending,
    /// A newer executor claimed the session.
    Fenced,
    /// Files changed under the staged capture: snap again.
    Stale,
}

struct Engine {
    client: RegistrarClient,
    fs: FsWorker,
    processes: Arc<Processes>,
    stamper: Stamper,
    account: Arc<Mutex<Account>>,
    ready: Arc<AtomicBool>,
    config: CaptureConfig,
    epoch: u64,
    head_n: u64,
    /// The head's manifests as last registered (or planned).
    registered: Arc<BTreeMap<CaptureClass, Manifest>>,
    /// What snaps read (`None` while a snap has it).
    seen: Option<SeenFiles>,
    /// Objects the store is known to hold.
    known: HashSet<String>,
    staged: Option<Staged>,
    /// The capture this executor sealed.
    sealed_n: Option<u64>,
    /// A FINAL flush stopped the workload and snapped, and its capture
    /// waits to ship or seal: every retry carries it on to the seal.
    final_pending: bool,
    /// The shipping failure last logged, and when.
    ship_error_logged: Option<(String, std::time::Instant)>,
}

impl Engine {
    fn with_account<T>(&self, f: impl FnOnce(&mut Account) -> T) -> T {
        f(&mut self.account.lock().unwrap())
    }

    fn step(&self, name: Option<&str>) {
        self.with_account(|a| a.step = name.map(|n| (n.to_owned(), now_ms(), STEP_BOUND)));
    }

    async fn run(mut self, mut queue: mpsc::UnboundedReceiver<Command>) {
        self.boot().await;
        let changes = self.hear_changes().await;
        let mut next_sweep = tokio::time::Instant::now() + self.config.sweep;
        let mut retry = Duration::from_secs(1);
        let mut next_snap = tokio::time::Instant::now() + self.config.interval;
        let mut next_retry: Option<tokio::time::Instant> = None;
        loop {
            // With nothing told changed, the engine sleeps until the sweep
            // (an idle executor's daemon does not wake each interval); a
            // change brings the next timed snap, no sooner than an interval
            // after the last.
            let pending = changes.pending();
            let timed = if pending { next_snap } else { next_sweep.max(next_snap) };
            let wake = next_retry.map_or(timed, |r| r.min(timed));
            let command = tokio::select! {
                command = queue.recv() => match command {
                    Some(c) => Some(c),
                    None => return,
                },
                _ = changes.raised(), if !pending => continue,
                _ = tokio::time::sleep_until(wake) => None,
            };
            let shipped = match command {
                Some(Command::Flush { request, done }) => {
                    let outcome = self.flush(&request).await;
                    let _ = done.send(());
                    outcome
                }
                // A FINAL whose capture waits goes on from where it stopped.
                None if self.final_pending => self.finish_final().await,
                Some(Command::Replan { done }) => {
                    let _ = done.send(self.replan().await);
                    continue;
                }
                Some(Command::Nudge) | None => {
                    let now = tokio::time::Instant::now();
                    let nudged = matches!(command, Some(Command::Nudge));
                    if now >= next_snap || nudged {
                        next_snap = now + self.config.interval;
                        // A timed snap walks only what the kernel said
                        // changed, or on the sweep (`|`: the flag is taken
                        // whenever a walk comes).
                        let walk = changes.take() | nudged | (now >= next_sweep);
                        if self.account.lock().unwrap().finalizing || !walk {
                            self.ship().await
                        } else {
                            next_sweep = now + self.config.sweep;
                            self.snap_and_ship(SnapKind::Automatic).await
                        }
                    } else {
                        self.ship().await
                    }
                }
            };
            next_retry = match shipped {
                ShipOutcome::Pending => {
                    let at = tokio::time::Instant::now() + retry;
                    retry = (retry * 2).min(MAX_RETRY);
                    Some(at)
                }
                _ => {
                    retry = Duration::from_secs(1);
                    None
                }
            };
        }
    }

    /// Starts hearing of worktree changes from the kernel, or says why the
    /// worktree is walked every interval instead.
    async fn hear_changes(&self) -> changes::Changes {
        let (root, max_dirs) = (self.config.snap.worktree.clone(), self.config.watch_max_dirs);
        let changes = match max_dirs {
            0 => changes::Changes::walk("watching the worktree is turned off"),
            _ => tokio::task::spawn_blocking(move || changes::Changes::watch(&root, max_dirs))
                .await
                .unwrap_or_else(|e| changes::Changes::walk(format!("watching the worktree failed: {e}"))),
        };
        if let Some(reason) = changes.walking() {
            log_line!("sluiced: the worktree is walked every capture interval: {reason}");
        }
        self.with_account(|a| a.changes = Some(changes.clone()));
        changes
    }

    /// Claims the session (retrying until the registrar answers) and, on a
    /// fresh disk, restores its head.
    async fn boot(&mut self) {
        let mut pause = Duration::from_millis(200);
        let plan = loop {
            match self.client.claim().await {
                Ok(plan) => break plan,
                Err(e) => {
                    log_line!("sluiced: cannot claim the capture session yet: {e}");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            }
        };
        if self.config.restore {
            self.step(Some("restore"));
            loop {
                match materialize::materialize(&self.client, &self.fs, &self.config.snap, &plan).await {
                    Ok(done) => {
                        log_line!(
                            "sluiced: restored capture {:?}: {} files, {} bytes",
                            plan.head_n,
                            done.files_written,
                            done.bytes_written
                        );
                        break;
                    }
                    Err(e) => {
                        log_line!("sluiced: restoring the session's head failed, trying again: {e}");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
            self.step(None);
        }
        self.adopt(&plan);
        self.ready.store(true, Ordering::SeqCst);
    }

    /// Takes a plan as the one in force.
    fn adopt(&mut self, plan: &Plan) {
        self.epoch = plan.epoch;
        self.head_n = plan.head_n.unwrap_or(0);
        self.registered = Arc::new(materialize::plan_manifests(plan));
        for manifest in self.registered.values() {
            self.known.extend(manifest.object_keys().into_iter().map(str::to_owned));
        }
        self.staged = None;
        self.with_account(|a| {
            a.epoch = plan.epoch;
            a.worktree_id = plan.worktree_id.clone();
            a.head_n = plan.head_n;
            a.fenced = false;
            a.refused.clear();
            a.pending = 0;
            a.staged_bytes = 0;
            a.pending_bulk = 0;
        });
    }

    async fn snap(&mut self, kind: SnapKind) -> Result<Snapped, SnapError> {
        self.step(Some(if kind == SnapKind::Final { "final snap" } else { "snap" }));
        self.with_account(|a| a.bulk_building = true);
        let (config, previous) = (self.config.snap.clone(), Arc::clone(&self.registered));
        let mut seen = self.seen.take().unwrap_or_default();
        let result = match self
            .fs
            .run(move || {
                let result = snap::snap_changes(&config, kind, &previous, &mut seen);
                (result, seen)
            })
            .await
        {
            Ok((result, seen)) => {
                self.seen = Some(seen);
                result
            }
            Err(e) => Err(SnapError::Root(e)),
        };
        self.step(None);
        let now = now_ms();
        self.with_account(|a| {
            a.bulk_building = false;
            a.last_snap_ms = Some(now);
            let unreadable = match &result {
                Ok(s) => Some(s),
                Err(SnapError::Unreadable(_, s)) => Some(&**s),
                Err(SnapError::Root(_)) => None,
            };
            if let Some(s) = unreadable {
                a.unreadable_count = s.unreadable.len() as u64;
                a.carried = s.carried;
                a.unreadable = s.unreadable.iter().take(NAMED_UNREADABLE).map(|(_, p)| p.clone()).collect();
                a.not_kept_count = s.not_kept.len() as u64;
                a.not_kept = s.not_kept.iter().take(NAMED_UNREADABLE).cloned().collect();
            }
            for class in CaptureClass::ALL {
                let account = a.snaps.entry(class).or_default();
                match &result {
                    Ok(_) => {
                        account.last_error = None;
                        account.failing_since_ms = None;
                    }
                    Err(e) => {
                        account.failed += 1;
                        account.last_error = Some(e.to_string());
                        account.failing_since_ms.get_or_insert(now);
                    }
                }
            }
        });
        result
    }

    /// Stages what changed since the last registered (or staged) capture.
    fn stage(&mut self, mut snapped: Snapped) {
        if snapped.unchanged {
            // The tree is the head as registered: nothing to stage, unless
            // a staged capture waits, which the head replaces.
            if self.staged.is_none() {
                return;
            }
            snapped.manifests = (*self.registered).clone();
        }
        let refused = self.account.lock().unwrap().refused.clone();
        let staged = self.staged.as_ref();
        let base =
            |class: &CaptureClass| staged.and_then(|s| s.manifests.get(class)).or_else(|| self.registered.get(class));
        let (changed, same): (BTreeMap<CaptureClass, Manifest>, Vec<Manifest>) = {
            let mut changed = BTreeMap::new();
            let mut same = Vec::new();
            for (class, manifest) in snapped.manifests {
                if !refused.contains(&class) && base(&class) != Some(&manifest) {
                    changed.insert(class, manifest);
                } else {
                    same.push(manifest);
                }
            }
            (changed, same)
        };
        self.fs.drop_later(same);
        if changed.is_empty() {
            return;
        }
        let staged = self.staged.get_or_insert(Staged { manifests: BTreeMap::new(), objects: Vec::new() });
        staged.manifests.extend(changed);
        let mut keys: HashSet<String> = staged.objects.iter().map(|o| o.key.clone()).collect();
        for object in snapped.objects {
            if !self.known.contains(&object.key) && keys.insert(object.key.clone()) {
                staged.objects.push(object);
            }
        }
        let bytes: u64 = staged.objects.iter().map(|o| u64::from(o.len)).sum();
        let bulk = u64::from(staged.manifests.contains_key(&CaptureClass::Bulk));
        self.with_account(|a| {
            a.pending = 1;
            a.staged_bytes = bytes;
            a.pending_bulk = bulk;
        });
    }

    async fn snap_and_ship(&mut self, kind: SnapKind) -> ShipOutcome {
        for _ in 0..3 {
            match self.snap(kind).await {
                Ok(snapped) => self.stage(snapped),
                Err(e) => {
                    log_line!("sluiced: snap failed: {e}");
                    return self.ship().await;
                }
            }
            match self.ship().await {
                ShipOutcome::Stale => {
                    // Files changed under the staged capture: rebuilt from disk.
                    self.staged = None;
                    self.seen = Some(SeenFiles::default());
                    continue;
                }
                other => return other,
            }
        }
        ShipOutcome::Pending
    }

    /// Ships the staged capture: uploads what the store lacks, registers it.
    async fn ship(&mut self) -> ShipOutcome {
        if self.account.lock().unwrap().fenced {
            return ShipOutcome::Fenced;
        }
        // Taken out while it ships (not copied: a large tree's manifests
        // are the engine's largest memory), and put back unless it is done.
        let Some(staged) = self.staged.take() else { return ShipOutcome::Done };
        self.step(Some("ship"));
        let shipped = self.ship_staged(&staged.objects, &staged.manifests).await;
        self.step(None);
        match shipped {
            Shipped::Registered(adopted) => {
                let Staged { mut manifests, objects } = staged;
                self.fs.drop_later(objects);
                // The registered classes become the head: moved, not copied.
                let head = Arc::make_mut(&mut self.registered);
                for class in adopted {
                    if let Some(old) = manifests.remove(&class).and_then(|manifest| head.insert(class, manifest)) {
                        self.fs.drop_later(old);
                    }
                }
                self.fs.drop_later(manifests);
                ShipOutcome::Done
            }
            Shipped::Done(outcome) => {
                self.fs.drop_later(staged);
                outcome
            }
            Shipped::Kept(outcome) => {
                self.staged = Some(staged);
                outcome
            }
        }
    }

    /// Uploads and registers a staged capture.
    async fn ship_staged(&mut self, objects: &[ObjectRef], manifests: &BTreeMap<CaptureClass, Manifest>) -> Shipped {
        loop {
            let unknown: Vec<&ObjectRef> = objects.iter().filter(|o| !self.known.contains(&o.key)).collect();
            let mut missing: HashSet<String> = HashSet::new();
            for batch in unknown.chunks(wire::MAX_MISSING_BATCH) {
                let keys = batch.iter().map(|o| o.key.clone()).collect();
                match self.client.missing(self.epoch, keys).await {
                    Ok(m) => missing.extend(m),
                    Err(e) => return Shipped::Kept(self.refused_or_pending(e)),
                }
            }
            for o in &unknown {
                if !missing.contains(&o.key) {
                    self.known.insert(o.key.clone());
                }
            }
            let to_upload: Vec<&ObjectRef> = unknown.into_iter().filter(|o| missing.contains(&o.key)).collect();
            // The small class's objects first: past the quota, a class whose
            // objects were all stored is still registered.
            let small = manifests.get(&CaptureClass::Small).map(Manifest::object_keys).unwrap_or_default();
            let (first, rest): (Vec<&ObjectRef>, Vec<&ObjectRef>) =
                to_upload.into_iter().partition(|o| small.contains(o.key.as_str()));
            let mut past_quota: BTreeSet<CaptureClass> = BTreeSet::new();
            // A bulk class that shares an object with a refused small one
            // cannot be registered without it.
            let bulk = manifests.get(&CaptureClass::Bulk).map(Manifest::object_keys).unwrap_or_default();
            let shared = first.iter().any(|o| bulk.contains(o.key.as_str()));
            for (class, part) in [(CaptureClass::Small, first), (CaptureClass::Bulk, rest)] {
                if class == CaptureClass::Bulk && shared && past_quota.contains(&CaptureClass::Small) {
                    past_quota.insert(class);
                    continue;
                }
                match self.upload(part).await {
                    None => {}
                    Some(UploadStop::Quota) => {
                        past_quota.insert(class);
                    }
                    Some(UploadStop::Outcome(outcome)) => return Shipped::Kept(outcome),
                }
            }
            let classes: BTreeMap<CaptureClass, &Manifest> =
                manifests.iter().filter(|(c, _)| !past_quota.contains(c)).map(|(c, m)| (*c, m)).collect();
            if classes.is_empty() {
                for class in &past_quota {
                    log_line!("sluiced: the registrar refused the {} class: the session's quota", class.as_str());
                }
                self.with_account(|a| {
                    a.refused = past_quota;
                    a.pending = 0;
                    a.staged_bytes = 0;
                    a.pending_bulk = 0;
                });
                return Shipped::Done(ShipOutcome::Done);
            }
            let request = wire::RegisterRequest {
                epoch: self.epoch,
                n: self.head_n + 1,
                classes,
                origin: (self.stamper)(self.epoch, Some(self.head_n)),
            };
            match self.client.register(&request).await {
                Ok(registered) => {
                    let mut refused: BTreeSet<CaptureClass> = registered.refused.iter().copied().collect();
                    refused.extend(past_quota);
                    for class in &refused {
                        log_line!("sluiced: the registrar refused the {} class: the session's quota", class.as_str());
                    }
                    let adopted: Vec<CaptureClass> = match registered.n {
                        Some(_) => request.classes.keys().filter(|c| !refused.contains(c)).copied().collect(),
                        None => Vec::new(),
                    };
                    if let Some(n) = registered.n {
                        self.head_n = n;
                    }
                    let head = registered.n;
                    self.with_account(|a| {
                        a.refused = refused;
                        if head.is_some() {
                            a.head_n = head;
                            a.registered += 1;
                        }
                        a.pending = 0;
                        a.staged_bytes = 0;
                        a.pending_bulk = 0;
                        a.repairing = false;
                        a.register_refused = None;
                        a.register_refused_n = None;
                        a.register_missing.clear();
                    });
                    self.ship_succeeded();
                    return Shipped::Registered(adopted);
                }
                Err(RegistrarError::Refused(r)) if r.code == refusal::MISSING_OBJECTS => {
                    // Upload again what the store lost, then register again.
                    for key in &r.missing {
                        self.known.remove(key);
                    }
                    let n = request.n;
                    self.with_account(|a| {
                        a.register_refused = Some(refusal::MISSING_OBJECTS.into());
                        a.register_refused_n = Some(n);
                        a.register_missing = r.missing.clone();
                        a.register_refusals += 1;
                        a.repairing = true;
                    });
                    if !objects.iter().any(|o| r.missing.contains(&o.key)) {
                        // It names objects this capture did not stage: rebuild from disk.
                        for manifest in self.registered.values() {
                            for key in manifest.object_keys() {
                                if r.missing.iter().any(|m| m == key) {
                                    self.known.remove(key);
                                }
                            }
                        }
                        return Shipped::Kept(ShipOutcome::Stale);
                    }
                }
                Err(RegistrarError::Refused(r)) if r.code == refusal::CONFLICT => match self.client.plan().await {
                    Ok(plan) if plan.epoch == self.epoch => self.head_n = plan.head_n.unwrap_or(0),
                    Ok(_) => return Shipped::Kept(self.fenced()),
                    Err(e) => return Shipped::Kept(self.refused_or_pending(e)),
                },
                Err(e) => return Shipped::Kept(self.refused_or_pending(e)),
            }
        }
    }

    fn fenced(&mut self) -> ShipOutcome {
        self.with_account(|a| a.fenced = true);
        log_line!("sluiced: fenced: a newer executor claimed the capture session");
        ShipOutcome::Fenced
    }

    fn refused_or_pending(&mut self, e: RegistrarError) -> ShipOutcome {
        match e.code() {
            Some(refusal::FENCED) => self.fenced(),
            _ => {
                self.ship_failed(e.cause());
                ShipOutcome::Pending
            }
        }
    }

    /// Notes why shipping waits: in the status at once, in the log when
    /// the cause changes and once a minute while it lasts (a disk that
    /// stays full must not fill the log, which is on it too).
    fn ship_failed(&mut self, cause: String) {
        let again = match &self.ship_error_logged {
            Some((logged, at)) => {
                let since = at.elapsed();
                since >= SHIP_ERROR_LOG_EVERY || (*logged != cause && since >= SHIP_ERROR_LOG_CHANGED)
            }
            None => true,
        };
        if again {
            log_line!("sluiced: shipping waits, and is tried again: {cause}");
            self.ship_error_logged = Some((cause.clone(), std::time::Instant::now()));
        }
        let now = now_ms();
        self.with_account(|a| {
            let since = a.ship_error.as_ref().map_or(now, |(_, since)| *since);
            a.ship_error = Some((cause, since));
        });
    }

    fn ship_succeeded(&mut self) {
        if self.ship_error_logged.take().is_some() {
            log_line!("sluiced: shipping goes on");
        }
        self.with_account(|a| a.ship_error = None);
    }

    /// Reads each object from disk (checking it still hashes to its key)
    /// and uploads them in batches. `None` when all are stored.
    async fn upload(&mut self, objects: Vec<&ObjectRef>) -> Option<UploadStop> {
        // Batches of at most UPLOAD_BATCH_BYTES (each copied when it is
        // read); the next is read from disk while the one before it is sent.
        let mut batches: Vec<Vec<&ObjectRef>> = Vec::new();
        let mut size = 0usize;
        for object in objects {
            if batches.is_empty() || size + object.len as usize > UPLOAD_BATCH_BYTES {
                batches.push(Vec::new());
                size = 0;
            }
            size += object.len as usize;
            batches.last_mut().expect("a batch").push(object);
        }
        let read = |batch: Vec<&ObjectRef>| {
            let fs = self.fs.clone();
            let batch: Vec<ObjectRef> = batch.into_iter().cloned().collect();
            tokio::spawn(async move { fs.run(move || read_frames(&batch).map(|frames| (frames, batch))).await })
        };
        let mut batches = batches.into_iter();
        let mut next = batches.next().map(read);
        // Sent while the next is read, up to UPLOADS_IN_FLIGHT at once (the
        // registrar checks and stores one while the next arrives); each
        // is accounted for in order.
        let mut sending: std::collections::VecDeque<(Sending, Vec<ObjectRef>)> = std::collections::VecDeque::new();
        let stop = |sending: &mut std::collections::VecDeque<(Sending, _)>,
                    next: Option<tokio::task::JoinHandle<_>>| {
            for (send, _) in sending.drain(..) {
                send.abort();
            }
            if let Some(next) = next {
                next.abort();
            }
        };
        loop {
            while sending.len() < UPLOADS_IN_FLIGHT {
                let Some(reading) = next.take() else { break };
                let (frames, batch) = match reading.await {
                    Ok(Ok(Ok(read))) => read,
                    _ => {
                        stop(&mut sending, None);
                        return Some(UploadStop::Outcome(ShipOutcome::Stale));
                    }
                };
                next = batches.next().map(read);
                let (client, epoch) = (self.client.clone(), self.epoch);
                let send = tokio::spawn(async move { client.upload(epoch, frames).await });
                sending.push_back((send, batch));
            }
            let Some((send, batch)) = sending.pop_front() else { break };
            let sent = send.await.unwrap_or_else(|e| Err(RegistrarError::Unavailable(e.to_string())));
            if let Err(e) = sent {
                stop(&mut sending, next.take());
                if e.code() == Some(refusal::QUOTA) {
                    return Some(UploadStop::Quota);
                }
                return Some(UploadStop::Outcome(self.refused_or_pending(e)));
            }
            let bytes: u64 = batch.iter().map(|o| u64::from(o.len)).sum();
            let count = batch.len() as u64;
            for o in &batch {
                self.known.insert(o.key.clone());
            }
            self.with_account(|a| {
                a.uploaded_objects += count;
                a.uploaded_bytes += bytes;
            });
        }
        None
    }

    async fn flush(&mut self, request: &FlushRequest) -> ShipOutcome {
        if request.kind == FlushKind::Suspend {
            let outcome = self.snap_and_ship(SnapKind::Automatic).await;
            self.with_account(|a| {
                if a.complete != Some(true) {
                    a.incomplete_reason = Some(IncompleteReason::NotFinal);
                }
            });
            return outcome;
        }
        if self.final_pending {
            // The workload is stopped and snapped already: ship what waits.
            return self.finish_final().await;
        }
        self.with_account(|a| {
            a.finalizing = true;
            a.incomplete_reason = Some(IncompleteReason::InProgress);
        });
        let grace = Duration::from_millis(request.grace_ms.unwrap_or(10_000));
        // Nothing of the workload may write after the snap: every process
        // it has ends first, or the flush is not complete.
        self.step(Some("stop the workload"));
        let survivors = self.processes.stop_all(grace).await;
        self.step(None);
        if survivors > 0 {
            return self.incomplete(IncompleteReason::ProcessesRemain);
        }
        match self.snap(SnapKind::Final).await {
            Ok(snapped) => self.stage(snapped),
            Err(e) => return self.snap_failed(e),
        }
        self.final_pending = true;
        self.finish_final().await
    }

    /// Ships the FINAL's capture and seals it. Called again (on the retry
    /// timer, or by another FINAL request) while it waits on the
    /// registrar or the store: the workload is stopped, so the staged
    /// capture still holds everything.
    async fn finish_final(&mut self) -> ShipOutcome {
        self.with_account(|a| a.incomplete_reason = Some(IncompleteReason::InProgress));
        let mut outcome = self.ship().await;
        if matches!(outcome, ShipOutcome::Stale) {
            self.staged = None;
            self.seen = Some(SeenFiles::default());
            outcome = match self.snap(SnapKind::Final).await {
                Ok(snapped) => {
                    self.stage(snapped);
                    self.ship().await
                }
                Err(e) => return self.snap_failed(e),
            };
        }
        match outcome {
            ShipOutcome::Done => {}
            ShipOutcome::Fenced => return self.incomplete(IncompleteReason::Fenced),
            ShipOutcome::Stale => return self.incomplete(IncompleteReason::ShipFailed),
            ShipOutcome::Pending => {
                self.incomplete(IncompleteReason::Pending);
                return outcome;
            }
        }
        if !self.account.lock().unwrap().refused.is_empty() {
            return self.incomplete(IncompleteReason::ShipFailed);
        }
        if self.sealed_n != Some(self.head_n) {
            let seal = wire::SealRequest {
                epoch: self.epoch,
                capture_n: self.head_n,
                origin: (self.stamper)(self.epoch, Some(self.head_n)),
            };
            match self.client.seal(&seal).await {
                Ok(_) => {
                    self.sealed_n = Some(self.head_n);
                    self.ship_succeeded();
                }
                Err(e) => {
                    let outcome = self.refused_or_pending(e);
                    let reason = match outcome {
                        ShipOutcome::Fenced => IncompleteReason::Fenced,
                        _ => IncompleteReason::Pending,
                    };
                    self.incomplete(reason);
                    return outcome;
                }
            }
        }
        self.final_pending = false;
        self.with_account(|a| {
            a.complete = Some(true);
            a.incomplete_reason = None;
        });
        ShipOutcome::Done
    }

    fn snap_failed(&mut self, e: SnapError) -> ShipOutcome {
        let reason = match e {
            SnapError::Unreadable(..) => IncompleteReason::Unreadable,
            SnapError::Root(_) => IncompleteReason::SnapshotFailed,
        };
        self.incomplete(reason)
    }

    fn incomplete(&mut self, reason: IncompleteReason) -> ShipOutcome {
        // Only waiting on the registrar or the store is tried again; any
        // other reason needs a new FINAL (or an operator).
        self.final_pending = self.final_pending && reason == IncompleteReason::Pending;
        self.with_account(|a| {
            a.complete = Some(false);
            a.incomplete_reason = Some(reason);
        });
        ShipOutcome::Done
    }

    async fn replan(&mut self) -> Result<Replanned, String> {
        let plan = self.client.plan().await.map_err(|e| e.to_string())?;
        let fenced = self.account.lock().unwrap().fenced;
        if plan.epoch == self.epoch && !fenced {
            let worktree_id = self.account.lock().unwrap().worktree_id.clone();
            return Ok(Replanned {
                worktree_id,
                epoch: self.epoch,
                head_n: plan.head_n,
                head_capture_id: plan.head_capture_id,
                unchanged: true,
                ..Replanned::default()
            });
        }
        let plan = self.client.claim().await.map_err(|e| e.to_string())?;
        self.step(Some("replan"));
        let done = materialize::materialize(&self.client, &self.fs, &self.config.snap, &plan).await;
        self.step(None);
        let done = done.map_err(|e| e.to_string())?;
        self.seen = Some(SeenFiles::default());
        self.adopt(&plan);
        Ok(done)
    }
}

/// Reads objects from disk as upload frames; fails when one no longer
/// hashes to its key (its file changed since the snap).
pub(crate) fn read_frames(objects: &[ObjectRef]) -> std::io::Result<Vec<u8>> {
    let mut frames = Vec::with_capacity(objects.iter().map(|o| 72 + o.len as usize).sum());
    let mut open: Option<(PathBuf, std::fs::File)> = None;
    for object in objects {
        if let Some(bytes) = &object.bytes {
            // Kept by the snap that hashed them: exactly what the manifest names.
            frames.extend_from_slice(&wire::frame_header(&object.key, bytes.len() as u64));
            frames.extend_from_slice(bytes);
            continue;
        }
        if open.as_ref().is_none_or(|(p, _)| *p != object.path) {
            open = Some((object.path.clone(), snap::open_nofollow(&object.path)?));
        }
        let (_, file) = open.as_mut().expect("opened");
        file.seek(std::io::SeekFrom::Start(object.offset))?;
        let mut bytes = vec![0u8; object.len as usize];
        file.read_exact(&mut bytes)?;
        if sluice_protocol::registrar::object_key(&bytes) != object.key {
            return Err(std::io::Error::other("the file changed since it was snapped"));
        }
        frames.extend_from_slice(&wire::frame_header(&object.key, bytes.len() as u64));
        frames.extend_from_slice(&bytes);
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin { epoch: 1, launch: "l".into(), boot_id: "b".into(), boot_generation: 1, observation: 1, head_n: None }
    }

    #[test]
    fn a_status_derives_the_longest_failing_class_and_an_overdue_step() {
        let mut account = Account::default();
        let quiet = account.status(origin());
        assert_eq!((quiet.complete, quiet.incomplete_reason), (Some(false), Some(IncompleteReason::NotFinal)));
        assert!(quiet.overdue.is_none() && quiet.last_snap_error.is_none());
        assert_eq!(quiet.snaps_failed, Some(0));

        account.snaps.insert(
            CaptureClass::Bulk,
            ClassAccount { failed: 3, last_error: Some("bulk broke".into()), failing_since_ms: Some(100) },
        );
        account.snaps.insert(
            CaptureClass::Small,
            ClassAccount { failed: 1, last_error: Some("small broke".into()), failing_since_ms: Some(500) },
        );
        account.step = Some(("small snap".into(), now_ms() - 10_000, Duration::from_secs(1)));
        let failing = account.status(origin());
        assert_eq!(failing.last_snap_error.as_deref(), Some("bulk broke"), "the class failing longest");
        assert_eq!((failing.snap_failing_since_unix_ms, failing.snaps_failed), (Some(100), Some(4)));
        let overdue = failing.overdue.expect("past its bound");
        assert_eq!((overdue.step.as_str(), overdue.bound_ms), ("small snap", 1000));
        assert!(overdue.running_ms >= 10_000);

        account.step = Some(("ship".into(), now_ms(), Duration::from_secs(60)));
        account.complete = Some(true);
        let done = account.status(origin());
        assert!(done.overdue.is_none(), "within its bound");
        assert_eq!((done.complete, done.incomplete_reason), (Some(true), None));
    }
}
