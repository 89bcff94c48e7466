//! `sluice-bench routed`: the cost of reaching an executor on another host.
//! One daemon, one executor record placed on a host whose worker serves its
//! internal API on loopback (cluster credential, HTTPS); the same exec call
//! made on the host (the baseline: the daemon's socket) and routed through
//! that worker, alternately, in the same run.

use std::time::{Duration, Instant};

use crate::summary::{millis as ms, percentile};
use anyhow::Context;
use clap::Args;
use serde_json::json;
use sluice_domain::ids::{OwnerId, RunId, WorkerId};
use sluice_domain::transition::Outcome;
use sluice_executor::{Executors, Target};
use sluice_store::{NewWorkspace, RuntimeAdapter, RuntimeRecord, RuntimeStatus, Sealer, Store};

#[derive(Args, Debug)]
pub struct BenchRoutedArgs {
    /// Calls measured each way (after a warm-up).
    #[arg(long, default_value_t = 500)]
    pub count: usize,
}

const HOST: &str = "bench-host";

/// The host's worker, serving its internal API at `internal_url`.
fn member(internal_url: Option<String>) -> sluice_store::fleet::WorkerMember {
    sluice_store::fleet::WorkerMember {
        id: "bench-worker".into(),
        host: HOST.into(),
        runtime: "local".into(),
        capacity: None,
        internal_url,
        version: env!("CARGO_PKG_VERSION").into(),
        warm_pool: Vec::new(),
        images: Vec::new(),
        builder: None,
    }
}

/// A workspace whose current run is placed on [`HOST`], launched with its
/// control endpoint at `endpoint`; answers the run's id.
async fn placed_run(store: &Store, endpoint: &str) -> anyhow::Result<String> {
    store.beat(&member(None), 600_000).await?;
    let created =
        store.create_workspace(NewWorkspace::of(&OwnerId::from("bench"), "bench", "host", "bench", "1")).await?;
    let sluice_store::CreateOutcome::Created(view) = created else { anyhow::bail!("a fresh create") };
    let run_id = view.current_run.context("a first run")?.id;
    let lease = store.claim_jobs(&WorkerId::from("bench-worker"), HOST, 1, 600_000).await?.pop().context("its job")?;
    store.place_run(&lease, &run_id, HOST).await?;
    let runtime = RuntimeRecord {
        adapter: RuntimeAdapter::Local,
        resource_id: "bench".into(),
        reference: "bench".into(),
        status: RuntimeStatus::Running,
        endpoint: Some(endpoint.to_owned()),
        deadline: None,
    };
    let launched = Outcome::Launched { runtime, published: None, preservation_starts_at: None };
    store.record(&lease, &run_id, launched).await?;
    store.record(&lease, &run_id, Outcome::Ready).await?;
    store.finish_job(&lease, None, None).await?;
    Ok(run_id.to_string())
}

/// A scratch directory, removed at the end.
struct BenchDir(std::path::PathBuf);

impl BenchDir {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for BenchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub async fn run(args: BenchRoutedArgs) -> anyhow::Result<()> {
    let root = BenchDir(std::env::temp_dir().join(format!("sluice-bench-routed-{}", std::process::id())));
    std::fs::create_dir_all(root.path())?;
    let sealer = Sealer::from_key(sluice_store::seal::random_bytes::<32>());
    let store = Store::open(&format!("sqlite:{}", root.path().join("bench.db").display()), sealer).await?;

    // The daemon, with the control token the run's id derives.
    let run_dir = root.path().join("executor");
    std::fs::create_dir_all(run_dir.join("run"))?;
    std::fs::create_dir_all(run_dir.join("state"))?;
    let socket = run_dir.join("run/control.sock");
    let endpoint = format!("unix://{}", socket.display());
    let run_id = placed_run(&store, &endpoint).await?;
    let token = sluice_worker::reconcile::control_token_for(store.sealer(), &RunId::from(&run_id));
    std::fs::write(run_dir.join("run/boot-secret.json"), json!({"controlToken": token.expose()}).to_string())?;
    let mut daemon = tokio::process::Command::new(crate::sluice_binary()?)
        .arg("daemon")
        .arg("--listen")
        .arg(format!("unix:{}", socket.display()))
        .arg("--boot-secret-file")
        .arg(run_dir.join("run/boot-secret.json"))
        .arg("--state-dir")
        .arg(run_dir.join("state"))
        .arg("--workdir")
        .arg(&run_dir)
        .args(["--launch", "bench"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;

    // The host's worker serving its internal API on loopback.
    let local: std::sync::Arc<dyn Executors> =
        std::sync::Arc::new(sluice_worker::executors::LocalExecutors::new(store.clone(), None));
    let tls = sluice_worker::internal::credential::ClusterTls::new(store.sealer(), &["127.0.0.1".to_owned()])?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("https://{}", listener.local_addr()?);
    let router = sluice_server::internal::router(sluice_worker::internal::server::Serving {
        store: store.clone(),
        host: HOST.into(),
        local: local.clone(),
    });
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server_config()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(sluice_api::listener::serve_over(
        router,
        listener,
        sluice_api::listener::HttpLimits::default(),
        Some(acceptor),
        async move {
            let _ = stopped.await;
        },
    ));
    store.beat(&member(Some(url)), 600_000).await?;
    let routed = sluice_server::internal::routed(&store, None, local.clone())?;

    let target = Target { run_id: &RunId::from(&run_id), endpoint: &endpoint };
    let started = Instant::now();
    while !local.healthy(target).await {
        anyhow::ensure!(started.elapsed() < Duration::from_secs(30), "the daemon did not answer");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let request = sluice_protocol::ExecRequest { argv: vec!["true".into()], ..Default::default() };
    let timeout = Duration::from_secs(30);
    for _ in 0..20 {
        local.exec(target, request.clone(), timeout).await?;
        routed.exec(target, request.clone(), timeout).await?;
    }
    let (mut on_host, mut through_worker) = (Vec::new(), Vec::new());
    for _ in 0..args.count {
        let t = Instant::now();
        let answer = local.exec(target, request.clone(), timeout).await?;
        on_host.push(t.elapsed());
        anyhow::ensure!(answer.exit_code == 0, "exec on the host: exit {}", answer.exit_code);
        let t = Instant::now();
        let answer = routed.exec(target, request.clone(), timeout).await?;
        through_worker.push(t.elapsed());
        anyhow::ensure!(answer.exit_code == 0, "routed exec: exit {}", answer.exit_code);
    }
    let _ = stop.send(());
    let _ = serving.await;
    daemon.kill().await?;
    store.close().await;

    println!("exec of `true`, {} calls each way, alternated", args.count);
    println!("{:<28} {:>10} {:>10} {:>10}", "", "p50 ms", "p90 ms", "p99 ms");
    for (name, samples) in [("on the host (baseline)", &on_host), ("routed through its worker", &through_worker)] {
        println!(
            "{name:<28} {:>10.3} {:>10.3} {:>10.3}",
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.9)),
            ms(percentile(samples, 0.99))
        );
    }
    let (base, routed_p50) = (percentile(&on_host, 0.5), percentile(&through_worker, 0.5));
    crate::summary::record(
        "exec routed through another host's worker, p50",
        &format!("{:.3} ms", ms(routed_p50)),
        &format!("{:.3} ms", ms(base)),
        routed_p50.as_secs_f64() / base.as_secs_f64(),
        crate::summary::Aim::None,
    );
    println!(
        "routed / baseline at p50: {:.2}x; added {:.3} ms",
        routed_p50.as_secs_f64() / base.as_secs_f64(),
        ms(routed_p50.saturating_sub(base))
    );
    Ok(())
}
