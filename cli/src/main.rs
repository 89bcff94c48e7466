//! `sluice`: the control plane's one binary.

mod api_client;
mod broker;
mod capture;
mod export;
mod gc;
mod operate;
mod settings;
mod workspaces;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};

use sluice_server::config::{ApiArgs, MetricsArgs, StoreArgs, WebhookArgs, WorkerArgs};
use sluice_server::{ApiSettings, Beside, CancellationToken};

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
    let stop = stop_on_signals();
    sluice_gateway::serve(config, stop.cancelled_owned()).await
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
    // A command that talks to the API prints its answers, not request logs.
    let quiet = matches!(
        cli.command,
        Command::Retained(_)
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
            serve_api(ApiSettings { store, api, metrics, webhooks }, Beside::Worker(Box::new(worker))).await
        }
        Command::Api { store, api, object_store, metrics, webhooks } => {
            serve_api(ApiSettings { store, api, metrics, webhooks }, Beside::ObjectStore(object_store)).await
        }
        Command::Worker { store, worker, metrics, webhooks } => {
            sluice_server::run_worker(store, worker, metrics, webhooks, stop_on_signals()).await
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

/// `serve` and `api`: the API on `--listen`.
async fn serve_api(settings: ApiSettings, beside: Beside) -> anyhow::Result<()> {
    let address = &settings.api.listen;
    let listener =
        tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
    sluice_server::serve_api(settings, beside, listener, stop_on_signals()).await
}

/// A token cancelled on SIGINT or SIGTERM.
fn stop_on_signals() -> CancellationToken {
    let stop = CancellationToken::new();
    let cancel = stop.clone();
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutting down");
        cancel.cancel();
    });
    stop
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
