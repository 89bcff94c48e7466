//! `sluice-bench creates`: create and replay throughput and latency through the real
//! HTTP API, on SQLite and (when a server is given) PostgreSQL, each next to
//! a bare single-row insert into the same database measured in the same run.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use serde_json::json;
use sluice_api::{ApiConfig, AppState, TokenSet};
use sluice_domain::ids::{IdempotencyKey, OwnerId};
use sluice_store::{Sealer, Store, testing};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// A PostgreSQL server to measure too (a fresh database is made on it).
    #[arg(long, env = "SLUICE_BENCH_DATABASE_URL")]
    pub postgres_url: Option<String>,
    /// Operations per measurement.
    #[arg(long, default_value_t = 400)]
    pub count: usize,
    /// Requests in flight for the throughput measurements.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
}

struct Sample {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Sample {
    fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted[index.min(sorted.len() - 1)]
    }
}

/// Runs `op(i)` for i in 0..count with `concurrency` in flight.
async fn measure<F, Fut>(count: usize, concurrency: usize, op: F) -> anyhow::Result<Sample>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let started = Instant::now();
    let results: Vec<anyhow::Result<Duration>> = futures::stream::iter(0..count)
        .map(|i| {
            let fut = op(i);
            async move {
                let t = Instant::now();
                fut.await?;
                Ok(t.elapsed())
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let latencies = results.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Sample { latencies, elapsed: started.elapsed() })
}

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let mut targets = vec![("sqlite", None)];
    match &args.postgres_url {
        Some(url) => targets.push(("postgres", Some(url.clone()))),
        None => eprintln!("no --postgres-url / SLUICE_BENCH_DATABASE_URL: measuring SQLite only"),
    }
    println!("{:<9} {:<34} {:>12} {:>12} {:>9}", "backend", "measure", "sluice", "baseline", "ratio");
    for (label, admin) in targets {
        let dir = tempdir()?;
        let url = match &admin {
            None => format!("sqlite:{}", dir.join("bench.db").display()),
            Some(admin) => {
                testing::create_postgres_database(admin, "sluice_bench").await.context("create bench database")?
            }
        };
        let store = Store::open(&url, Sealer::from_key(sluice_store::seal::random_bytes::<32>())).await?;
        let measured = bench_backend(label, store, &args).await;
        if let Some(admin) = &admin {
            testing::drop_postgres_database(admin, &url).await.context("drop bench database")?;
        }
        let _ = std::fs::remove_dir_all(&dir);
        measured?;
    }
    Ok(())
}

fn tempdir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("sluice-bench-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn row(backend: &str, measure: &str, ours: String, base: String, ratio: f64) {
    println!("{backend:<9} {measure:<34} {ours:>12} {base:>12} {ratio:>8.2}x");
}

/// A row that is also one of the summary's figures.
fn figure(backend: &str, measure: &str, ours: String, base: String, ratio: f64, aim: crate::summary::Aim) {
    let name = match backend {
        "sqlite" => "SQLite",
        "postgres" => "PostgreSQL",
        other => other,
    };
    crate::summary::record(&format!("{measure}, {name}"), &ours, &base, ratio, aim);
    row(backend, measure, ours, base, ratio);
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn bench_backend(label: &str, store: Store, args: &BenchArgs) -> anyhow::Result<()> {
    let token = "bench-token-0123456789abcdef";
    let config = ApiConfig { api_tokens: TokenSet::new([token]), ..Default::default() };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let state = AppState::new(store.clone(), config);
    let server = tokio::spawn(sluice_api::serve(state, listener, async {
        let _ = stop_rx.await;
    }));
    let client = reqwest::Client::new();
    let (n, c) = (args.count, args.concurrency);

    store.bench_prepare().await?;
    println!("{label:<9} durability: {}", store.durability().await?);
    let insert = |_| {
        let store = store.clone();
        async move { Ok(store.bench_insert_one("{\"resources\":{\"cpus\":1}}").await?) }
    };
    let base_serial = measure(n, 1, insert).await?;
    let base_parallel = measure(n, c, insert).await?;

    let create = |prefix: &'static str| {
        let (client, base) = (client.clone(), base.clone());
        move |i: usize| {
            let (client, base) = (client.clone(), base.clone());
            async move {
                let body = json!({
                    "ownerUserId": "bench", "registryId": "host", "repository": "bench/image", "tag": "1",
                    "spec": {"resources": {"cpus": 1}}, "idempotencyKey": format!("{prefix}-{i}"),
                    "secretEnv": {"BENCH_SECRET": "value"},
                });
                let response =
                    client.post(format!("{base}/v1/workspaces")).bearer_auth(token).json(&body).send().await?;
                anyhow::ensure!(response.status() == 202, "create answered {}", response.status());
                Ok(())
            }
        }
    };
    let create_serial = measure(n, 1, create("serial")).await?;
    // The same create without HTTP: the store's own share of the latency.
    let direct = |i: usize| {
        let store = store.clone();
        async move {
            let mut new = sluice_store::NewWorkspace::of(&OwnerId::from("bench"), "bench", "host", "bench/image", "1");
            new.spec = sluice_store::spec::Spec::parse(json!({"resources": {"cpus": 1}}))?;
            let key = format!("direct-{i}-{}", uuid::Uuid::new_v4().simple());
            new.idempotency =
                Some(sluice_store::Idempotency { key: IdempotencyKey::from(key), request_hash: "h".into() });
            new.secret_env = Some(sluice_store::Secret::new([("BENCH_SECRET".to_owned(), "value".to_owned())].into()));
            store.create_workspace(new).await?;
            Ok(())
        }
    };
    let store_serial = measure(n, 1, direct).await?;
    let store_parallel = measure(n, c, direct).await?;
    let create_parallel = measure(n, c, create("parallel")).await?;
    let replay_parallel = measure(n, c, create("parallel")).await?;

    use crate::summary::Aim;
    for (name, p, aim) in [
        ("create latency p50 (one at a time)", 0.5, Aim::AtMost(3.0)),
        ("create latency p99 (one at a time)", 0.99, Aim::None),
    ] {
        let (ours, base) = (create_serial.percentile(p), base_serial.percentile(p));
        figure(label, name, ms(ours), ms(base), ours.as_secs_f64() / base.as_secs_f64(), aim);
    }
    let (ours, base) = (store_serial.percentile(0.5), base_serial.percentile(0.5));
    row(label, "of which the store, p50", ms(ours), ms(base), ours.as_secs_f64() / base.as_secs_f64());
    let per_s = |s: &Sample| format!("{:.0}/s", s.per_second());
    figure(
        label,
        &format!("create throughput ({c} in flight)"),
        per_s(&create_parallel),
        per_s(&base_parallel),
        create_parallel.per_second() / base_parallel.per_second(),
        // PostgreSQL's server shares the cores with the API here: its aim is its own.
        Aim::AtLeast(if label == "postgres" { 0.6 } else { 0.5 }),
    );
    row(
        label,
        "of which the store",
        per_s(&store_parallel),
        per_s(&base_parallel),
        store_parallel.per_second() / base_parallel.per_second(),
    );
    figure(
        label,
        &format!("replay throughput ({c} in flight)"),
        per_s(&replay_parallel),
        per_s(&base_parallel),
        replay_parallel.per_second() / base_parallel.per_second(),
        Aim::AtLeast(0.8),
    );

    store.bench_cleanup().await?;
    let _ = stop_tx.send(());
    server.await??;
    store.close().await;
    Ok(())
}
