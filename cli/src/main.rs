//! `sluice`: the control plane's one binary.

mod api_client;
mod broker;
mod capture;
mod collection;
mod commands;
mod doctor;
mod export;
mod files;
mod gateway;
mod mcp;
mod operate;
mod processes;
mod resources;
mod settings;
mod templates;
mod workspaces;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use sluice_server::{ApiSettings, Beside, CancellationToken};

use commands::{Cli, Command, ConfigCommand, ConsoleCommand, LogFormat, SessionsCommand};

/// Runs the command; an error ends it with one line on stderr (`--debug`
/// anywhere on the command line prints its causes and backtrace instead).
fn main() -> std::process::ExitCode {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let debug = argv.iter().any(|a| a == "--debug");
    argv.retain(|a| a != "--debug");
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime starts");
    match runtime.block_on(run(argv)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            if debug {
                eprintln!("error: {e:?}");
            } else {
                eprintln!("error: {e:#}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(argv: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    if sluice_daemon::sftp_server_requested() {
        sluice_daemon::serve_sftp().await;
        return Ok(());
    }
    let printing = argv.get(1).is_some_and(|a| a == "config");
    let argv = if printing { argv } else { settings::layer(&Cli::command(), argv)?.argv };
    let cli = Cli::parse_from(argv);
    let serving = matches!(
        cli.command,
        Command::Serve(_)
            | Command::Api { .. }
            | Command::Worker { .. }
            | Command::Gateway(_)
            | Command::Daemon(_)
            | Command::Mcp(_)
    );
    if !serving {
        // What a command prints, piped into `head`, ends it quietly when the
        // pipe closes, as any filter does (sockets never raise the signal;
        // the processes that serve keep it ignored).
        // SAFETY: restores the default disposition of one signal.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
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
    let quiet = cli.command.prints_answers();
    let format = match cli.log_format {
        LogFormat::Text => sluice_telemetry::traces::LogFormat::Text,
        LogFormat::Json => sluice_telemetry::traces::LogFormat::Json,
    };
    let filter = if quiet { "warn" } else { "info,sqlx=warn" };
    // Held to the end: dropping it sends the spans still batched.
    let _tracing = sluice_telemetry::traces::init(filter, format, cli.otlp_endpoint.as_deref(), "sluice")
        .map_err(anyhow::Error::msg)?;
    match cli.command {
        Command::Serve(flags) => {
            let (settings, beside) = flags.split();
            serve_api(settings, beside).await
        }
        Command::Api { store, api, object_store, metrics, webhooks } => {
            serve_api(ApiSettings { store, api, metrics, webhooks }, Beside::ObjectStore(object_store)).await
        }
        Command::Worker { store, worker, metrics, webhooks } => {
            sluice_server::run_worker(store, worker, metrics, webhooks, stop_on_signals()).await
        }
        Command::Doctor { store: store_args, worker } => doctor::run(&store_args, &worker).await,
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
        Command::Gateway(args) => gateway::run(args).await,
        Command::Openapi => {
            print!("{}", sluice_api::openapi::document_text());
            Ok(())
        }
        Command::Daemon(_) => unreachable!("handled before tracing starts"),
        Command::Gc(args) => collection::run(args).await,
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
        Command::Images(args) => operate::images(args).await,
        Command::Discard(args) => operate::discard(args).await,
        Command::Drain(args) => operate::drain(args).await,
        Command::Workspaces(command) => exit_with(workspaces::run(command).await?),
        Command::Runs(command) => exit_with(workspaces::runs(command).await?),
        Command::Files(command) => exit_with(files::run(command).await?),
        Command::Processes(command) => exit_with(processes::run(command).await?),
        Command::Templates(command) => exit_with(templates::run(command).await?),
        Command::Previews(command) => resources::previews(command).await,
        Command::SshKeys(command) => resources::ssh_keys(command).await,
        Command::Webhooks(command) => resources::webhooks(command).await,
        Command::Mcp(args) => mcp::run(args).await,
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

/// `serve` and `api`: the API on `--listen`.
async fn serve_api(settings: ApiSettings, beside: Beside) -> anyhow::Result<()> {
    let address = &settings.api.listen;
    let listener =
        tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
    sluice_server::serve_api(settings, beside, listener, stop_on_signals()).await
}

/// A token cancelled on SIGINT or SIGTERM.
pub(crate) fn stop_on_signals() -> CancellationToken {
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
