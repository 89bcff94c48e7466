//! `sluice-bench sleep`: what a sleeping workspace costs its next user, and
//! what a fork costs, through a real `sluice serve` on the local runtime,
//! each next to a baseline measured in the same run:
//!
//! - wake: a sleeping workspace's first exec (it wakes on a new run that
//!   restores a 1,000-file, 10 MiB worktree from the object store), from
//!   the exec's request to its answer, against a plain create → ready of a
//!   capture-sourced workspace on an empty session;
//! - fork: ten forks of a 20,000-file worktree until all ten are ready,
//!   against one restore of the same capture (a fork of one).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::ready::Serve;
use crate::summary::{Aim, json_of, millis, percentile, record};

#[derive(Args, Debug)]
pub struct BenchSleepArgs {
    /// Wakes (and plain creates) measured.
    #[arg(long, default_value_t = 10)]
    pub wakes: usize,
    /// Rounds of the fork measurement (each: one restore, then ten forks).
    #[arg(long, default_value_t = 3)]
    pub fork_rounds: usize,
    /// Forks per round.
    #[arg(long, default_value_t = 10)]
    pub forks: usize,
}

const POLL: Duration = Duration::from_millis(5);
const WITHIN: Duration = Duration::from_secs(300);

struct Api {
    serve: Serve,
    client: reqwest::Client,
}

impl Api {
    async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        json_of(self.client.post(format!("{}{path}", self.serve.base)).bearer_auth(&self.serve.token).json(&body)).await
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        json_of(self.client.get(format!("{}{path}", self.serve.base)).bearer_auth(&self.serve.token)).await
    }

    async fn workspace(&self, id: &str) -> anyhow::Result<Value> {
        self.get(&format!("/v1/workspaces/{id}?ownerUserId=bench")).await
    }

    /// Waits until `done` holds of the workspace.
    async fn until(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            let view = self.workspace(id).await?;
            if done(&view) {
                return Ok(());
            }
            if view["status"] == "failed" || started.elapsed() > WITHIN {
                bail!("workspace {id} never became {what}: {view}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// A capture-sourced workspace on a new session; answers its id.
    async fn create(&self) -> anyhow::Result<String> {
        let session = self.post("/v1/capture-sessions", json!({"ownerUserId": "bench"})).await?;
        let body = json!({
            "ownerUserId": "bench", "registryId": "host", "repository": "bench", "tag": "1",
            "spec": {"command": ["sleep", "3600"], "source": {"kind": "capture", "sessionId": session["sessionId"]}},
            "captureToken": session["token"],
        });
        let created = self.post("/v1/workspaces", body).await?;
        Ok(created["workspaceId"].as_str().context("no workspaceId")?.to_owned())
    }

    /// Runs a shell script in the workspace; answers when it has ended.
    async fn sh(&self, id: &str, script: &str) -> anyhow::Result<Value> {
        let body = json!({"ownerUserId": "bench", "commands": [{"argv": ["sh", "-c", script], "timeoutMs": 600_000}]});
        let run = self.post(&format!("/v1/workspaces/{id}/exec"), body).await?;
        let run_id = run["runId"].as_str().context("no runId")?.to_owned();
        let started = Instant::now();
        loop {
            let run = self.get(&format!("/v1/runs/{run_id}?ownerUserId=bench")).await?;
            match run["status"].as_str() {
                Some("completed") if run["commands"][0]["exitCode"] == 0 => return Ok(run),
                Some("completed" | "failed") => bail!("{script}: {run}"),
                _ if started.elapsed() > WITHIN => bail!("{script} never ended"),
                _ => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// Everything the workspace wrote, registered.
    async fn flush(&self, id: &str) -> anyhow::Result<()> {
        let flushed = self
            .post(&format!("/v1/workspaces/{id}/capture/flush"), json!({"ownerUserId": "bench", "kind": "suspend"}))
            .await?;
        anyhow::ensure!(flushed["pending"] == 0, "the flush left captures pending: {flushed}");
        Ok(())
    }
}

/// `count` files of `bytes` each under `dir` of the worktree.
fn files_script(dir: &str, count: usize, bytes: usize) -> String {
    format!(
        "mkdir -p {dir} && cd {dir} && i=0; while [ $i -lt {count} ]; do \
         head -c {bytes} /dev/urandom > f$i; i=$((i+1)); done"
    )
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", millis(d))
}

pub async fn run(args: BenchSleepArgs) -> anyhow::Result<()> {
    let root = std::env::temp_dir().join(format!("sluice-bench-sleep-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    let serve = Serve::spawn(root.join("serve"), &["--runtime", "local"]).await?;
    let api = Api { serve, client: reqwest::Client::new() };

    // The baseline: a plain create → ready, one at a time.
    let mut creates = Vec::new();
    for _ in 0..args.wakes {
        let started = Instant::now();
        let id = api.create().await?;
        api.until(&id, "ready", |w| w["status"] == "ready").await?;
        creates.push(started.elapsed());
        api.post(&format!("/v1/workspaces/{id}/stop"), json!({"ownerUserId": "bench"})).await?;
    }

    // A worktree of 1,000 files, 10 MiB, slept and woken by an exec.
    let id = api.create().await?;
    api.until(&id, "ready", |w| w["status"] == "ready").await?;
    api.sh(&id, &files_script("tree", 1000, 10 * 1024)).await?;
    api.flush(&id).await?;
    let mut wakes = Vec::new();
    for _ in 0..args.wakes {
        api.post(&format!("/v1/workspaces/{id}/sleep"), json!({"ownerUserId": "bench"})).await?;
        api.until(&id, "asleep", |w| w["sleeping"].is_object()).await?;
        let started = Instant::now();
        let run = api.sh(&id, "ls tree | wc -l").await?;
        wakes.push(started.elapsed());
        let listed = run["commands"][0]["stdout"].as_str().unwrap_or_default().trim().to_owned();
        anyhow::ensure!(listed == "1000", "the woken workspace lists {listed} files, not 1000");
    }
    let (ours, baseline) = (percentile(&wakes, 0.5), percentile(&creates, 0.5));
    let ratio = ours.as_secs_f64() / baseline.as_secs_f64();
    println!("wake → the waking exec's answer (1,000 files, 10 MiB, restored from the object store)");
    println!("  p50 {}  vs create → ready p50 {}  = {ratio:.2}×  (aim ≤ 2×)", ms(ours), ms(baseline));
    let measure = "wake -> exec answer, 1,000 files / 10 MiB from the object store, p50 (vs create -> ready)";
    record(measure, &ms(ours), &ms(baseline), ratio, Aim::AtMost(2.0));

    // A worktree of 20,000 files: one restore of its capture, then ten forks.
    let source = api.create().await?;
    api.until(&source, "ready", |w| w["status"] == "ready").await?;
    api.sh(&source, &files_script("many", 20_000, 64)).await?;
    api.flush(&source).await?;
    let (mut singles, mut tens) = (Vec::new(), Vec::new());
    for _ in 0..args.fork_rounds {
        for (count, samples) in [(1, &mut singles), (args.forks, &mut tens)] {
            let started = Instant::now();
            let forked = api
                .post(&format!("/v1/workspaces/{source}/fork"), json!({"ownerUserId": "bench", "count": count}))
                .await?;
            let ids: Vec<String> = forked["items"]
                .as_array()
                .context("no items")?
                .iter()
                .filter_map(|i| i["workspaceId"].as_str().map(str::to_owned))
                .collect();
            for id in &ids {
                api.until(id, "ready", |w| w["status"] == "ready").await?;
            }
            samples.push(started.elapsed());
            for id in &ids {
                api.post(&format!("/v1/workspaces/{id}/stop"), json!({"ownerUserId": "bench"})).await?;
            }
            for id in &ids {
                api.until(id, "stopped", |w| w["status"] == "stopped").await?;
            }
        }
    }
    let (ours, baseline) = (percentile(&tens, 0.5), percentile(&singles, 0.5));
    let ratio = ours.as_secs_f64() / baseline.as_secs_f64();
    println!("fork ×{} of a 20,000-file worktree until all are ready", args.forks);
    println!("  p50 {}  vs one restore of the same capture p50 {}  = {ratio:.2}×  (aim ≤ 2×)", ms(ours), ms(baseline));
    let measure = format!("fork x{} of 20,000 files until all ready, p50 (vs one restore)", args.forks);
    record(&measure, &ms(ours), &ms(baseline), ratio, Aim::AtMost(2.0));
    drop(api);
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
