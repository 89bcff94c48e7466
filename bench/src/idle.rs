//! `sluice-bench idle`: what idle ready workspaces cost. A real `sluice
//! serve` (local runtime) with N ready workspaces that do nothing, plain or
//! capture-sourced, is left alone for a window; the server's CPU and its
//! daemons' CPU over it are read from `/proc`, next to the same server's
//! CPU over the same window with no workspace at all (the baseline,
//! measured first in the same run).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::ready::Serve;
use crate::summary::{Aim, record};

#[derive(Args, Debug)]
pub struct BenchIdleArgs {
    /// How many idle workspaces each measurement holds.
    #[arg(long, value_delimiter = ',', default_value = "100,500")]
    pub counts: Vec<usize>,
    /// Which workspaces: `plain` (a sleeping command) and `capture` (the
    /// same, capture-sourced: its daemon captures the worktree).
    #[arg(long, value_delimiter = ',', default_value = "plain,capture")]
    pub kinds: Vec<String>,
    /// How long each measurement watches, in seconds.
    #[arg(long, default_value_t = 30)]
    pub window_seconds: u64,
    /// How long the workspaces settle after the last is ready, in seconds
    /// (capture daemons' first snaps, the watches opening).
    #[arg(long, default_value_t = 15)]
    pub settle_seconds: u64,
}

/// Clock ticks a second, for `/proc/PID/stat`.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// A process's user and system time so far, in ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields count from after its ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The pids of this server's executor processes (sandboxes and daemons:
/// their command lines name the executor's directory; the workloads do not).
fn executor_pids(executors: &Path) -> Vec<u32> {
    let needle = executors.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline).contains(&needle).then_some(pid)
        })
        .collect()
}

/// CPU over `window`, as a percentage of one core: the server's, and the
/// executors' together.
async fn cpu_over(serve: &Serve, window: Duration) -> anyhow::Result<(f64, f64)> {
    let executors = serve.data_dir.join("executors");
    let server = serve.child.id();
    let pids = executor_pids(&executors);
    let sum = |pids: &[u32]| pids.iter().filter_map(|p| cpu_ticks(*p)).sum::<u64>();
    let (server_before, executors_before) = (cpu_ticks(server).context("the server's stat")?, sum(&pids));
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let elapsed = started.elapsed().as_secs_f64();
    let (server_after, executors_after) = (cpu_ticks(server).context("the server's stat")?, sum(&pids));
    let percent = |ticks: u64| ticks as f64 / ticks_per_second() / elapsed * 100.0;
    Ok((percent(server_after - server_before), percent(executors_after.saturating_sub(executors_before))))
}

async fn post(client: &reqwest::Client, serve: &Serve, path: &str, body: &Value) -> anyhow::Result<Value> {
    let answer = client.post(format!("{}{path}", serve.base)).bearer_auth(&serve.token).json(body).send().await?;
    let status = answer.status();
    let body: Value = answer.json().await?;
    anyhow::ensure!(status.is_success(), "POST {path}: {status} {body}");
    Ok(body)
}

/// Creates one idle workspace (capture-sourced on a session of its own if
/// `capture`); answers its id.
async fn create(client: &reqwest::Client, serve: &Serve, capture: bool) -> anyhow::Result<String> {
    let mut body = json!({
        "ownerUserId": "bench", "registryId": "host", "repository": "sluice-bench/busybox", "tag": "1",
        "spec": {"command": ["sleep", "86400"]},
    });
    if capture {
        let session = post(client, serve, "/v1/capture-sessions", &json!({"ownerUserId": "bench"})).await?;
        body["spec"]["source"] = json!({"kind": "capture", "sessionId": session["sessionId"]});
        body["captureToken"] = session["token"].clone();
    }
    let created = post(client, serve, "/v1/workspaces", &body).await?;
    Ok(created["workspaceId"].as_str().context("a workspace id")?.to_owned())
}

/// Brings up `count` idle workspaces, 16 at a time, and waits until every
/// one is ready and watched.
async fn bring_up(serve: &Serve, count: usize, capture: bool) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    let mut made = 0;
    while made < count {
        let batch = (count - made).min(16);
        let creates = (0..batch).map(|_| create(&client, serve, capture));
        for created in futures::future::join_all(creates).await {
            created?;
        }
        made += batch;
    }
    let deadline = Instant::now() + Duration::from_secs(60 + count as u64);
    loop {
        let metrics = client.get(format!("{}/metrics", serve.base)).bearer_auth(&serve.token).send().await?;
        let metrics = metrics.text().await?;
        let gauge = |name: &str, labels: &str| -> f64 {
            metrics
                .lines()
                .filter(|l| l.starts_with(name) && l.contains(labels))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        };
        let (ready, watched) = (gauge("sluice_workspaces{", "status=\"ready\""), gauge("sluice_watched_executors", ""));
        if ready as usize == count && watched as usize == count {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{ready} of {count} workspaces ready and {watched} watched");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub async fn run(args: BenchIdleArgs) -> anyhow::Result<()> {
    let root = std::env::temp_dir().join(format!("sluice-bench-idle-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    let window = Duration::from_secs(args.window_seconds.max(1));
    println!("idle ready workspaces (local runtime), CPU over {} s as % of one core", window.as_secs());
    println!();
    println!("| workspaces | server | per workspace | daemons | per workspace | server, no workspace |");
    println!("|---|---|---|---|---|---|");
    for kind in &args.kinds {
        let capture = match kind.as_str() {
            "plain" => false,
            "capture" => true,
            other => bail!("unknown kind {other}: plain or capture"),
        };
        for &count in &args.counts {
            let data_dir: PathBuf = root.join(format!("{kind}-{count}"));
            let serve = Serve::spawn(data_dir, &["--runtime", "local"]).await?;
            let (none, _) = cpu_over(&serve, window).await?;
            bring_up(&serve, count, capture).await?;
            tokio::time::sleep(Duration::from_secs(args.settle_seconds)).await;
            let (server, daemons) = cpu_over(&serve, window).await?;
            drop(serve);
            let n = count as f64;
            println!(
                "| {count} {kind} | {server:.2} % | {:.4} % | {daemons:.2} % | {:.4} % | {none:.2} % |",
                server / n,
                daemons / n
            );
            let figure = |p: f64| format!("{p:.2} % of a core");
            record(
                &format!("idle: {count} {kind} workspaces, the server's CPU (vs no workspace)"),
                &figure(server),
                &figure(none),
                server / none.max(0.01),
                Aim::None,
            );
            // The aim: under 1 % of a core for 300, and flat in N.
            let all = server + daemons;
            record(
                &format!("idle: {count} {kind} workspaces, server and daemons (vs 1 % of a core)"),
                &figure(all),
                "1 % of a core",
                all,
                Aim::AtMost(1.0),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
