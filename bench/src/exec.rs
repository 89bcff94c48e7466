//! `sluice-bench exec`: what an exec costs a caller. A real `sluice serve`
//! (local runtime, the broker on its own listener) with one ready workspace
//! per API; `true` is run, alternately, by a bare fork+exec in this process
//! (the baseline), by the workspace's daemon over its control socket (what
//! the daemon alone adds), through the broker's exec (one HTTPS request),
//! and through the workspaces API (POST the run, then read it until it has
//! completed).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::ready::Serve;
use crate::summary::{Aim, json_of, millis as ms, percentile, record};
use sluice_domain::ids::RunId;

#[derive(Args, Debug)]
pub struct BenchExecArgs {
    /// Execs measured each way (after a warm-up).
    #[arg(long, default_value_t = 500)]
    pub count: usize,
}

/// The broker's aim for its exec at p50: this many times a bare fork+exec.
const BROKER_AIM: f64 = 2.0;
/// The workspaces API's aim for an exec's round trip at p50.
const API_AIM: Duration = Duration::from_millis(2);
/// The same exec asked as a stream, read until its end.
const STREAMED_AIM: Duration = Duration::from_micros(1500);

/// `true`, forked and run here with its output piped, as the daemon runs it.
fn bare_fork_exec() -> anyhow::Result<Duration> {
    let started = Instant::now();
    let out = Command::new("true").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).output()?;
    let took = started.elapsed();
    anyhow::ensure!(out.status.success(), "true failed: {}", out.status);
    Ok(took)
}

/// A client of the broker's listener that trusts only its certificate.
fn broker_client(data_dir: &Path) -> anyhow::Result<reqwest::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cert = std::fs::read(data_dir.join("broker-tls/cert.pem")).context("the broker's certificate")?;
    Ok(reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&cert)?)
        .build()?)
}

/// Issues a broker token for the bench's instance, as an operator does.
fn issue_token(data_dir: &Path) -> anyhow::Result<String> {
    let out = Command::new(crate::sluice_binary()?)
        .args(["broker", "token", "issue", "--instance", "bench", "--data-dir"])
        .arg(data_dir)
        .env("SLUICE_LOG", "warn")
        .output()?;
    anyhow::ensure!(out.status.success(), "token issue: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// Acquires a broker workspace and waits until it runs; answers its id.
async fn broker_workspace(client: &reqwest::Client, base: &str, token: &str) -> anyhow::Result<String> {
    let body = json!({"label": "bench", "egress": {"allowed_domains": []}});
    let created: Value = json_of(
        client
            .post(format!("{base}/v1/workspaces"))
            .bearer_auth(token)
            .header("idempotency-key", "bench-exec")
            .json(&body),
    )
    .await?;
    let id = created["workspace_id"].as_str().context("no workspace_id")?.to_owned();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let view: Value =
            client.get(format!("{base}/v1/workspaces/{id}")).bearer_auth(token).send().await?.json().await?;
        if view["state"] == "running" {
            return Ok(id);
        }
        if Instant::now() > deadline {
            bail!("broker workspace {id} never ran: {view}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates a workspace through the workspaces API and waits until it is
/// ready; answers its id and its run's id.
async fn api_workspace(client: &reqwest::Client, serve: &Serve) -> anyhow::Result<(String, String)> {
    let body = json!({"ownerUserId": "bench", "registryId": "host", "repository": "sluice-bench/busybox", "tag": "1",
        "spec": {}});
    let created: Value =
        json_of(client.post(format!("{}/v1/workspaces", serve.base)).bearer_auth(&serve.token).json(&body)).await?;
    let id = created["workspaceId"].as_str().context("no workspaceId")?.to_owned();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let url = format!("{}/v1/workspaces/{id}?ownerUserId=bench", serve.base);
        let view: Value = client.get(url).bearer_auth(&serve.token).send().await?.json().await?;
        if view["status"] == "ready" {
            let run = view["runtime"]["runId"].as_str().context("the ready workspace's run")?.to_owned();
            return Ok((id, run));
        }
        if Instant::now() > deadline {
            bail!("workspace {id} never became ready: {view}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One exec through the broker; checks its exit code.
async fn broker_exec(client: &reqwest::Client, base: &str, token: &str, id: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let answer: Value = json_of(
        client.post(format!("{base}/v1/workspaces/{id}/exec")).bearer_auth(token).json(&json!({"argv": ["true"]})),
    )
    .await?;
    let took = started.elapsed();
    anyhow::ensure!(answer["exit_code"] == 0, "broker exec: {answer}");
    Ok(took)
}

/// One exec run through the workspaces API: POST, then GET back to back
/// until it completed. Answers the round trip and how many reads it took.
async fn api_exec(client: &reqwest::Client, serve: &Serve, id: &str) -> anyhow::Result<(Duration, usize)> {
    let body = json!({"ownerUserId": "bench", "commands": [{"argv": ["true"]}]});
    let started = Instant::now();
    let queued: Value =
        json_of(client.post(format!("{}/v1/workspaces/{id}/exec", serve.base)).bearer_auth(&serve.token).json(&body))
            .await?;
    let run = queued["runId"].as_str().context("no runId")?.to_owned();
    let url = format!("{}/v1/runs/{run}?ownerUserId=bench", serve.base);
    let mut reads = 0;
    let mut view = queued;
    loop {
        match view["status"].as_str() {
            Some("completed") => break,
            Some("failed") => bail!("exec run {run} failed: {view}"),
            _ if started.elapsed() > Duration::from_secs(30) => bail!("exec run {run} never completed"),
            _ => {}
        }
        view = client.get(&url).bearer_auth(&serve.token).send().await?.json().await?;
        reads += 1;
    }
    let took = started.elapsed();
    anyhow::ensure!(view["exitCode"] == 0, "exec run {run}: {view}");
    Ok((took, reads))
}

/// The workspaces API's exec asked with `Accept: text/event-stream`, its
/// output read until `event: end`.
async fn api_exec_streamed(client: &reqwest::Client, serve: &Serve, id: &str) -> anyhow::Result<Duration> {
    let body = json!({"ownerUserId": "bench", "commands": [{"argv": ["true"]}]});
    let started = Instant::now();
    let mut response = client
        .post(format!("{}/v1/workspaces/{id}/exec", serve.base))
        .bearer_auth(&serve.token)
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await?
        .error_for_status()?;
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await? {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(end) = text.find("event: end") {
            let took = started.elapsed();
            anyhow::ensure!(text[end..].contains("\"exitCode\":0"), "the streamed exec did not end well: {text}");
            return Ok(took);
        }
        anyhow::ensure!(started.elapsed() < Duration::from_secs(30), "the streamed exec never ended");
    }
    bail!("the streamed exec's stream closed before its end: {text}")
}

pub async fn run(args: BenchExecArgs) -> anyhow::Result<()> {
    let root = std::env::temp_dir().join(format!("sluice-bench-exec-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    let data_dir = root.join("serve");
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let listen = format!("127.0.0.1:{port}");
    let serve = Serve::spawn(data_dir.clone(), &["--runtime", "local", "--broker-listen", &listen]).await?;
    let measured = measure(&serve, &data_dir, &format!("https://{listen}/broker"), args.count).await;
    drop(serve);
    let _ = std::fs::remove_dir_all(&root);
    measured
}

async fn measure(serve: &Serve, data_dir: &Path, broker_base: &str, count: usize) -> anyhow::Result<()> {
    let api = reqwest::Client::new();
    let broker = broker_client(data_dir)?;
    let token = issue_token(data_dir)?;
    let broker_id = broker_workspace(&broker, broker_base, &token).await?;
    let (api_id, run_id) = api_workspace(&api, serve).await?;

    // The daemon alone: its control socket, with the token the run's id derives.
    let sealer = sluice_store::Sealer::load_or_create(&data_dir.join("seal-key"))?;
    let socket = sluice_runtime::control_socket(&data_dir.join("executors"), &run_id);
    let daemon = sluice_executor::daemon::DaemonClient::new(
        &format!("unix://{}", socket.display()),
        sluice_worker::reconcile::control_token_for(&sealer, &RunId::from(&run_id)),
    )?;
    let request = sluice_protocol::ExecRequest { argv: vec!["true".into()], ..Default::default() };
    let timeout = Duration::from_secs(30);
    let daemon_exec = async || -> anyhow::Result<Duration> {
        let started = Instant::now();
        let answer = daemon.exec(&request, timeout).await?;
        let took = started.elapsed();
        anyhow::ensure!(answer.exit_code == 0, "daemon exec: exit {}", answer.exit_code);
        Ok(took)
    };

    for _ in 0..20 {
        bare_fork_exec()?;
        daemon_exec().await?;
        broker_exec(&broker, broker_base, &token, &broker_id).await?;
        api_exec(&api, serve, &api_id).await?;
        api_exec_streamed(&api, serve, &api_id).await?;
    }
    let (mut bare, mut on_socket, mut brokered, mut through_api, mut streamed, mut reads) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..count {
        bare.push(bare_fork_exec()?);
        on_socket.push(daemon_exec().await?);
        brokered.push(broker_exec(&broker, broker_base, &token, &broker_id).await?);
        let (took, read) = api_exec(&api, serve, &api_id).await?;
        through_api.push(took);
        reads += read;
        streamed.push(api_exec_streamed(&api, serve, &api_id).await?);
    }

    println!("exec of `true`, {count} times each way, alternated (local runtime, SQLite)");
    println!("{:<44} {:>9} {:>9} {:>9} {:>10}", "", "p50 ms", "p90 ms", "p99 ms", "p50 ÷ bare");
    let base = percentile(&bare, 0.5);
    let rows = [
        ("bare fork+exec (baseline)", &bare),
        ("the daemon, on its control socket", &on_socket),
        ("the broker's exec (HTTPS)", &brokered),
        ("workspaces API: POST, read until completed", &through_api),
        ("workspaces API: POST as a stream, read to end", &streamed),
    ];
    for (name, samples) in rows {
        let p50 = percentile(samples, 0.5);
        println!(
            "{name:<44} {:>9.3} {:>9.3} {:>9.3} {:>9.2}x",
            ms(p50),
            ms(percentile(samples, 0.9)),
            ms(percentile(samples, 0.99)),
            p50.as_secs_f64() / base.as_secs_f64()
        );
    }
    println!("the workspaces API's runs took {:.1} reads each on average", reads as f64 / count as f64);

    let figure = |d: Duration| format!("{:.3} ms", ms(d));
    let (socket_p50, broker_p50, api_p50) =
        (percentile(&on_socket, 0.5), percentile(&brokered, 0.5), percentile(&through_api, 0.5));
    record(
        "exec, the daemon on its socket, p50 (vs bare fork+exec)",
        &figure(socket_p50),
        &figure(base),
        socket_p50.as_secs_f64() / base.as_secs_f64(),
        Aim::None,
    );
    record(
        "exec, broker (sync), p50 (vs bare fork+exec)",
        &figure(broker_p50),
        &figure(base),
        broker_p50.as_secs_f64() / base.as_secs_f64(),
        Aim::AtMost(BROKER_AIM),
    );
    record(
        "exec, workspaces API round trip, p50 (vs its aim)",
        &figure(api_p50),
        &figure(API_AIM),
        api_p50.as_secs_f64() / API_AIM.as_secs_f64(),
        Aim::AtMost(1.0),
    );
    let streamed_p50 = percentile(&streamed, 0.5);
    record(
        "exec, workspaces API streamed to its end, p50 (vs its aim)",
        &figure(streamed_p50),
        &figure(STREAMED_AIM),
        streamed_p50.as_secs_f64() / STREAMED_AIM.as_secs_f64(),
        Aim::AtMost(1.0),
    );
    Ok(())
}
