//! `sluice`: the control plane's one binary.

mod bench;
mod config;

use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use sluice_api::{ApiConfig, AppState};
use tokio::sync::watch;

use config::{ApiArgs, StoreArgs};

#[derive(Parser)]
#[command(name = "sluice", version, about = "A capture/drain workspace control plane")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// API and worker in one process: the embedded default (SQLite, one data directory).
    Serve {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// The HTTP API alone (scale-out: several behind a load balancer, sharing PostgreSQL).
    Api {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        api: ApiArgs,
    },
    /// The worker alone.
    Worker {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Apply the database migrations and exit.
    Migrate {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// Measure create and replay throughput and latency against a bare insert baseline.
    Bench(bench::BenchArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The benchmark's own requests would drown its table in request logs.
    init_tracing(if matches!(cli.command, Command::Bench(_)) { "warn" } else { "info,sqlx=warn" });
    match cli.command {
        Command::Serve { store, api } => run_api(store, api, true).await,
        Command::Api { store, api } => run_api(store, api, false).await,
        Command::Worker { store } => {
            let store = store.open().await?;
            let (stop, stopped) = shutdown_signal();
            tokio::spawn(stop);
            sluice_worker::run(store.clone(), Default::default(), wait(stopped)).await;
            store.close().await;
            Ok(())
        }
        Command::Migrate { store } => {
            let store = store.open().await?;
            store.close().await;
            eprintln!("migrations applied");
            Ok(())
        }
        Command::Openapi => {
            print!("{}", sluice_api::openapi::document_text());
            Ok(())
        }
        Command::Bench(args) => bench::run(args).await,
    }
}

fn init_tracing(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| default_filter.into());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).init();
}

/// How long requests in flight may run once shutdown begins.
const HTTP_DRAIN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

async fn run_api(store_args: StoreArgs, api_args: ApiArgs, with_worker: bool) -> anyhow::Result<()> {
    store_args.ensure_data_dir()?;
    let store = store_args.open().await?;
    let api_tokens = api_args.api_tokens(&store_args.data_dir)?;
    let gateway_tokens = api_args.gateway_tokens(&store_args.data_dir)?;
    let config = ApiConfig { api_tokens, gateway_tokens, default_ttl_seconds: api_args.default_ttl_seconds };
    let listener = tokio::net::TcpListener::bind(&api_args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", api_args.listen))?;
    tracing::info!(address = %listener.local_addr()?, backend = ?store.backend(), "sluice API listening");

    let (stop, stopped) = shutdown_signal();
    tokio::spawn(stop);
    let state = AppState { store: store.clone(), config: Arc::new(config) };
    let worker =
        with_worker.then(|| tokio::spawn(sluice_worker::run(store.clone(), Default::default(), wait(stopped.clone()))));
    // HTTP stops first: in-flight requests get a bounded time to finish.
    let mut http = tokio::spawn(sluice_api::serve(state, listener, wait(stopped.clone())));
    tokio::select! {
        result = &mut http => result??,
        _ = wait(stopped) => match tokio::time::timeout(HTTP_DRAIN_DEADLINE, &mut http).await {
            Ok(result) => result??,
            Err(_) => {
                tracing::warn!(deadline_s = HTTP_DRAIN_DEADLINE.as_secs(), "requests still running at the deadline were cut off");
                http.abort();
            }
        },
    }
    if let Some(worker) = worker {
        worker.await?;
    }
    store.close().await;
    tracing::info!("sluice stopped");
    Ok(())
}

/// A task that flips the channel on SIGINT or SIGTERM.
fn shutdown_signal() -> (impl std::future::Future<Output = ()>, watch::Receiver<bool>) {
    let (tx, rx) = watch::channel(false);
    let task = async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("install SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutting down");
        let _ = tx.send(true);
    };
    (task, rx)
}

async fn wait(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stopped| *stopped).await;
}
