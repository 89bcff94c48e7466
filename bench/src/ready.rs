//! `sluice-bench ready`: create → ready latency through a real `sluice
//! serve` (API, store, worker, runtime), next to a bare baseline measured in
//! the same run: the same daemon started directly (local, and local from the
//! warm pool) or `docker run` of the same image with the same daemon
//! (docker), each timed until the daemon answers `health` on its control
//! socket.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};
use sluice_executor::daemon::DaemonClient;
use sluice_store::Secret;

use crate::summary::{json_of, percentile};

#[derive(Args, Debug)]
pub struct BenchReadyArgs {
    /// Which runtimes to measure: `local`, `pool` (local, each create
    /// taking from a warm pool) and `docker`.
    #[arg(long, value_delimiter = ',', default_value = "local,pool,docker")]
    pub runtimes: Vec<String>,
    /// Workspaces (and baseline starts) per runtime.
    #[arg(long, default_value_t = 20)]
    pub count: usize,
    /// The image docker measurements run (`repository:tag`, present on the engine).
    #[arg(long, default_value = "sluice-bench/busybox:1")]
    pub image: String,
    /// Read the workspace every 2 ms until it is ready, instead of one
    /// create that waits for ready (`waitFor`).
    #[arg(long)]
    pub poll: bool,
}

const TOKEN: &str = "bench-control-token-0123456789";
const POLL: Duration = Duration::from_millis(2);

fn static_daemon() -> anyhow::Result<PathBuf> {
    let exe = crate::sluice_binary()?;
    let dir = exe.parent().context("no binary directory")?;
    let profile = dir.file_name().and_then(|n| n.to_str()).unwrap_or("release");
    let path = dir.join("..").join("x86_64-unknown-linux-gnu").join(profile).join("sluiced");
    anyhow::ensure!(path.is_file(), "no static sluiced at {}: run scripts/build-static-daemon", path.display());
    Ok(std::fs::canonicalize(path)?)
}

/// The local runtime's own launch, with nothing of sluice around it: the
/// same daemon in the same sandbox (its uid slot, its cgroup, bubblewrap
/// where it works), started from here and timed until it answers. What
/// the local runtime's isolation costs, next to what the control plane adds.
async fn baseline_sandbox(root: &Path, count: usize) -> anyhow::Result<Vec<Duration>> {
    use clap::Parser;
    #[derive(Parser)]
    struct Defaults {
        #[command(flatten)]
        worker: sluice_server::config::WorkerArgs,
    }
    let mut worker = Defaults::parse_from(["sluice"]).worker;
    // The daemon `sluice serve` starts: the sluice binary, as `sluice daemon`.
    worker.daemon_binary = Some(crate::sluice_binary()?);
    worker.daemon_subcommand = vec!["daemon".to_owned()];
    let (runtime, _) = worker.runtime(root).await?;
    let boot = json!({"controlToken": TOKEN}).to_string();
    let mut samples = Vec::new();
    for i in 0..count {
        let run_id = format!("run_bench_sandbox_{}_{i}", std::process::id());
        let request = sluice_runtime::LaunchRequest {
            workspace_id: format!("ws_bench_{i}"),
            run_id: run_id.clone(),
            launch: "bench".into(),
            registry_id: "host".into(),
            repository: "bench".into(),
            tag: "1".into(),
            spec: Default::default(),
            boot_secret: Some(Secret::new(boot.clone())),
            capture_interval_ms: 10_000,
            egress_authority: None,
            image_progress: None,
        };
        let started = Instant::now();
        let launched = runtime.launch(&request).await.map_err(|e| anyhow::anyhow!("sandboxed launch: {e}"))?;
        let endpoint = launched.record.endpoint.clone().context("the local runtime names a control socket")?;
        let socket = PathBuf::from(endpoint.trim_start_matches("unix://"));
        until_healthy(&socket, Duration::from_secs(30)).await?;
        samples.push(started.elapsed());
        // Not timed.
        runtime.remove(&run_id, &launched.record.resource_id).await.map_err(|e| anyhow::anyhow!("remove: {e}"))?;
    }
    Ok(samples)
}

/// One phase of the way to ready, from its histogram: the mean, and the
/// bucket bound its 99th percentile falls under (where the tail is).
struct Phase {
    name: String,
    mean: Duration,
    p99_under: Option<f64>,
}

/// Where a create's way to ready went, per phase, from the histograms on
/// the server's own metrics.
async fn breakdown(serve: &Serve, runtime: &str) -> anyhow::Result<Vec<Phase>> {
    let text = reqwest::Client::new()
        .get(format!("{}/metrics", serve.base))
        .bearer_auth(&serve.token)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    #[derive(Default)]
    struct Series {
        sum: f64,
        count: f64,
        buckets: Vec<(f64, f64)>,
    }
    let mut series = std::collections::BTreeMap::<String, Series>::new();
    for line in text.lines() {
        let (name, value) = match line.rsplit_once(' ') {
            Some((name, value)) => (name, value.parse::<f64>().unwrap_or(0.0)),
            None => continue,
        };
        let Some(rest) = name.strip_prefix("sluice_launch_phase_seconds_") else { continue };
        if !rest.contains(&format!("runtime=\"{runtime}\"")) {
            continue;
        }
        let label = |key: &str| rest.split(&format!("{key}=\"")).nth(1).and_then(|p| p.split('"').next());
        let Some(phase) = label("phase") else { continue };
        let entry = series.entry(phase.to_owned()).or_default();
        if rest.starts_with("sum") {
            entry.sum = value;
        } else if rest.starts_with("count") {
            entry.count = value;
        } else if let Some(le) = label("le").and_then(|le| le.parse::<f64>().ok()) {
            entry.buckets.push((le, value));
        }
    }
    let order = ["queued", "prepare"];
    let mut phases: Vec<Phase> = series
        .into_iter()
        .filter(|(_, s)| s.count > 0.0)
        .map(|(name, mut s)| {
            s.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            let p99_under = s.buckets.iter().find(|(_, below)| *below >= s.count * 0.99).map(|(le, _)| *le);
            Phase { name, mean: Duration::from_secs_f64(s.sum / s.count), p99_under }
        })
        .collect();
    let rank = |name: &str| match order.iter().position(|o| *o == name) {
        Some(i) => i,
        None if name == "first_answer" => 90,
        None if name.starts_with("record") => 91,
        None => 10,
    };
    phases.sort_by_key(|phase| rank(&phase.name));
    Ok(phases)
}

/// Waits until the daemon behind `socket` answers `health`.
async fn until_healthy(socket: &Path, deadline: Duration) -> anyhow::Result<()> {
    let client = DaemonClient::new(&format!("unix://{}", socket.display()), Secret::new(TOKEN.to_owned()))?;
    let started = Instant::now();
    while started.elapsed() < deadline {
        if client.healthy().await {
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
    bail!("the daemon on {} did not answer within {deadline:?}", socket.display())
}

fn run_dir(root: &Path, i: usize) -> anyhow::Result<PathBuf> {
    let dir = root.join(format!("b{i}"));
    std::fs::create_dir_all(dir.join("run"))?;
    std::fs::create_dir_all(dir.join("state"))?;
    std::fs::write(dir.join("run/boot-secret.json"), json!({"controlToken": TOKEN}).to_string())?;
    Ok(dir)
}

/// The local baseline: the daemon (this binary, as `sluice daemon`, the
/// program the local runtime starts) spawned directly: no sandbox, no store.
async fn baseline_local(root: &Path, count: usize) -> anyhow::Result<Vec<Duration>> {
    let daemon = crate::sluice_binary()?;
    let mut samples = Vec::new();
    for i in 0..count {
        let dir = run_dir(root, i)?;
        let socket = dir.join("run/control.sock");
        let started = Instant::now();
        let mut child = tokio::process::Command::new(&daemon)
            .arg("daemon")
            .arg("--listen")
            .arg(format!("unix:{}", socket.display()))
            .arg("--boot-secret-file")
            .arg(dir.join("run/boot-secret.json"))
            .arg("--state-dir")
            .arg(dir.join("state"))
            .arg("--workdir")
            .arg(&dir)
            .args(["--launch", "bench"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        until_healthy(&socket, Duration::from_secs(30)).await?;
        samples.push(started.elapsed());
        child.kill().await?;
    }
    Ok(samples)
}

/// The pool's other baseline: bubblewrap with the local runtime's mounts
/// and namespaces, and `setpriv` dropping to another uid with no
/// capabilities, spawning `true` and waiting for it to end: the sandbox's
/// own cost with no daemon in it. `None` without bubblewrap.
fn baseline_bare_sandbox(count: usize) -> anyhow::Result<Option<Vec<Duration>>> {
    let Some(bwrap) = ["/usr/bin/bwrap", "/bin/bwrap"].into_iter().find(|p| Path::new(p).is_file()) else {
        eprintln!("no bubblewrap: the pool's bare sandbox baseline is skipped");
        return Ok(None);
    };
    let mut samples = Vec::new();
    for _ in 0..count {
        let started = Instant::now();
        let status = Command::new(bwrap)
            .args(["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"])
            .args([
                "--ro-bind-try",
                "/bin",
                "/bin",
                "--ro-bind-try",
                "/lib",
                "/lib",
                "--ro-bind-try",
                "/lib64",
                "/lib64",
            ])
            .args(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"])
            .args(["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"])
            .args(["--", "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "/usr/bin/true"])
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "bubblewrap and setpriv did not run true");
        samples.push(started.elapsed());
    }
    Ok(Some(samples))
}

/// The docker baseline: `docker run` of the same image with the same daemon.
async fn baseline_docker(root: &Path, count: usize, image: &str) -> anyhow::Result<Vec<Duration>> {
    let daemon = static_daemon()?;
    let mut samples = Vec::new();
    for i in 0..count {
        let dir = run_dir(root, i)?;
        let name = format!("sluice-bench-baseline-{}-{i}", std::process::id());
        let started = Instant::now();
        let status = Command::new("docker")
            .args(["run", "-d", "--network", "none", "--name", &name, "--entrypoint", "/run/sluiced"])
            .arg("-v")
            .arg(format!("{}:/run/sluiced:ro", daemon.display()))
            .arg("-v")
            .arg(format!("{}:/run/sluice", dir.join("run").display()))
            .arg(image)
            .args(["--listen", "unix:/run/sluice/control.sock", "--boot-secret-file", "/run/sluice/boot-secret.json"])
            .args(["--state-dir", "/var/lib/sluice", "--launch", "bench"])
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "docker run of {image} failed");
        until_healthy(&dir.join("run/control.sock"), Duration::from_secs(60)).await?;
        samples.push(started.elapsed());
        let _ = Command::new("docker").args(["rm", "-f", &name]).stdout(Stdio::null()).status();
    }
    Ok(samples)
}

/// A `sluice serve` child on its own data directory.
pub(crate) struct Serve {
    pub(crate) child: std::process::Child,
    pub(crate) base: String,
    pub(crate) token: String,
    pub(crate) data_dir: PathBuf,
}

impl Serve {
    /// Serves `runtime`; `pool` is the local runtime keeping a warm pool of `image`.
    async fn start(root: &Path, runtime: &str, image: &str) -> anyhow::Result<Serve> {
        let pool = format!("host/{image}={POOL_SIZE}");
        let args = match runtime {
            "pool" => vec!["--runtime", "local", "--warm-pool", &pool],
            _ => vec!["--runtime", runtime],
        };
        Serve::spawn(root.join(format!("serve-{runtime}")), &args).await
    }

    /// Starts `sluice serve ARGS` on `data_dir` and waits until it answers.
    pub(crate) async fn spawn(data_dir: PathBuf, args: &[&str]) -> anyhow::Result<Serve> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut command = Command::new(crate::sluice_binary()?);
        command.arg("serve").args(args);
        let child = command
            .args(["--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(&data_dir)
            .env("SLUICE_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        for _ in 0..600 {
            if client.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
                let token = std::fs::read_to_string(data_dir.join("api-token"))?.trim().to_owned();
                return Ok(Serve { child, base, token, data_dir });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        bail!("sluice serve {} did not start", args.join(" "))
    }

    /// The server's metrics, as text.
    async fn metrics(&self) -> anyhow::Result<String> {
        let client = reqwest::Client::new();
        let answer = client.get(format!("{}/metrics", self.base)).bearer_auth(&self.token).send().await?;
        Ok(answer.error_for_status()?.text().await?)
    }

    /// Waits (untimed) until the server's warm pool is full. Read from the
    /// pool's gauges (set each time the pool is tended, at the latest after
    /// each take's ready record), not the fleet's heartbeat, which can be a
    /// beat behind: a full pool a take ago still holds one executor.
    async fn until_pooled(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let text = self.metrics().await?;
            let gauge = |state: &str| metric_sum(&text, "sluice_warm_pool_executors", "state", state);
            let target = gauge("target");
            if target > 0.0 && gauge("idle") >= target {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        bail!("the warm pool never filled")
    }

    /// How many launches took from the warm pool, and how many found it empty.
    async fn pool_takes(&self) -> anyhow::Result<(u64, u64)> {
        let text = self.metrics().await?;
        let count = |outcome: &str| metric_sum(&text, "sluice_warm_pool_takes_total", "outcome", outcome) as u64;
        Ok((count("taken"), count("empty")))
    }
}

/// The sum of the series of metric `name` whose label `key` is `value`,
/// in the text exposition `text`.
fn metric_sum(text: &str, name: &str, key: &str, value: &str) -> f64 {
    let (series, label) = (format!("{name}{{"), format!("{key}=\"{value}\""));
    text.lines()
        .filter(|l| l.starts_with(&series) && l.contains(&label))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// How many executors the `pool` measurement keeps warm.
const POOL_SIZE: usize = 2;

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
        // Executors outlive their server by design; these were only for the run.
        let _ = Command::new("pkill")
            .arg("-KILL")
            .arg("-f")
            .arg(self.data_dir.join("executors").display().to_string())
            .status();
        let label = format!("label=sluice.install={}", self.data_dir.join("executors").display());
        if let Ok(out) = Command::new("docker").args(["ps", "-aq", "--filter", &label]).output() {
            let ids: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
            if !ids.is_empty() {
                let _ = Command::new("docker").args(["rm", "-f"]).args(ids).stdout(Stdio::null()).status();
            }
        }
    }
}

/// create → ready through sluice, one workspace at a time; with `pooled`,
/// each create waits (untimed) for an idle executor in the warm pool.
async fn through_sluice(
    serve: &Serve,
    count: usize,
    image: &str,
    pooled: bool,
    poll: bool,
) -> anyhow::Result<Vec<Duration>> {
    let client = reqwest::Client::new();
    let (repository, tag) = image.split_once(':').context("--image must be repository:tag")?;
    let mut samples = Vec::new();
    for _ in 0..count {
        if pooled {
            serve.until_pooled().await?;
        }
        let mut body =
            json!({"ownerUserId": "bench", "registryId": "host", "repository": repository, "tag": tag, "spec": {}});
        if !poll {
            body["waitFor"] = json!("ready");
        }
        let started = Instant::now();
        let created: Value =
            json_of(client.post(format!("{}/v1/workspaces", serve.base)).bearer_auth(&serve.token).json(&body)).await?;
        let id = created["workspaceId"].as_str().context("no workspaceId")?.to_owned();
        let url = format!("{}/v1/workspaces/{id}?ownerUserId=bench", serve.base);
        let mut status = created["status"].as_str().map(str::to_owned);
        while status.as_deref() != Some("ready") {
            let view: Value = client.get(&url).bearer_auth(&serve.token).send().await?.json().await?;
            status = view["status"].as_str().map(str::to_owned);
            match status.as_deref() {
                Some("ready") => {}
                Some("failed") => bail!("workspace {id} failed: {}", view["error"]),
                _ if started.elapsed() > Duration::from_secs(120) => bail!("workspace {id} never became ready"),
                _ => tokio::time::sleep(POLL).await,
            }
        }
        samples.push(started.elapsed());
        // Not timed: keep the host from filling up with executors.
        client
            .post(format!("{}/v1/workspaces/{id}/stop", serve.base))
            .bearer_auth(&serve.token)
            .json(&json!({"ownerUserId": "bench"}))
            .send()
            .await?;
    }
    Ok(samples)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

pub async fn run(args: BenchReadyArgs) -> anyhow::Result<()> {
    let root = std::env::temp_dir().join(format!("sluice-bench-ready-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    println!(
        "{:<8} {:<6} {:>10} {:>12} {:>10} {:>11} {:>9}",
        "runtime", "stat", "sluice", "sandbox", "bare", "÷ sandbox", "÷ bare"
    );
    let mut breakdowns = Vec::new();
    for runtime in &args.runtimes {
        let bare_sandbox = if runtime == "pool" { baseline_bare_sandbox(args.count)? } else { None };
        let (sandbox, baseline) = match runtime.as_str() {
            "local" => (
                Some(baseline_sandbox(&root.join("baseline-sandbox"), args.count).await?),
                baseline_local(&root.join("baseline-local"), args.count).await?,
            ),
            "pool" => (None, baseline_local(&root.join("baseline-pool"), args.count).await?),
            "docker" => (None, baseline_docker(&root.join("baseline-docker"), args.count, &args.image).await?),
            other => bail!("unknown runtime {other}: local or docker"),
        };
        let serve = Serve::start(&root, runtime, &args.image).await?;
        let ours = through_sluice(&serve, args.count, &args.image, runtime == "pool", args.poll).await?;
        let labelled = if runtime == "pool" { "local" } else { runtime.as_str() };
        breakdowns.push((runtime.clone(), breakdown(&serve, labelled).await?));
        if runtime == "pool" {
            let (taken, empty) = serve.pool_takes().await?;
            println!("pool: {taken} of {} creates took from the pool, {empty} found it empty", taken + empty);
        }
        drop(serve);
        for (stat, p) in [("p50", 0.5), ("p99", 0.99)] {
            let (a, b) = (percentile(&ours, p), percentile(&baseline, p));
            use crate::summary::{Aim, record};
            let measure = format!("create -> ready, {runtime}, {stat}");
            if let Some(samples) = &bare_sandbox {
                let s = percentile(samples, p);
                let ratio = a.as_secs_f64() / s.as_secs_f64();
                record(
                    &format!("{measure} (vs bubblewrap and setpriv spawning true)"),
                    &ms(a),
                    &ms(s),
                    ratio,
                    Aim::AtMost(1.5),
                );
                println!("{runtime:<8} {stat:<6} {:>10}   bubblewrap + setpriv + true: {} ({ratio:.2}x)", ms(a), ms(s));
            }
            let (sandboxed, over_sandbox) = match &sandbox {
                Some(samples) => {
                    let s = percentile(samples, p);
                    let ratio = a.as_secs_f64() / s.as_secs_f64();
                    record(
                        &format!("{measure} (vs the same sandbox by hand)"),
                        &ms(a),
                        &ms(s),
                        ratio,
                        Aim::AtMost(1.5),
                    );
                    record(
                        &format!("{measure} (vs a bare daemon)"),
                        &ms(a),
                        &ms(b),
                        a.as_secs_f64() / b.as_secs_f64(),
                        Aim::None,
                    );
                    (ms(s), format!("{ratio:.2}x"))
                }
                None => {
                    let (against, aim) = if runtime == "pool" { ("a bare daemon", 1.0) } else { ("docker run", 1.1) };
                    record(
                        &format!("{measure} (vs {against})"),
                        &ms(a),
                        &ms(b),
                        a.as_secs_f64() / b.as_secs_f64(),
                        Aim::AtMost(aim),
                    );
                    ("-".to_owned(), "-".to_owned())
                }
            };
            println!(
                "{runtime:<8} {stat:<6} {:>10} {:>12} {:>10} {:>11} {:>8.2}x",
                ms(a),
                sandboxed,
                ms(b),
                over_sandbox,
                a.as_secs_f64() / b.as_secs_f64()
            );
        }
    }
    for (runtime, phases) in breakdowns {
        println!();
        println!("{runtime}: where create → ready goes (per phase, from the server's metrics)");
        println!("  {:<18} {:>9} {:>12}", "phase", "mean", "p99 under");
        for phase in phases {
            let tail = match phase.p99_under {
                Some(le) if le.is_finite() => format!("{:.1} ms", le * 1000.0),
                _ => "beyond".to_owned(),
            };
            println!("  {:<18} {:>6.2} ms {tail:>12}", phase.name, phase.mean.as_secs_f64() * 1000.0);
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::metric_sum;

    #[test]
    fn a_metric_is_summed_over_the_series_with_the_label() {
        let text = "# TYPE sluice_warm_pool_executors gauge\n\
            sluice_warm_pool_executors{image=\"a\",state=\"idle\"} 2\n\
            sluice_warm_pool_executors{image=\"b\",state=\"idle\"} 1\n\
            sluice_warm_pool_executors{image=\"a\",state=\"target\"} 2\n\
            sluice_warm_pool_executors_other{state=\"idle\"} 9\n";
        assert_eq!(metric_sum(text, "sluice_warm_pool_executors", "state", "idle"), 3.0);
        assert_eq!(metric_sum(text, "sluice_warm_pool_executors", "state", "target"), 2.0);
        assert_eq!(metric_sum(text, "sluice_warm_pool_executors", "state", "starting"), 0.0);
    }
}
