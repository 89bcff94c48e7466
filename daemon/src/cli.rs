//! The daemon's command line, shared by `sluiced` and `sluice daemon`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where the control API listens: `unix:PATH` or `HOST:PORT`.
    #[arg(long, env = "SLUICED_LISTEN", default_value = "127.0.0.1:7421")]
    pub listen: String,
    /// The boot secret file the control plane delivered (JSON: controlToken, secretEnv).
    #[arg(long, env = "SLUICED_BOOT_SECRET_FILE")]
    pub boot_secret_file: PathBuf,
    /// A directory on the executor's own disk for the daemon's state.
    #[arg(long, env = "SLUICED_STATE_DIR")]
    pub state_dir: PathBuf,
    /// Where commands run by default.
    #[arg(long, env = "SLUICED_WORKDIR", default_value = ".")]
    pub workdir: PathBuf,
    /// Where processes start when they name no directory (default: the
    /// workdir); an absolute path.
    #[arg(long, env = "SLUICED_CWD", value_parser = absolute_dir)]
    pub cwd: Option<PathBuf>,
    /// The managed process's argv as a JSON array (none when absent).
    #[arg(long, env = "SLUICED_COMMAND")]
    pub command: Option<String>,
    /// The launch identity this executor runs as.
    #[arg(long, env = "SLUICED_LAUNCH", required_unless_present = "pooled")]
    pub launch: Option<String>,
    /// Start pooled: no run, no boot secret, no workload until the control
    /// plane assigns one (see `sluice_protocol::ASSIGN`).
    #[arg(long, conflicts_with_all = ["launch", "command", "egress_proxy"])]
    pub pooled: bool,
    /// The capture lease epoch.
    #[arg(long, env = "SLUICED_EPOCH", default_value_t = 0)]
    pub epoch: u64,
    /// How long the managed process gets to exit after SIGTERM.
    #[arg(long, env = "SLUICED_STOP_GRACE_MS", default_value_t = 10_000)]
    pub stop_grace_ms: u64,
    /// The uid the workload (managed process, exec commands) runs as.
    #[arg(long, requires = "workload_gid")]
    pub workload_uid: Option<u32>,
    /// The gid the workload runs as.
    #[arg(long, requires = "workload_uid")]
    pub workload_gid: Option<u32>,
    /// The registrar socket the runtime mounted (`unix:PATH`); with a
    /// session token in the boot secret, the daemon captures its worktree.
    #[arg(long, env = "SLUICED_REGISTRAR")]
    pub registrar: Option<String>,
    /// The worker's egress proxy for this executor (`unix:PATH`): the
    /// workload reaches it on the executor's loopback.
    #[arg(long, env = "SLUICED_EGRESS_PROXY")]
    pub egress_proxy: Option<String>,
    /// The egress authority's certificate, when the proxy adds credentials
    /// for this executor: the workload's TLS clients are made to trust it.
    #[arg(long, env = "SLUICED_EGRESS_AUTHORITY", value_name = "FILE")]
    pub egress_authority: Option<std::path::PathBuf>,
    /// How often automatic snaps run.
    #[arg(long, env = "SLUICED_CAPTURE_INTERVAL_MS", default_value_t = 10_000)]
    pub capture_interval_ms: u64,
    /// How often the worktree is walked even when the kernel told of no
    /// change (0: thirty capture intervals).
    #[arg(long, env = "SLUICED_CAPTURE_SWEEP_MS", default_value_t = 0)]
    pub capture_sweep_ms: u64,
    /// The most worktree directories watched for changes; past it (or with
    /// 0) the worktree is walked every capture interval.
    #[arg(long, env = "SLUICED_CAPTURE_WATCH_MAX_DIRS", default_value_t = 100_000)]
    pub capture_watch_max_dirs: usize,
    /// Files larger than this are captured in the bulk class.
    #[arg(long, env = "SLUICED_BULK_THRESHOLD_BYTES", default_value_t = 4 << 20)]
    pub bulk_threshold_bytes: u64,
    /// A worktree path (relative) whose files are bulk, like `node_modules`; repeatable.
    #[arg(long = "bulk-path")]
    pub bulk_paths: Vec<String>,
    /// Ignored: lets a launcher name the executor in process listings.
    #[arg(last = true, hide = true)]
    pub label: Vec<String>,
}

async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// Runs the daemon until SIGTERM: boot, the managed process, the control API.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let command: Vec<String> = match &args.command {
        Some(json) => serde_json::from_str(json).map_err(|e| anyhow::anyhow!("--command must be a JSON array: {e}"))?,
        None => Vec::new(),
    };
    // Removed so the managed process and exec'd commands do not inherit them.
    for name in ["SLUICED_BOOT_SECRET_FILE", "SLUICED_COMMAND"] {
        // SAFETY: still single-threaded as far as the environment goes: no
        // task reads it yet.
        unsafe { std::env::remove_var(name) };
    }
    crate::workload::harden_self();
    // Whatever the workload abandons is re-parented to the daemon, so a
    // final flush can find and end it.
    if let Err(e) = crate::processes::become_subreaper() {
        log_line!("sluiced: cannot become the workload's subreaper: {e}");
    }
    if let Some(socket) = &args.egress_proxy {
        let socket = socket.strip_prefix("unix:").unwrap_or(socket);
        crate::egress::start(socket.into()).await.map_err(|e| anyhow::anyhow!("cannot listen for egress: {e}"))?;
    }
    if let Some(authority) = &args.egress_authority {
        crate::egress::install_trust(authority).map_err(|e| anyhow::anyhow!("cannot install the egress trust: {e}"))?;
    }
    let workload = match (args.workload_uid, args.workload_gid) {
        (Some(uid), Some(gid)) => Some(crate::workload::WorkloadIds { uid, gid }),
        _ => None,
    };
    let capture = args.registrar.as_ref().map(|socket| crate::CaptureSetup {
        registrar_socket: socket.strip_prefix("unix:").unwrap_or(socket).into(),
        interval: Duration::from_millis(args.capture_interval_ms.max(100)),
        sweep: match args.capture_sweep_ms {
            0 => Duration::from_millis(args.capture_interval_ms.max(100)) * 30,
            ms => Duration::from_millis(ms.max(100)),
        },
        watch_max_dirs: args.capture_watch_max_dirs,
        bulk_threshold: args.bulk_threshold_bytes,
        bulk_paths: args.bulk_paths.iter().map(|p| format!("tree/{}", p.trim_matches('/'))).collect(),
    });
    let grace = Duration::from_millis(args.stop_grace_ms);
    let (router, processes) = match args.launch {
        Some(launch) => {
            let running = crate::boot(crate::DaemonConfig {
                boot_secret_file: &args.boot_secret_file,
                state_dir: &args.state_dir,
                launch,
                epoch: args.epoch,
                workdir: &args.workdir,
                default_cwd: args.cwd.clone(),
                command,
                env: BTreeMap::new(),
                workload,
                capture,
            })?;
            crate::processes::reap_in_background(running.processes.clone());
            let processes = std::sync::Arc::new(std::sync::OnceLock::new());
            let _ = processes.set(running.processes);
            (running.router, processes)
        }
        None => crate::pooled::router(crate::pooled::Template {
            boot_secret_file: args.boot_secret_file.clone(),
            state_dir: args.state_dir.clone(),
            workdir: args.workdir.clone(),
            default_cwd: args.cwd.clone(),
            epoch: args.epoch,
            workload,
            capture,
        }),
    };
    let shutdown = async move {
        terminated().await;
        crate::watch::begin_ending();
        if let Some(processes) = processes.get() {
            processes.stop_all(grace).await;
        }
    };
    if let Some(path) = args.listen.strip_prefix("unix:") {
        let _ = std::fs::remove_file(path);
        let listener = tokio::net::UnixListener::bind(path)?;
        // Only the daemon's own user (and the control plane, as root) connects.
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        log_line!("sluiced control API on unix:{path}");
        crate::serve(router, listener, shutdown).await?;
    } else {
        let listener = tokio::net::TcpListener::bind(&args.listen).await?;
        log_line!("sluiced control API on {}", listener.local_addr()?);
        crate::serve(router, listener, shutdown).await?;
    }
    Ok(())
}

fn absolute_dir(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    if path.is_absolute() { Ok(path) } else { Err(format!("{text:?} is not an absolute path")) }
}
