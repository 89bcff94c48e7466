//! sluiced, the daemon inside an executor. It reads its boot secret file,
//! starts the workspace's managed process, and serves the authenticated
//! control API: `health`, `status` and `exec`. Every status answer carries
//! the origin stamp that orders evidence about one executor without clocks
//! (launch, a boot id random per start, a boot generation counted on the
//! executor's own disk, an observation number growing within a boot).
//! Capture is not built yet.
//!
//! The boot secret is taken once: the daemon moves it into its own state
//! directory (which only it can read) and removes the delivered file, so a
//! daemon restart finds it there and nothing else ever does.

/// Writes a line to the daemon's log (its stderr). A log that cannot take
/// it (its disk is full) loses the line and the daemon goes on: `eprintln!`
/// would panic there, and with it the task that was logging.
macro_rules! log_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod background;
pub mod capture;
pub mod cli;
mod commands;
mod dir_entries;
mod egress;
pub mod exec;
pub mod managed;
pub mod pooled;
pub mod processes;
mod session_context;
mod sessions;
mod sftp;
mod snapshots;
mod watch;
pub mod workload;
mod worktree;
mod worktree_watch;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use sha2::{Digest, Sha256};
pub use sluice_protocol::Origin;
use sluice_protocol::{BootSecret, Refusal, RefusalCode, Status};

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("boot secret file: {0}")]
    BootSecret(String),
    #[error("state directory: {0}")]
    State(#[from] std::io::Error),
    /// An exec request that names no program.
    #[error("argv must name a program")]
    EmptyArgv,
    /// An exec request that asks to keep more output than allowed.
    #[error("outputLimitBytes must be at most {}", exec::MAX_OUTPUT_LIMIT)]
    OutputLimit,
    /// An exec request whose `stdinB64` is not base64.
    #[error("stdinB64 must be standard base64 with padding")]
    Stdin,
    /// A final flush stopped the workload; nothing of it starts again.
    #[error("a final flush ended this executor's work; it takes no new work")]
    Finalized,
}

struct Daemon {
    workload: Option<workload::WorkloadIds>,
    /// Every process of the workload: the gate they start through, and
    /// the stop that ends them all.
    processes: Arc<processes::Processes>,
    token_digest: [u8; 32],
    epoch: u64,
    launch: String,
    boot_id: String,
    boot_generation: u64,
    observations: AtomicU64,
    workdir: PathBuf,
    /// Where processes start by default, when not the worktree.
    default_cwd: Option<PathBuf>,
    managed: managed::Managed,
    capture: Option<capture::Capture>,
    /// Touches files for the control plane's snapshots, as the workload.
    files: workload::FsWorker,
    commands: Arc<commands::Commands>,
    /// Processes kept running for the control plane.
    background: Arc<background::Background>,
    /// Environment every exec and durable command starts with.
    exec_env: std::collections::BTreeMap<String, String>,
    /// Where the working directory is bound (kept on the executor's disk,
    /// so a relaunch on it applies them again).
    binds: std::sync::Mutex<sluice_protocol::capture::Binds>,
    state_dir: PathBuf,
    /// The working directory as the executor names it (a bind's `mountPath`).
    workdir_name: String,
    /// Snapshot scans whose objects the control plane may still pull.
    scans: snapshots::Scans,
    /// Files larger than this are in a snapshot's bulk class.
    bulk_threshold: u64,
    /// When a control call last used the executor (Unix ms).
    last_use: AtomicU64,
    /// Control calls under way and sessions open now.
    in_use: std::sync::atomic::AtomicU32,
}

/// The executor in use while held (a control call under way, an open
/// session); its start and its end each count as a use.
pub(crate) struct InUse(Arc<Daemon>);

impl InUse {
    fn begin(daemon: &Arc<Daemon>) -> InUse {
        daemon.in_use.fetch_add(1, Ordering::SeqCst);
        daemon.last_use.store(unix_ms(), Ordering::SeqCst);
        InUse(daemon.clone())
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.last_use.store(unix_ms(), Ordering::SeqCst);
        self.0.in_use.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How long past its bounds an executor waits for the control plane to end
/// it before it ends itself.
const BOUNDS_GRACE_MS: u64 = 10_000;

fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Ends the executor once it is past its hard end or idle timeout (and
/// the grace): the managed process is stopped and the daemon exits, which
/// ends its container or sandbox with everything in it.
fn watch_bounds(daemon: Arc<Daemon>, bounds: sluice_protocol::ExecutorBounds) {
    tokio::spawn(async move {
        loop {
            // Asleep until the nearer bound (a use since moves the idle one
            // on): an idle executor does not wake to look.
            let last_use = daemon.last_use.load(Ordering::SeqCst);
            let end_at = bounds.ends_at_unix_ms.map(|end| end + BOUNDS_GRACE_MS);
            let idle_at = bounds.idle_ms.map(|idle| last_use + idle + BOUNDS_GRACE_MS);
            let Some(due) = end_at.into_iter().chain(idle_at).min() else { return };
            let now = unix_ms();
            if now < due {
                tokio::time::sleep(std::time::Duration::from_millis(due - now)).await;
                continue;
            }
            let what = if end_at.is_some_and(|end| now >= end) { "lifetime" } else { "idle timeout" };
            log_line!("sluiced: the executor is past its {what}; ending it");
            watch::begin_ending();
            daemon.processes.stop_all(std::time::Duration::from_secs(2)).await;
            std::process::exit(0);
        }
    });
}

/// Where the daemon keeps the live binds.
const BINDS_FILE: &str = "binds.json";

impl Daemon {
    /// Where commands run unless they name another directory: the working
    /// directory, or the subdirectory it is bound to.
    /// A command's environment: the executor's exec env, then its own.
    fn with_exec_env(&self, mut request: exec::ExecRequest) -> exec::ExecRequest {
        let mut env = self.exec_env.clone();
        env.append(&mut request.env);
        request.env = env;
        request
    }

    /// Where a process starts when it names no directory (a relative one
    /// is taken from here).
    fn effective_workdir(&self) -> PathBuf {
        if let Some(cwd) = &self.default_cwd {
            return cwd.clone();
        }
        let binds = self.binds.lock().unwrap();
        match binds.binds.iter().find(|b| b.mount_path == self.workdir_name) {
            Some(bind) => self.workdir.join(&bind.subpath),
            None => self.workdir.clone(),
        }
    }

    fn stamp(&self, epoch: u64, head_n: Option<u64>) -> Origin {
        Origin {
            epoch,
            launch: self.launch.clone(),
            boot_id: self.boot_id.clone(),
            boot_generation: self.boot_generation,
            observation: self.observations.fetch_add(1, Ordering::SeqCst) + 1,
            head_n,
        }
    }
}

/// How the daemon reaches the registrar, for a capture-sourced executor.
#[derive(Clone)]
pub struct CaptureSetup {
    /// The registrar socket the runtime mounted.
    pub registrar_socket: PathBuf,
    pub interval: std::time::Duration,
    /// How often the worktree is walked even when the kernel told of no change.
    pub sweep: std::time::Duration,
    /// The most directories watched for changes (0: never watch, walk every interval).
    pub watch_max_dirs: usize,
    pub bulk_threshold: u64,
    /// Virtual path prefixes whose files are bulk.
    pub bulk_paths: Vec<String>,
}

/// What a daemon starts with.
pub struct DaemonConfig<'a> {
    pub boot_secret_file: &'a Path,
    /// The executor's disk: the boot generation is counted here.
    pub state_dir: &'a Path,
    pub launch: String,
    pub epoch: u64,
    /// The worktree: captured, and where commands run unless they (or
    /// `default_cwd`) name another directory.
    pub workdir: &'a Path,
    /// Where processes start when they name no directory (an image's
    /// `WorkingDir`); `None`: the worktree.
    pub default_cwd: Option<PathBuf>,
    /// The managed process's argv (none when empty).
    pub command: Vec<String>,
    /// The managed process's plain environment; the boot secret's
    /// `secretEnv` is added to it.
    pub env: BTreeMap<String, String>,
    /// Who the workload runs as (`None`: as the daemon's own user).
    pub workload: Option<workload::WorkloadIds>,
    /// Capture, when the runtime mounted a registrar (it runs only when
    /// the boot secret also carries a session token).
    pub capture: Option<CaptureSetup>,
}

/// A running daemon: its control API, its managed process and every
/// process of the workload.
pub struct Running {
    pub router: Router,
    pub managed: managed::Managed,
    pub processes: Arc<processes::Processes>,
}

/// Counts this boot on the executor's disk and returns its generation (1 for
/// the first boot of a fresh disk). Written durably before the daemon serves.
pub fn next_boot_generation(state_dir: &Path) -> Result<u64, DaemonError> {
    use std::io::Write;
    std::fs::create_dir_all(state_dir)?;
    let path = state_dir.join("boot-generation");
    let previous = match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse::<u64>().unwrap_or(0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e.into()),
    };
    let next = previous + 1;
    let tmp = state_dir.join("boot-generation.tmp");
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(next.to_string().as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(state_dir)?.sync_all()?;
    Ok(next)
}

fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system random source failed");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the daemon keeps its boot secret once taken.
const KEPT_SECRET: &str = "boot-secret.json";

/// Reads the boot secret: a freshly delivered file wins, and is moved into
/// the state directory (mode 0600) and removed; without one, the copy a
/// previous boot (or an assign) kept.
fn take_boot_secret(delivered: &Path, state_dir: &Path) -> Result<BootSecret, DaemonError> {
    let kept = state_dir.join(KEPT_SECRET);
    let text = match std::fs::read_to_string(delivered) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::read_to_string(&kept)
            .map_err(|_| DaemonError::BootSecret("no boot secret was delivered and none was kept".into()))?,
        Err(e) => return Err(DaemonError::BootSecret(e.to_string())),
    };
    let secret: BootSecret = serde_json::from_str(&text)
        .map_err(|_| DaemonError::BootSecret("not a JSON object with controlToken".into()))?;
    if secret.control_token.len() < 16 {
        return Err(DaemonError::BootSecret("controlToken must be at least 16 characters".into()));
    }
    if delivered.exists() {
        keep_text(text.as_bytes(), state_dir)?;
        std::fs::remove_file(delivered).map_err(|e| DaemonError::BootSecret(format!("cannot remove it: {e}")))?;
    }
    Ok(secret)
}

/// Keeps a boot secret an assign delivered, where a restart finds it.
fn keep_boot_secret(secret: &BootSecret, state_dir: &Path) -> Result<(), DaemonError> {
    let text = serde_json::to_vec(secret).map_err(|e| DaemonError::BootSecret(e.to_string()))?;
    std::fs::create_dir_all(state_dir)?;
    keep_text(&text, state_dir)
}

/// Writes the kept boot secret durably, readable by the daemon alone.
fn keep_text(text: &[u8], state_dir: &Path) -> Result<(), DaemonError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = state_dir.join(format!("{KEPT_SECRET}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    file.write_all(text)?;
    file.sync_all()?;
    std::fs::rename(&tmp, state_dir.join(KEPT_SECRET))?;
    Ok(())
}

/// Reads the boot secret, counts the boot, starts the managed process and
/// builds the control API. Call inside a Tokio runtime.
pub fn boot(config: DaemonConfig<'_>) -> Result<Running, DaemonError> {
    std::fs::create_dir_all(config.state_dir)?;
    workload::prepare_dirs(config.workdir, config.state_dir, config.workload)?;
    let secret = take_boot_secret(config.boot_secret_file, config.state_dir)?;
    let boot_generation = next_boot_generation(config.state_dir)?;
    // The plain environment (given here only by an assign: a launched
    // daemon has it as its own) reaches every process, as the exec env does.
    let mut exec_env = config.env;
    exec_env.extend(secret.exec_env);
    let mut env = exec_env.clone();
    env.extend(secret.secret_env);
    let processes = Arc::new(processes::Processes::new(config.workload));
    let managed = if config.command.is_empty() {
        managed::Managed::none()
    } else {
        managed::Managed::start(
            &config.command,
            config.default_cwd.as_deref().unwrap_or(config.workdir),
            &env,
            &config.state_dir.join("managed.log"),
            &processes,
        )
    };
    let boot_id = random_hex();
    let files = workload::FsWorker::spawn(config.workload)?;
    let bulk_threshold = config.capture.as_ref().map_or(DEFAULT_BULK_THRESHOLD, |c| c.bulk_threshold);
    let capture = match (config.capture, secret.capture_token) {
        (Some(setup), Some(token)) => Some((setup, token)),
        _ => None,
    };
    let daemon = Arc::new_cyclic(|weak: &std::sync::Weak<Daemon>| {
        let capture = capture.map(|(setup, token)| {
            let weak = weak.clone();
            let stamper: capture::Stamper = Arc::new(move |epoch, head_n| match weak.upgrade() {
                Some(daemon) => daemon.stamp(epoch, head_n),
                None => Origin {
                    epoch,
                    launch: String::new(),
                    boot_id: String::new(),
                    boot_generation: 0,
                    observation: 0,
                    head_n,
                },
            });
            let fs = workload::FsWorker::spawn(config.workload).expect("the capture file worker starts");
            capture::Capture::start(
                capture::CaptureConfig {
                    registrar_socket: setup.registrar_socket,
                    token,
                    snap: capture::snap::SnapConfig {
                        worktree: config.workdir.to_path_buf(),
                        bulk_threshold: setup.bulk_threshold,
                        bulk_paths: setup.bulk_paths,
                    },
                    interval: setup.interval,
                    sweep: setup.sweep,
                    watch_max_dirs: setup.watch_max_dirs,
                    restore: boot_generation == 1,
                },
                fs,
                processes.clone(),
                stamper,
            )
        });
        Daemon {
            workload: config.workload,
            processes: processes.clone(),
            token_digest: Sha256::digest(secret.control_token.as_bytes()).into(),
            epoch: config.epoch,
            launch: config.launch,
            boot_id,
            boot_generation,
            observations: AtomicU64::new(0),
            workdir: config.workdir.to_path_buf(),
            default_cwd: config.default_cwd.clone(),
            managed: managed.clone(),
            capture,
            files: files.clone(),
            commands: Arc::new(commands::Commands::new(config.state_dir)),
            background: Arc::new(background::Background::new(config.state_dir)),
            exec_env: exec_env.clone(),
            binds: std::sync::Mutex::new(
                std::fs::read(config.state_dir.join(BINDS_FILE))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or_default(),
            ),
            state_dir: config.state_dir.to_path_buf(),
            workdir_name: config.workdir.display().to_string(),
            scans: snapshots::Scans::default(),
            bulk_threshold,
            last_use: AtomicU64::new(unix_ms()),
            in_use: Default::default(),
        }
    });
    if let Some(bounds) = secret.bounds {
        watch_bounds(daemon.clone(), bounds);
    }
    let router = Router::new()
        .route(sluice_protocol::HEALTH, get(health))
        .route(sluice_protocol::STATUS, get(status))
        .route(sluice_protocol::ASSIGN, post(assigned))
        .route(sluice_protocol::WATCH, get(watch::watch))
        .route(sluice_protocol::ACTIVITY, get(activity))
        // Stdin of up to 8 MiB, as base64.
        .route(sluice_protocol::EXEC, post(run_exec).layer(axum::extract::DefaultBodyLimit::max(16 << 20)))
        .route(
            &format!("{}/{{identity}}", sluice_protocol::COMMANDS),
            axum::routing::put(start_command).get(command_status).layer(axum::extract::DefaultBodyLimit::max(16 << 20)),
        )
        .route(&format!("{}/{{identity}}/cancel", sluice_protocol::COMMANDS), post(cancel_command))
        .route(sluice_protocol::session::SESSION, get(open_session))
        .route(sluice_protocol::snapshot::SNAPSHOT_SCAN, post(snapshot_scan))
        .route(sluice_protocol::snapshot::SNAPSHOT_OBJECTS, post(snapshot_objects))
        // A whole manifest, or a batch of objects and the entries naming them.
        .route(
            sluice_protocol::snapshot::SNAPSHOT_PREPARE,
            post(snapshot_prepare).layer(axum::extract::DefaultBodyLimit::max(SNAPSHOT_BODY_LIMIT)),
        )
        .route(
            sluice_protocol::snapshot::SNAPSHOT_WRITE,
            post(snapshot_write).layer(axum::extract::DefaultBodyLimit::max(SNAPSHOT_BODY_LIMIT)),
        )
        .route(sluice_protocol::capture::CAPTURE_STATUS, get(capture_status))
        .route(sluice_protocol::capture::CAPTURE_FLUSH, post(capture_flush))
        .route(sluice_protocol::capture::CAPTURE_REPLAN, post(capture_replan))
        .route(sluice_protocol::capture::BIND, post(bind))
        .layer(middleware::from_fn_with_state(daemon.clone(), authenticate))
        .with_state(daemon);
    Ok(Running { router, managed, processes })
}

/// Serves the control API on `listener` (TCP or a unix socket) until
/// `shutdown` resolves.
pub async fn serve<L: axum::serve::Listener>(
    router: Router,
    listener: L,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L::Addr: std::fmt::Debug,
{
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await
}

async fn authenticate(State(daemon): State<Arc<Daemon>>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| <[u8; 32]>::from(Sha256::digest(t.trim().as_bytes())));
    if presented == Some(daemon.token_digest) {
        // Health, status, watch and activity reads are the control plane
        // looking, not a use.
        let path = request.uri().path();
        let looks =
            [sluice_protocol::HEALTH, sluice_protocol::STATUS, sluice_protocol::WATCH, sluice_protocol::ACTIVITY];
        let _in_use = (!looks.contains(&path)).then(|| InUse::begin(&daemon));
        next.run(request).await
    } else {
        refused(RefusalCode::Unauthenticated, "a valid control token is required".into())
    }
}

/// Healthy once serving, and, for a capture-sourced executor, once its
/// session is claimed and its worktree restored.
async fn health(State(daemon): State<Arc<Daemon>>) -> Response {
    if daemon.capture.as_ref().is_some_and(|c| !c.ready()) {
        return refused(RefusalCode::Restoring, "restoring the capture session's head".into());
    }
    Json(serde_json::json!({"status": "ok"})).into_response()
}

async fn activity(State(daemon): State<Arc<Daemon>>) -> Json<sluice_protocol::Activity> {
    let last_use = daemon.last_use.load(Ordering::SeqCst);
    Json(sluice_protocol::Activity {
        idle_ms: unix_ms().saturating_sub(last_use),
        in_use: daemon.in_use.load(Ordering::SeqCst),
    })
}

async fn status(State(daemon): State<Arc<Daemon>>) -> Json<Status> {
    let (epoch, head_n) = match &daemon.capture {
        Some(c) => {
            let s = c.status();
            (s.epoch, s.head_n)
        }
        None => (daemon.epoch, None),
    };
    Json(Status { origin: daemon.stamp(epoch, head_n), managed: daemon.managed.state() })
}

fn no_capture() -> Response {
    refused(RefusalCode::NoCapture, "this executor has no capture session".into())
}

async fn capture_status(State(daemon): State<Arc<Daemon>>) -> Response {
    match &daemon.capture {
        Some(c) => Json(c.checked_status().await).into_response(),
        None => no_capture(),
    }
}

/// Binds the working directory to a subdirectory of it (an empty subpath
/// unbinds); answers the live binds. The working directory is the one
/// bindable mount.
async fn bind(State(daemon): State<Arc<Daemon>>, body: axum::body::Bytes) -> Response {
    use sluice_protocol::capture::{Bind, BindRequest};
    let request: BindRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return refused(RefusalCode::Invalid, format!("bind request: {e}")),
    };
    let mount_path = request.mount_path.unwrap_or_else(|| daemon.workdir_name.clone());
    if mount_path != daemon.workdir_name {
        return refused(
            RefusalCode::Invalid,
            format!("mountPath {mount_path} is not bindable: only the working directory ({}) is", daemon.workdir_name),
        );
    }
    let subpath = request.subpath.trim_matches('/').to_owned();
    if subpath.split('/').any(|p| p == ".." || p == ".") {
        return refused(RefusalCode::Invalid, "subpath must stay under the working directory".into());
    }
    if !subpath.is_empty() {
        let ids = daemon.workload;
        let target = daemon.workdir.join(&subpath);
        // As the workload, so a path it planted reaches nothing it could not.
        let made = match workload::FsWorker::spawn(ids) {
            Ok(fs) => fs.run(move || std::fs::create_dir_all(&target)).await,
            Err(e) => Err(e),
        };
        if !matches!(made, Ok(Ok(()))) {
            return refused(RefusalCode::NotApplied, format!("cannot make {subpath} under the working directory"));
        }
    }
    let answer = {
        let mut binds = daemon.binds.lock().unwrap();
        binds.binds.retain(|b| b.mount_path != mount_path);
        if !subpath.is_empty() {
            binds.binds.push(Bind { mount_path, subpath });
        }
        binds.binds.sort();
        binds.clone()
    };
    let text = serde_json::to_vec(&answer).unwrap_or_default();
    let tmp = daemon.state_dir.join(format!("{BINDS_FILE}.tmp"));
    if std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, daemon.state_dir.join(BINDS_FILE))).is_err() {
        return refused(RefusalCode::NotApplied, "cannot keep the binds on the executor's disk".into());
    }
    Json(answer).into_response()
}

/// How long a flush may take when the request names no deadline.
const DEFAULT_FLUSH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

async fn capture_flush(State(daemon): State<Arc<Daemon>>, body: axum::body::Bytes) -> Response {
    let Some(capture) = &daemon.capture else { return no_capture() };
    let request: sluice_protocol::capture::FlushRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return refused(RefusalCode::Invalid, format!("flush request: {e}")),
    };
    let deadline = request.deadline_ms.map_or(DEFAULT_FLUSH_DEADLINE, std::time::Duration::from_millis);
    Json(capture.flush(request, deadline).await).into_response()
}

async fn capture_replan(State(daemon): State<Arc<Daemon>>) -> Response {
    let Some(capture) = &daemon.capture else { return no_capture() };
    if capture.finalizing() {
        return finalized();
    }
    match capture.replan().await {
        Ok(done) => Json(done).into_response(),
        Err(e) => refused(RefusalCode::NotApplied, format!("re-plan failed: {e}")),
    }
}

/// An assign to a daemon that has its run: the same launch again is done
/// (the assigner's retry), another is refused.
async fn assigned(State(daemon): State<Arc<Daemon>>, body: axum::body::Bytes) -> Response {
    #[derive(serde::Deserialize)]
    struct Launch {
        launch: String,
    }
    match serde_json::from_slice::<Launch>(&body) {
        Ok(asked) if asked.launch == daemon.launch => StatusCode::NO_CONTENT.into_response(),
        Ok(_) => refused(RefusalCode::Assigned, "this executor runs another launch".into()),
        Err(_) => refused(RefusalCode::Invalid, "the assign body is not an assign request".into()),
    }
}

/// The one place a refusal becomes an HTTP answer.
fn refused(code: RefusalCode, message: String) -> Response {
    let status = match code {
        RefusalCode::Unauthenticated => StatusCode::UNAUTHORIZED,
        RefusalCode::Invalid => StatusCode::BAD_REQUEST,
        RefusalCode::Restoring => StatusCode::SERVICE_UNAVAILABLE,
        RefusalCode::NoCapture | RefusalCode::ExecutorFinalized | RefusalCode::NotApplied => StatusCode::CONFLICT,
        RefusalCode::CommandNotStartable | RefusalCode::Unreadable => StatusCode::UNPROCESSABLE_ENTITY,
        RefusalCode::ScanGone => StatusCode::GONE,
        RefusalCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        RefusalCode::Pooled | RefusalCode::Assigned => StatusCode::CONFLICT,
    };
    (status, Json(Refusal { code, message })).into_response()
}

/// A snapshot's bulk threshold when the executor has no capture setup.
const DEFAULT_BULK_THRESHOLD: u64 = 4 << 20;
/// The most a snapshot prepare or write request may hold.
const SNAPSHOT_BODY_LIMIT: usize = 64 << 20;

fn snapshot_refused(e: snapshots::SnapshotError) -> Response {
    use snapshots::SnapshotError as E;
    let code = match e {
        E::Invalid(_) | E::Corrupt => RefusalCode::Invalid,
        E::Unreadable | E::UnreadablePaths(_) => RefusalCode::Unreadable,
        E::UnknownScan => RefusalCode::ScanGone,
        E::Io(_) => RefusalCode::Internal,
    };
    refused(code, e.to_string())
}

/// A request body read as `T`, or the refusal to answer (boxed: a
/// response is large beside what a success holds).
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| Box::new(refused(RefusalCode::Invalid, format!("{what}: {e}"))))
}

async fn snapshot_scan(State(daemon): State<Arc<Daemon>>, body: axum::body::Bytes) -> Response {
    let request: sluice_protocol::snapshot::ScanRequest = match parse(&body, "snapshot scan") {
        Ok(r) => r,
        Err(refusal) => return *refusal,
    };
    let threshold = daemon.bulk_threshold;
    match daemon.files.run(move || snapshots::scan(&request.dir, threshold)).await {
        Ok(Ok(snapped)) => Json(snapshots::scanned(&daemon.scans, snapped)).into_response(),
        Ok(Err(e)) => snapshot_refused(e),
        Err(e) => refused(RefusalCode::Internal, e.to_string()),
    }
}

async fn snapshot_objects(State(daemon): State<Arc<Daemon>>, body: axum::body::Bytes) -> Response {
    let request: sluice_protocol::snapshot::ObjectsRequest = match parse(&body, "snapshot objects") {
        Ok(r) => r,
        Err(refusal) => return *refusal,
    };
    let refs = match snapshots::refs(&daemon.scans, &request.scan, &request.keys) {
        Ok(refs) => refs,
        Err(e) => return snapshot_refused(e),
    };
    match daemon.files.run(move || capture::read_frames(&refs)).await {
        Ok(Ok(frames)) => frames.into_response(),
        // A file changed since the scan: the snapshot scans again.
        Ok(Err(_)) => snapshot_refused(snapshots::SnapshotError::UnknownScan),
        Err(e) => refused(RefusalCode::Internal, e.to_string()),
    }
}

async fn snapshot_prepare(State(daemon): State<Arc<Daemon>>, body: axum::body::Bytes) -> Response {
    let request: sluice_protocol::snapshot::PrepareRequest = match parse(&body, "snapshot prepare") {
        Ok(r) => r,
        Err(refusal) => return *refusal,
    };
    let threshold = daemon.bulk_threshold;
    match daemon.files.run(move || snapshots::prepare(&request.dir, &request.small, &request.bulk, threshold)).await {
        Ok(Ok(prepared)) => Json(prepared).into_response(),
        Ok(Err(e)) => snapshot_refused(e),
        Err(e) => refused(RefusalCode::Internal, e.to_string()),
    }
}

async fn snapshot_write(State(daemon): State<Arc<Daemon>>, body: axum::body::Bytes) -> Response {
    let Some((header, frames)) = body.split_at_checked(4).and_then(|(len, rest)| {
        let len = u32::from_be_bytes(len.try_into().expect("four bytes")) as usize;
        rest.split_at_checked(len)
    }) else {
        return refused(RefusalCode::Invalid, "a write batch starts with its header's length".into());
    };
    let batch: sluice_protocol::snapshot::WriteBatch = match parse(header, "snapshot write") {
        Ok(b) => b,
        Err(refusal) => return *refusal,
    };
    let frames = body.slice_ref(frames);
    match daemon.files.run(move || snapshots::write(&batch, &frames)).await {
        Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
        Ok(Err(e)) => snapshot_refused(e),
        Err(e) => refused(RefusalCode::Internal, e.to_string()),
    }
}

fn invalid_identity(identity: &str) -> Option<Response> {
    (!commands::valid_identity(identity))
        .then(|| refused(RefusalCode::Invalid, "identity: 1 to 128 characters of [A-Za-z0-9._:-]".into()))
}

async fn start_command(
    State(daemon): State<Arc<Daemon>>,
    axum::extract::Path(identity): axum::extract::Path<String>,
    body: axum::body::Bytes,
) -> Response {
    if let Some(refusal) = invalid_identity(&identity) {
        return refusal;
    }
    if daemon.capture.as_ref().is_some_and(|c| c.finalizing()) {
        return finalized();
    }
    let request: exec::ExecRequest = match serde_json::from_slice(&body) {
        Ok(r) => daemon.with_exec_env(r),
        Err(e) => return refused(RefusalCode::Invalid, format!("command request: {e}")),
    };
    if request.argv.first().is_none_or(|p| p.is_empty()) {
        return refused(RefusalCode::Invalid, "argv must name a program".into());
    }
    // A repeated start answers the status whatever its body; a new one
    // that cannot start is refused before anything is claimed.
    let workdir = daemon.effective_workdir();
    if daemon.commands.status(&identity).state == "unknown"
        && let Err(why) = commands::preflight(&workdir, &request)
    {
        return refused(RefusalCode::CommandNotStartable, why.into());
    }
    if let Err(why) = commands::stdin_of(&request) {
        return refused(RefusalCode::Invalid, why.into());
    }
    match daemon.commands.start(&identity, request, &workdir, &daemon.background, &daemon.processes) {
        Ok(status) => Json(status).into_response(),
        Err(e) => refused(RefusalCode::Internal, format!("the command could not be claimed: {e}")),
    }
}

async fn command_status(
    State(daemon): State<Arc<Daemon>>,
    axum::extract::Path(identity): axum::extract::Path<String>,
) -> Response {
    if let Some(refusal) = invalid_identity(&identity) {
        return refusal;
    }
    Json(daemon.commands.status(&identity)).into_response()
}

async fn cancel_command(
    State(daemon): State<Arc<Daemon>>,
    axum::extract::Path(identity): axum::extract::Path<String>,
) -> Response {
    if let Some(refusal) = invalid_identity(&identity) {
        return refusal;
    }
    match daemon.commands.cancel(&identity, &daemon.background) {
        Ok(status) => Json(status).into_response(),
        Err(e) => refused(RefusalCode::Internal, format!("the command could not be canceled: {e}")),
    }
}

/// The refusal of new work once a final flush began.
fn finalized() -> Response {
    refused(RefusalCode::ExecutorFinalized, DaemonError::Finalized.to_string())
}

async fn run_exec(State(daemon): State<Arc<Daemon>>, body: axum::body::Bytes) -> Response {
    if daemon.capture.as_ref().is_some_and(|c| c.finalizing()) {
        return finalized();
    }
    let request: exec::ExecRequest = match serde_json::from_slice(&body) {
        Ok(r) => daemon.with_exec_env(r),
        Err(e) => return refused(RefusalCode::Invalid, format!("exec request: {e}")),
    };
    let result = exec::run(&daemon.effective_workdir(), request, &daemon.processes).await;
    if let Some(capture) = &daemon.capture {
        capture.nudge();
    }
    match result {
        Ok(result) => Json(result).into_response(),
        Err(DaemonError::Finalized) => finalized(),
        Err(e) => refused(RefusalCode::Invalid, e.to_string()),
    }
}

/// The word that starts the daemon's binary as an sftp server.
pub const SFTP_SERVER: &str = "sftp-server";

/// Whether this process was started to serve sftp (`sluiced sftp-server`,
/// or `sluice daemon sftp-server`), rather than as a daemon.
pub fn sftp_server_requested() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    matches!(args.as_slice(), [word] if word == SFTP_SERVER)
        || matches!(args.as_slice(), [daemon, word] if daemon == "daemon" && word == SFTP_SERVER)
}

/// Serves sftp on stdin and stdout (the workload's sftp subsystem).
pub async fn serve_sftp() {
    sftp::serve_stdio().await
}

/// How this binary is started as an sftp server: itself (through
/// `/proc/self/exe`, which holds even where its file was replaced), as it
/// was started (`sluice daemon` or `sluiced`), with [`SFTP_SERVER`].
fn sftp_server_argv() -> Option<Vec<String>> {
    let mut argv = vec!["/proc/self/exe".to_owned()];
    if std::env::args().nth(1).as_deref() == Some("daemon") {
        argv.push("daemon".into());
    }
    argv.push(SFTP_SERVER.into());
    Some(argv)
}

/// Opens an interactive session on this connection, upgraded (see
/// [`sluice_protocol::session`]).
async fn open_session(State(daemon): State<Arc<Daemon>>, mut request: Request) -> Response {
    use axum::http::header::{CONNECTION, UPGRADE};
    let protocol = sluice_protocol::session::UPGRADE;
    let asked = request.headers().get(UPGRADE).and_then(|v| v.to_str().ok()) == Some(protocol);
    if !asked {
        return refused(RefusalCode::Invalid, format!("a session is opened with Upgrade: {protocol}"));
    }
    let upgrade = hyper::upgrade::on(&mut request);
    let touch = {
        let daemon = daemon.clone();
        Arc::new(move || daemon.last_use.store(unix_ms(), Ordering::SeqCst))
    };
    let context = sessions::SessionContext {
        processes: daemon.processes.clone(),
        workdir: daemon.effective_workdir(),
        env: daemon.exec_env.clone(),
        finalizing: daemon.capture.as_ref().is_some_and(|c| c.finalizing()),
        sftp_server: sftp_server_argv(),
        touch,
        background: daemon.background.clone(),
    };
    let in_use = InUse::begin(&daemon);
    tokio::spawn(async move {
        let _in_use = in_use;
        if let Ok(upgraded) = upgrade.await {
            sessions::run(hyper_util::rt::TokioIo::new(upgraded), context).await;
            if let Some(capture) = &daemon.capture {
                capture.nudge();
            }
        }
    });
    axum::http::Response::builder()
        .status(axum::http::StatusCode::SWITCHING_PROTOCOLS)
        .header(CONNECTION, "upgrade")
        .header(UPGRADE, protocol)
        .body(axum::body::Body::empty())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn start(dir: &Path, launch: &str) -> String {
        let secret = dir.join("boot-secret.json");
        std::fs::write(&secret, r#"{"controlToken": "control-token-0123456789"}"#).unwrap();
        let router = boot(DaemonConfig {
            boot_secret_file: &secret,
            state_dir: &dir.join("disk"),
            launch: launch.into(),
            epoch: 3,
            workdir: dir,
            default_cwd: None,
            command: Vec::new(),
            env: BTreeMap::new(),
            workload: None,
            capture: None,
        })
        .unwrap()
        .router;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve(router, listener, std::future::pending()));
        base
    }

    async fn origin(base: &str) -> Origin {
        let r = reqwest::Client::new()
            .get(format!("{base}/status"))
            .bearer_auth("control-token-0123456789")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body: serde_json::Value = r.json().await.unwrap();
        serde_json::from_value(body["origin"].clone()).unwrap()
    }

    #[tokio::test]
    async fn control_api_needs_the_control_token() {
        let dir = tempfile::tempdir().unwrap();
        let base = start(dir.path(), "launch-1").await;
        let client = reqwest::Client::new();
        assert_eq!(client.get(format!("{base}/health")).send().await.unwrap().status(), 401);
        assert_eq!(
            client.get(format!("{base}/health")).bearer_auth("wrong-token-0123456789").send().await.unwrap().status(),
            401
        );
        assert_eq!(
            client.get(format!("{base}/health")).bearer_auth("control-token-0123456789").send().await.unwrap().status(),
            200
        );
    }

    #[tokio::test]
    async fn origin_stamps_order_answers_within_and_across_boots() {
        let dir = tempfile::tempdir().unwrap();
        let first = start(dir.path(), "launch-1").await;
        let (a, b) = (origin(&first).await, origin(&first).await);
        assert_eq!((a.epoch, a.launch.as_str(), a.boot_generation), (3, "launch-1", 1));
        assert_eq!(a.boot_id, b.boot_id);
        assert!(b.observation > a.observation, "observations grow within a boot");
        // A second boot on the same disk: a new boot id, the next generation.
        let second = start(dir.path(), "launch-1").await;
        let c = origin(&second).await;
        assert_ne!(c.boot_id, a.boot_id);
        assert_eq!(c.boot_generation, 2);
    }

    #[tokio::test]
    async fn the_managed_process_gets_the_secret_env_and_exec_runs_commands() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("boot-secret.json");
        std::fs::write(&secret, r#"{"controlToken": "control-token-0123456789", "secretEnv": {"API_KEY": "k-42"}}"#)
            .unwrap();
        let running = boot(DaemonConfig {
            boot_secret_file: &secret,
            state_dir: &dir.path().join("disk"),
            launch: "l".into(),
            epoch: 0,
            workdir: dir.path(),
            default_cwd: None,
            command: vec!["sh".into(), "-c".into(), "printf %s \"$API_KEY\" > seen; sleep 30".into()],
            env: BTreeMap::new(),
            workload: None,
            capture: None,
        })
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve(running.router, listener, std::future::pending()));
        let client = reqwest::Client::new();
        let status: serde_json::Value = client
            .get(format!("{base}/status"))
            .bearer_auth("control-token-0123456789")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(status["managed"]["state"], "running");

        let exec = |argv: serde_json::Value| {
            client
                .post(format!("{base}/exec"))
                .bearer_auth("control-token-0123456789")
                .json(&serde_json::json!({"argv": argv}))
                .send()
        };
        let mut seen = String::new();
        for _ in 0..100 {
            let r: exec::ExecResponse = exec(serde_json::json!(["cat", "seen"])).await.unwrap().json().await.unwrap();
            seen = r.stdout;
            if !seen.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(seen, "k-42", "the managed process saw its secret environment");
        assert_eq!(exec(serde_json::json!([])).await.unwrap().status(), 400, "an empty argv is refused");

        running.managed.stop(std::time::Duration::from_secs(5)).await;
        for _ in 0..100 {
            if !matches!(running.managed.state(), managed::ManagedState::Running { .. }) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(running.managed.state(), managed::ManagedState::Exited { exit_code: 128 + 15 });
    }

    #[tokio::test]
    async fn the_boot_secret_is_taken_once_and_kept_where_only_the_daemon_reads() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let base = start(dir.path(), "launch-1").await;
        let delivered = dir.path().join("boot-secret.json");
        assert!(!delivered.exists(), "the delivered file is removed once read");
        let kept = dir.path().join("disk").join(KEPT_SECRET);
        assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(dir.path().join("disk")).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(origin(&base).await.boot_generation, 1);
        // A restart with nothing delivered boots from the kept copy.
        let state = dir.path().join("disk");
        let restart = || {
            boot(DaemonConfig {
                boot_secret_file: &delivered,
                state_dir: &state,
                launch: "launch-1".into(),
                epoch: 3,
                workdir: dir.path(),
                default_cwd: None,
                command: Vec::new(),
                env: BTreeMap::new(),
                workload: None,
                capture: None,
            })
        };
        assert!(restart().is_ok(), "booted from the kept secret");
        std::fs::remove_file(&kept).unwrap();
        let err = restart().err().expect("no secret anywhere");
        assert!(err.to_string().contains("no boot secret"), "{err}");
    }

    #[test]
    fn a_short_or_malformed_boot_secret_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("s");
        for text in ["not json", r#"{"controlToken": "short"}"#] {
            std::fs::write(&secret, text).unwrap();
            let config = DaemonConfig {
                boot_secret_file: &secret,
                state_dir: dir.path(),
                launch: "l".into(),
                epoch: 0,
                workdir: dir.path(),
                default_cwd: None,
                command: Vec::new(),
                env: BTreeMap::new(),
                workload: None,
                capture: None,
            };
            let err = boot(config).err().expect("refused").to_string();
            assert!(!err.contains("short"), "the error must not echo the token");
        }
    }
}
