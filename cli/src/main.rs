//! `sluice`: the control plane's one binary.

mod api_client;
mod bench;
mod bench_capture;
mod bench_exec;
mod bench_idle;
mod bench_ready;
mod bench_routed;
mod bench_summary;
mod broker;
mod capture;
mod config;
mod export;
mod gc;
mod internal;
mod operate;
mod settings;
mod workspaces;

use std::sync::Arc;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};
use sluice_api::{ApiConfig, AppState};
use tokio::sync::{Notify, watch};

use config::{ApiArgs, MetricsArgs, StoreArgs, WebhookArgs, WorkerArgs};

#[derive(Parser)]
#[command(name = "sluice", version, about = "A capture/drain workspace control plane")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// A TOML file of settings: its keys are the command's flags without
    /// the dashes. Flags and the environment win over it.
    #[arg(long = settings::CONFIG_FLAG, env = settings::CONFIG_ENV, global = true, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// How log lines are written to stderr: `text` for people, `json` (one
    /// object a line, with the span's fields) for collectors.
    #[arg(long, env = "SLUICE_LOG_FORMAT", global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Send traces over OTLP/HTTP (protobuf) to this collector
    /// (`http://HOST:4318`, or its full `/v1/traces` URL).
    #[arg(long, env = "SLUICE_OTLP_ENDPOINT", global = true, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the settings a command would run with (defaults, then the
    /// file, then the environment, then flags), secrets redacted:
    /// `sluice config print [--config FILE] [serve|api|worker|gateway] [FLAGS]`.
    Print {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
}

// Parsed once at start: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// API and worker in one process: the embedded default (SQLite, one data directory).
    Serve {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        api: ApiArgs,
        #[command(flatten)]
        worker: WorkerArgs,
        #[command(flatten)]
        metrics: MetricsArgs,
        #[command(flatten)]
        webhooks: WebhookArgs,
    },
    /// The HTTP API alone (scale-out: several behind a load balancer, sharing PostgreSQL).
    Api {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        api: ApiArgs,
        /// Where captures are stored (as the workers' --object-store), for
        /// reading a session's captures back.
        #[arg(long, env = "SLUICE_OBJECT_STORE")]
        object_store: Option<String>,
        #[command(flatten)]
        metrics: MetricsArgs,
        #[command(flatten)]
        webhooks: WebhookArgs,
    },
    /// The worker alone (scale-out: several share PostgreSQL; jobs are leased).
    Worker {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        worker: WorkerArgs,
        #[command(flatten)]
        metrics: MetricsArgs,
        #[command(flatten)]
        webhooks: WebhookArgs,
    },
    /// Check the database and the runtime, and report how executors are isolated.
    Doctor {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        worker: WorkerArgs,
    },
    /// Apply the database migrations and exit.
    Migrate {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// The operator console's sign-ins.
    Console {
        #[command(subcommand)]
        command: ConsoleCommand,
    },
    /// The SSH gateway: `ssh WORKSPACE_ID@gateway` with a key registered
    /// through the API (POST /v1/ssh-keys) opens a shell, runs a command,
    /// serves sftp and forwards ports (`ssh -L`) into the workspace.
    Gateway(GatewayArgs),
    /// Print the OpenAPI document.
    Openapi,
    /// The daemon that runs inside an executor (the same program as `sluiced`).
    Daemon(sluice_daemon::cli::Args),
    /// Measure create and replay throughput and latency against a bare insert baseline.
    Bench(bench::BenchArgs),
    /// Measure create → ready latency per runtime against starting the daemon bare.
    BenchReady(bench_ready::BenchReadyArgs),
    /// Measure what idle ready workspaces cost the server and their daemons.
    BenchIdle(bench_idle::BenchIdleArgs),
    /// Measure an exec routed through the executor's worker against the same exec made on its host.
    BenchRouted(bench_routed::BenchRoutedArgs),
    /// Measure exec through the broker and the workspaces API against a bare fork+exec.
    BenchExec(bench_exec::BenchExecArgs),
    /// Measure capture, incremental capture, restore and a no-change FINAL against restic.
    BenchCapture(bench_capture::BenchCaptureArgs),
    /// Operate the execution broker: tokens (leases) and admission, against the database.
    #[command(subcommand)]
    Broker(broker::BrokerCommand),
    /// List retained executors: why, since when, recovery attempts, next attempt (talks to the API);
    /// `sluice retained export` archives one's disk.
    Retained(operate::RetainedArgs),
    /// Ask for a recovery attempt of a workspace's retained executor now.
    Recover(operate::WorkspaceArgs),
    /// End a workspace without saving its unsaved work (the owner's discard).
    Discard(operate::WorkspaceArgs),
    /// Follow a workspace's drain live until its executor is gone (or retained).
    Drain(operate::DrainArgs),
    /// Collect the object store now: forget captures past their retention and
    /// delete objects nothing kept names (the worker does it on a schedule).
    Gc(gc::GcArgs),
    /// Settings: what a command would run with.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// A capture session's timeline: list, diff, export (tar) or restore its captures (talks to the API).
    #[command(subcommand)]
    Capture(capture::CaptureCommand),
    /// The worker's jobs that failed too often and are parked (talks to the API).
    #[command(subcommand)]
    Jobs(operate::JobsCommand),
    /// The fleet: workers with health, load and version, and their hosts;
    /// `cordon`, `uncordon`, `drain` or `forget` a host (talks to the API).
    Workers(operate::WorkersArgs),
    /// Workspaces: list, get, create, exec, stop, restart, events --follow (talks to the API).
    #[command(subcommand)]
    Workspaces(workspaces::WorkspacesCommand),
    /// Exec runs: `sluice runs get RUN --owner O` (talks to the API).
    #[command(subcommand)]
    Runs(workspaces::RunsCommand),
    /// Print a shell's completion script: `sluice completions bash > /etc/bash_completion.d/sluice`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(clap::Args, Debug)]
struct GatewayArgs {
    /// Where SSH clients connect.
    #[arg(long, env = "SLUICE_GATEWAY_LISTEN", default_value = "127.0.0.1:2222")]
    listen: std::net::SocketAddr,
    /// The sluice API the gateway asks (keys, targets).
    #[arg(long, env = "SLUICE_API_URL", default_value = "http://127.0.0.1:7420")]
    api_url: String,
    /// A file holding one of the API's gateway tokens (the data directory's
    /// `gateway-token` for the embedded default).
    #[arg(long, env = "SLUICE_GATEWAY_TOKEN_FILE")]
    gateway_token_file: std::path::PathBuf,
    /// Where the gateway keeps its host key.
    #[arg(long, env = "SLUICE_GATEWAY_DATA_DIR", default_value = "sluice-gateway")]
    data_dir: std::path::PathBuf,
    /// A connection that has not signed in this long is ended.
    #[arg(long, env = "SLUICE_GATEWAY_SIGN_IN_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=600))]
    sign_in_seconds: u64,
}

async fn gateway(args: GatewayArgs) -> anyhow::Result<()> {
    let token = std::fs::read_to_string(&args.gateway_token_file)
        .map_err(|e| anyhow::anyhow!("cannot read --gateway-token-file {}: {e}", args.gateway_token_file.display()))?
        .trim()
        .to_owned();
    anyhow::ensure!(!token.is_empty(), "--gateway-token-file {} is empty", args.gateway_token_file.display());
    let config = sluice_gateway::GatewayConfig {
        listen: args.listen,
        api_url: args.api_url,
        gateway_token: token,
        data_dir: args.data_dir,
        sign_in_within: std::time::Duration::from_secs(args.sign_in_seconds),
    };
    let (stop, stopped) = shutdown_signal();
    tokio::spawn(stop);
    sluice_gateway::serve(config, wait(stopped)).await
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if sluice_daemon::sftp_server_requested() {
        sluice_daemon::serve_sftp().await;
        return Ok(());
    }
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let printing = argv.get(1).is_some_and(|a| a == "config");
    let argv = if printing { argv } else { settings::layer(&Cli::command(), argv)?.argv };
    let cli = Cli::parse_from(argv);
    if let Command::Config(ConfigCommand::Print { command }) = cli.command {
        let mut argv: Vec<std::ffi::OsString> = vec!["sluice".into()];
        if command.is_empty() {
            argv.push("serve".into());
        }
        argv.extend(command);
        if let Some(file) = cli.config {
            argv.push(format!("--{}", settings::CONFIG_FLAG).into());
            argv.push(file.into());
        }
        print!("{}", settings::print(&Cli::command(), argv)?);
        return Ok(());
    }
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(shell, &mut Cli::command(), "sluice", &mut std::io::stdout());
        return Ok(());
    }
    // One TLS provider for the process (reqwest's rustls has none of its own).
    let _ = rustls::crypto::ring::default_provider().install_default();
    if let Command::Daemon(args) = cli.command {
        return sluice_daemon::cli::run(args).await;
    }
    // Everything sluice writes (database, keys, tokens) is private to it.
    // SAFETY: umask only changes this process's file creation mask.
    unsafe { libc::umask(0o077) };
    // The benchmark's own requests would drown its table in request logs.
    let quiet = matches!(
        cli.command,
        Command::Bench(_)
            | Command::BenchReady(_)
            | Command::BenchIdle(_)
            | Command::BenchRouted(_)
            | Command::BenchExec(_)
            | Command::BenchCapture(_)
            | Command::Retained(_)
            | Command::Recover(_)
            | Command::Discard(_)
            | Command::Drain(_)
            | Command::Jobs(_)
            | Command::Workers(_)
            | Command::Broker(_)
            | Command::Gc(_)
            | Command::Capture(_)
            | Command::Workspaces(_)
            | Command::Runs(_)
    );
    let format = match cli.log_format {
        LogFormat::Text => sluice_telemetry::traces::LogFormat::Text,
        LogFormat::Json => sluice_telemetry::traces::LogFormat::Json,
    };
    let filter = if quiet { "warn" } else { "info,sqlx=warn" };
    // Held to the end: dropping it sends the spans still batched.
    let _tracing = sluice_telemetry::traces::init(filter, format, cli.otlp_endpoint.as_deref(), "sluice")
        .map_err(anyhow::Error::msg)?;
    match cli.command {
        Command::Serve { store, api, worker, metrics, webhooks } => {
            run_api(store, api, Ok(worker), metrics, webhooks).await
        }
        Command::Api { store, api, object_store, metrics, webhooks } => {
            run_api(store, api, Err(object_store), metrics, webhooks).await
        }
        Command::Worker { store: store_args, worker, metrics: metrics_args, webhooks } => {
            let store = store_args.open().await?;
            let worker_args = worker;
            let metrics = Arc::new(sluice_telemetry::Metrics::new());
            let worker = start_worker(
                &store_args,
                &worker_args,
                &webhooks,
                store.clone(),
                Arc::new(Notify::new()),
                metrics.clone(),
            )
            .await?;
            let (stop, stopped) = shutdown_signal();
            tokio::spawn(stop);
            let state = AppState::new(
                store.clone(),
                ApiConfig { control: Some(worker.executors.clone()), metrics, ..Default::default() },
            );
            let scraped = serve_metrics(&metrics_args, state, stopped.clone()).await?;
            let host = worker.config.host.clone();
            let internal =
                internal::serve(&worker_args, &store, &host, worker.executors.clone(), wait(stopped.clone())).await?;
            sluice_worker::run(worker, wait(stopped)).await;
            if let Some((_, serving)) = internal {
                let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, serving).await;
            }
            if let Some(scraped) = scraped {
                let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, scraped).await;
            }
            store.close().await;
            Ok(())
        }
        Command::Doctor { store: store_args, worker } => doctor(&store_args, &worker).await,
        Command::Console { command: ConsoleCommand::Sessions { command: SessionsCommand::Revoke { store } } } => {
            let store = store.open().await?;
            let ended = store.end_all_console_sessions().await?;
            store.close().await;
            println!("ended {ended} console sessions: every browser signs in again");
            Ok(())
        }
        Command::Migrate { store } => {
            let store = store.open().await?;
            store.close().await;
            eprintln!("migrations applied");
            Ok(())
        }
        Command::Gateway(args) => gateway(args).await,
        Command::Openapi => {
            print!("{}", sluice_api::openapi::document_text());
            Ok(())
        }
        Command::Daemon(_) => unreachable!("handled before tracing starts"),
        Command::Bench(args) => bench::run(args).await,
        Command::BenchReady(args) => bench_ready::run(args).await,
        Command::BenchIdle(args) => bench_idle::run(args).await,
        Command::BenchRouted(args) => bench_routed::run(args).await,
        Command::BenchExec(args) => bench_exec::run(args).await,
        Command::BenchCapture(args) => bench_capture::run(args).await,
        Command::Gc(args) => gc::run(args).await,
        Command::Capture(command) => capture::run(command).await,
        Command::Config(_) => unreachable!("printed before tracing starts"),
        Command::Broker(command) => broker::run(command).await,
        Command::Retained(operate::RetainedArgs { command: Some(operate::RetainedCommand::Export(args)), .. }) => {
            export::run(*args).await
        }
        Command::Retained(args) => operate::retained(args.api).await,
        Command::Recover(args) => operate::recover(args).await,
        Command::Jobs(command) => operate::jobs(command).await,
        Command::Workers(args) => operate::workers(args).await,
        Command::Discard(args) => operate::discard(args).await,
        Command::Drain(args) => operate::drain(args).await,
        Command::Workspaces(command) => exit_with(workspaces::run(command).await?),
        Command::Runs(command) => exit_with(workspaces::runs(command).await?),
        Command::Completions { .. } => unreachable!("printed before tracing starts"),
    }
}

/// Ends the process with a command's exit code (an exec's), output flushed.
fn exit_with(code: i32) -> anyhow::Result<()> {
    if code == 0 {
        return Ok(());
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

/// How long requests in flight may run once shutdown begins.
const HTTP_DRAIN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// Opens the runtime and builds this process's worker.
async fn start_worker(
    store_args: &StoreArgs,
    args: &WorkerArgs,
    webhooks: &WebhookArgs,
    store: sluice_store::Store,
    wake: Arc<Notify>,
    metrics: Arc<sluice_telemetry::Metrics>,
) -> anyhow::Result<Arc<sluice_worker::Worker>> {
    store_args.ensure_data_dir()?;
    let (runtime, unsandboxed) = args.runtime(&store_args.data_dir).await.context("cannot open the runtime")?;
    if unsandboxed {
        tracing::warn!(posture = %runtime.posture(), "executors are NOT sandboxed");
    } else {
        tracing::info!(posture = %runtime.posture(), "runtime ready");
    }
    let objects_url = args.object_store(&store_args.data_dir)?;
    let objects =
        sluice_worker::objects::Objects::open(&objects_url, store.clone()).context("cannot open the object store")?;
    tracing::info!(objects = %objects_url.describe(), "capture object store");
    let config = sluice_worker::WorkerConfig { metrics, webhooks: webhooks.policy(), ..args.worker_config()? };
    if store_args.database_url.is_none() && sole_worker_of_database(&store_args.data_dir)? {
        let expired = store.expire_predecessor_leases(&config.id).await?;
        if expired > 0 {
            tracing::info!(leases = expired, "took back the leases of this database's previous worker process");
        }
    }
    Ok(sluice_worker::Worker::new(store, runtime, config, wake, objects))
}

/// Every process that works on the embedded database holds a shared lock on
/// `DATA_DIR/sluice.db.workers` for its life. A process that gets the lock
/// exclusively first is the only one: any lease still held on the database
/// belongs to a process that is gone (a `serve` killed and restarted), and
/// is taken back at once rather than when it runs out.
fn sole_worker_of_database(data_dir: &std::path::Path) -> anyhow::Result<bool> {
    use std::os::fd::AsRawFd;
    static HELD: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
    let path = data_dir.join("sluice.db.workers");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let fd = file.as_raw_fd();
    // SAFETY: flock on a descriptor this function owns.
    let sole = unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0;
    // SAFETY: as above; blocks only while another process converts its own lock.
    if unsafe { libc::flock(fd, libc::LOCK_SH) } != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("cannot lock {}", path.display()));
    }
    let _ = HELD.set(file);
    Ok(sole)
}

/// `sluice doctor`: what works here, and how executors would be isolated.
async fn doctor(store_args: &StoreArgs, args: &WorkerArgs) -> anyhow::Result<()> {
    let store = store_args.open().await?;
    store.ping().await?;
    let (jobs, due) = store.job_counts().await?;
    println!("database   ok ({:?}); {jobs} jobs, {due} due", store.backend());
    match args.runtime(&store_args.data_dir).await {
        Ok((runtime, _)) => {
            // One line per part: the sandbox, who runs as whom, limits, disks.
            let posture = runtime.posture();
            let mut parts = posture.split("; ");
            println!("runtime    {}", parts.next().unwrap_or_default());
            for part in parts {
                println!("           {part}");
            }
            for (key, why) in runtime.unenforceable() {
                println!("refused    spec.{key}: {why}");
            }
            doctor_warm_pool(&store, args).await?;
        }
        Err(e) => {
            println!("runtime    NOT usable: {e:#}");
            store.close().await;
            anyhow::bail!("the runtime is not usable");
        }
    }
    store.close().await;
    Ok(())
}

/// The warm pool: what this configuration asks for, and each worker's
/// pool as it last reported it.
async fn doctor_warm_pool(store: &sluice_store::Store, args: &WorkerArgs) -> anyhow::Result<()> {
    for spec in &args.warm_pool {
        println!("warm pool  {} executors of {} asked", spec.size, spec.image);
    }
    for worker in store.workers().await? {
        for level in &worker.member.warm_pool {
            println!(
                "warm pool  {} on {} (worker {}): {} idle, {} starting, keeps {}",
                level.image, worker.member.host, worker.member.id, level.idle, level.starting, level.target
            );
        }
    }
    Ok(())
}

/// The API, with its own worker (`serve`) or alone with the object store
/// it reads captures from.
async fn run_api(
    store_args: StoreArgs,
    api_args: ApiArgs,
    worker_or_objects: Result<WorkerArgs, Option<String>>,
    metrics_args: MetricsArgs,
    webhooks: WebhookArgs,
) -> anyhow::Result<()> {
    let (mut worker_args, object_store) = match worker_or_objects {
        Ok(worker) => (Some(worker), None),
        Err(object_store) => (None, object_store),
    };
    // The embedded default is complete: its worker serves its executors on
    // a loopback port of its own, so a gateway beside it (and previews)
    // reach them with no flag.
    let loopback_internal = match worker_args.as_mut() {
        Some(args) if args.internal_listen.is_none() => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").context("cannot listen on loopback")?;
            args.internal_listen = Some(listener.local_addr()?.to_string());
            Some(listener)
        }
        _ => None,
    };
    store_args.ensure_data_dir()?;
    let store = store_args.open().await?;
    let api_tokens = api_args.api_tokens(&store_args.data_dir)?;
    let gateway_tokens = api_args.gateway_tokens(&store_args.data_dir)?;
    let wake = Arc::new(Notify::new());
    let broker_wake = wake.clone();
    // One registry for the process: its API's counters and its worker's.
    let metrics = Arc::new(sluice_telemetry::Metrics::new());
    let worker = match &worker_args {
        Some(args) => {
            Some(start_worker(&store_args, args, &webhooks, store.clone(), wake.clone(), metrics.clone()).await?)
        }
        None => None,
    };
    let objects = match &worker {
        Some(worker) => Some(worker.objects().clone()),
        None => {
            use sluice_worker::objects::{ObjectStoreUrl, Objects};
            let url = match &object_store {
                Some(text) => ObjectStoreUrl::parse(text).map_err(|e| anyhow::anyhow!("--object-store: {e}"))?,
                None => ObjectStoreUrl::Local(std::path::absolute(store_args.data_dir.join("objects"))?),
            };
            Some(Objects::open(&url, store.clone()).context("cannot open the object store")?)
        }
    };
    // Serving its own worker, the API knows what the runtime cannot enforce.
    let unenforceable = worker
        .as_ref()
        .map(|w| w.runtime.unenforceable().into_iter().map(|(resource, why)| (resource.to_owned(), why)).collect());
    // One reaches executors' daemons (here, or on their hosts) and reads
    // captures back out of the store.
    let local = Arc::new(sluice_worker::executors::LocalExecutors::new(store.clone(), objects.clone()));
    let here = worker.as_ref().map(|w| w.config.host.clone());
    let control = internal::routed(&store, here, local.clone())?;
    let mut config = ApiConfig {
        api_tokens,
        gateway_tokens,
        default_ttl_seconds: api_args.default_ttl_seconds,
        http: api_args.http_limits(),
        unenforceable,
        capture_defaults: api_args.capture_defaults(),
        control: Some(control.clone()),
        captures: Some(local),
        cluster_authority: Some(internal::authority(&store)?),
        previews: None,
        metrics,
        webhook_allow_private: webhooks.webhook_allow_private,
    };
    let listener = tokio::net::TcpListener::bind(&api_args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", api_args.listen))?;
    tracing::info!(address = %listener.local_addr()?, backend = ?store.backend(), "sluice API listening");

    let previews = match (&api_args.preview_listen, &api_args.preview_domain) {
        (Some(address), Some(domain)) => {
            let listener =
                tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
            let listen_port = listener.local_addr()?.port();
            let url_port = api_args.preview_url_port.unwrap_or(listen_port);
            config.previews = Some(sluice_api::PreviewSettings {
                domain: domain.clone(),
                scheme: "https",
                url_port: (url_port != 443).then_some(url_port),
            });
            let tls =
                if api_args.preview_plaintext { None } else { Some(preview_tls(&store_args, &api_args, domain)?) };
            tracing::info!(
                address = %listener.local_addr()?,
                %domain,
                tls = if tls.is_some() { "here" } else { "terminated in front" },
                "previews listening at https://PORT-WORKSPACEID.{domain}/"
            );
            Some((listener, tls.map(|t| t.acceptor)))
        }
        _ => None,
    };
    let (stop, stopped) = shutdown_signal();
    tokio::spawn(stop);
    let mut state = AppState::new(store.clone(), config);
    state.closing = Some(stopped.clone());
    let internal = match (&worker, &worker_args) {
        (Some(worker), Some(args)) => {
            let host = worker.config.host.clone();
            let executors = worker.executors.clone();
            internal::serve_on(args, loopback_internal, &store, &host, executors, wait(stopped.clone())).await?
        }
        _ => None,
    };
    let worker = worker.map(|worker| {
        state.wake = Some(wake);
        tokio::spawn(sluice_worker::run(worker, wait(stopped.clone())))
    });
    let broker = match &api_args.broker_listen {
        Some(address) => {
            let tls = broker::tls(&store_args, &api_args)?;
            let listener =
                tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
            tracing::info!(
                address = %listener.local_addr()?,
                certificate = %tls.cert_path.display(),
                fingerprint = %tls.fingerprint,
                "execution broker listening (HTTPS only) at /broker/v1"
            );
            let router = sluice_broker::router(sluice_broker::BrokerState {
                store: store.clone(),
                wake: Some(broker_wake.clone()),
                control: Some(control.clone()),
            });
            let limits = sluice_api::listener::HttpLimits {
                max_body_bytes: sluice_broker::MAX_BODY_BYTES,
                ..api_args.http_limits()
            };
            let serving =
                sluice_api::listener::serve_over(router, listener, limits, Some(tls.acceptor), wait(stopped.clone()));
            Some(tokio::spawn(serving))
        }
        None => None,
    };
    let scraped = serve_metrics(&metrics_args, state.clone(), stopped.clone()).await?;
    let previews = previews.map(|(listener, tls)| {
        tokio::spawn(sluice_api::preview::serve(state.clone(), listener, tls, wait(stopped.clone())))
    });
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
    if let Some(broker) = broker {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, broker).await;
    }
    if let Some(previews) = previews {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, previews).await;
    }
    if let Some(scraped) = scraped {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, scraped).await;
    }
    if let Some(worker) = worker {
        worker.await?;
    }
    if let Some((_, serving)) = internal {
        let _ = tokio::time::timeout(HTTP_DRAIN_DEADLINE, serving).await;
    }
    store.close().await;
    tracing::info!("sluice stopped");
    Ok(())
}

/// Serves `GET /metrics` with no token on `--metrics-listen`, if given.
async fn serve_metrics(
    args: &MetricsArgs,
    state: AppState,
    stopped: watch::Receiver<bool>,
) -> anyhow::Result<Option<tokio::task::JoinHandle<std::io::Result<()>>>> {
    let Some(address) = &args.metrics_listen else { return Ok(None) };
    let listener =
        tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
    tracing::info!(address = %listener.local_addr()?, "metrics listening at /metrics (no token)");
    let limits = state.config.http.clone();
    let router = sluice_api::metrics_router(state);
    Ok(Some(tokio::spawn(sluice_api::listener::serve(router, listener, limits, wait(stopped)))))
}

/// The preview listener's TLS: the operator's pair, or one generated for
/// `*.DOMAIN` (kept per domain).
fn preview_tls(
    store: &config::StoreArgs,
    api: &config::ApiArgs,
    domain: &str,
) -> anyhow::Result<sluice_broker::tls::BrokerTls> {
    let (cert, key) = match (&api.preview_tls_cert, &api.preview_tls_key) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        _ => {
            let dir = store.data_dir.join("preview-tls").join(domain);
            sluice_broker::tls::ensure_self_signed_for(&dir, &[&format!("*.{domain}"), domain])?
        }
    };
    // HTTP/2 for the clients that offer it, HTTP/1.1 for the others.
    Ok(sluice_broker::tls::load_offering(&cert, &key, &[b"h2", b"http/1.1"])?)
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

#[derive(Subcommand, Debug)]
enum ConsoleCommand {
    /// Console sessions (one per sign-in).
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
}

#[derive(Subcommand, Debug)]
enum SessionsCommand {
    /// End every console session now: each browser must sign in again.
    Revoke {
        #[command(flatten)]
        store: StoreArgs,
    },
}
