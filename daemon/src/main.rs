//! `sluiced`: start the managed process and serve an executor's control API.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
#[command(name = "sluiced", version, about = "The sluice daemon inside an executor")]
struct Args {
    /// Where the control API listens: `unix:PATH` or `HOST:PORT`.
    #[arg(long, env = "SLUICED_LISTEN", default_value = "127.0.0.1:7421")]
    listen: String,
    /// The boot secret file the control plane delivered (JSON: controlToken, secretEnv).
    #[arg(long, env = "SLUICED_BOOT_SECRET_FILE")]
    boot_secret_file: PathBuf,
    /// A directory on the executor's own disk for the daemon's state.
    #[arg(long, env = "SLUICED_STATE_DIR")]
    state_dir: PathBuf,
    /// Where commands run by default.
    #[arg(long, env = "SLUICED_WORKDIR", default_value = ".")]
    workdir: PathBuf,
    /// The managed process's argv as a JSON array (none when absent).
    #[arg(long, env = "SLUICED_COMMAND")]
    command: Option<String>,
    /// The launch identity this executor runs as.
    #[arg(long, env = "SLUICED_LAUNCH")]
    launch: String,
    /// The capture lease epoch.
    #[arg(long, env = "SLUICED_EPOCH", default_value_t = 0)]
    epoch: u64,
    /// How long the managed process gets to exit after SIGTERM.
    #[arg(long, env = "SLUICED_STOP_GRACE_MS", default_value_t = 10_000)]
    stop_grace_ms: u64,
    /// Ignored: lets a launcher name the executor in process listings.
    #[arg(last = true, hide = true)]
    label: Vec<String>,
}

async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
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
    let running = sluice_daemon::boot(sluice_daemon::DaemonConfig {
        boot_secret_file: &args.boot_secret_file,
        state_dir: &args.state_dir,
        launch: args.launch,
        epoch: args.epoch,
        workdir: &args.workdir,
        command,
        env: BTreeMap::new(),
    })?;
    let managed = running.managed.clone();
    let grace = Duration::from_millis(args.stop_grace_ms);
    let shutdown = async move {
        terminated().await;
        managed.stop(grace).await;
    };
    if let Some(path) = args.listen.strip_prefix("unix:") {
        let _ = std::fs::remove_file(path);
        let listener = tokio::net::UnixListener::bind(path)?;
        eprintln!("sluiced control API on unix:{path}");
        sluice_daemon::serve(running.router, listener, shutdown).await?;
    } else {
        let listener = tokio::net::TcpListener::bind(&args.listen).await?;
        eprintln!("sluiced control API on {}", listener.local_addr()?);
        sluice_daemon::serve(running.router, listener, shutdown).await?;
    }
    Ok(())
}
