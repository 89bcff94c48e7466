//! The `sluice` command tree: every command, its flags and their help.

use clap::{Parser, Subcommand};
use sluice_server::config::{ApiArgs, MetricsArgs, StoreArgs, WebhookArgs, WorkerArgs};

use crate::gateway::GatewayArgs;
use crate::{broker, capture, collection, files, mcp, operate, processes, resources, settings, templates, workspaces};

#[derive(Parser)]
#[command(name = "sluice", version, about = "A capture/drain workspace control plane")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// A TOML file of settings: its keys are the command's flags without
    /// the dashes. Flags and the environment win over it.
    #[arg(long = settings::CONFIG_FLAG, env = settings::CONFIG_ENV, global = true, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// How log lines are written to stderr: `text` for people, `json` (one
    /// object a line, with the span's fields) for collectors.
    #[arg(long, env = "SLUICE_LOG_FORMAT", global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Send traces over OTLP/HTTP (protobuf) to this collector
    /// (`http://HOST:4318`, or its full `/v1/traces` URL).
    #[arg(long, env = "SLUICE_OTLP_ENDPOINT", global = true, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
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
pub enum Command {
    /// API and worker in one process: the embedded default (SQLite, one data directory).
    Serve(sluice_server::ServeFlags),
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
    Gc(collection::GcArgs),
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
    /// The images in the hosts' caches: names, digest, size, shared layers,
    /// last use, executors on each (talks to the API).
    Images(operate::ImagesArgs),
    /// Templates, images built from a Dockerfile: build, list, show, logs (talks to the API).
    #[command(subcommand)]
    Templates(templates::TemplatesCommand),
    /// Workspaces: list, get, create, exec, stop, restart, events --follow (talks to the API).
    #[command(subcommand)]
    Workspaces(workspaces::WorkspacesCommand),
    /// Exec runs: `sluice runs get RUN --owner O` (talks to the API).
    #[command(subcommand)]
    Runs(workspaces::RunsCommand),
    /// A workspace's live worktree: put, get, ls, mkdir, mv, rm, cp, pack, unpack (talks to the API).
    #[command(subcommand)]
    Files(files::FilesCommand),
    /// Processes that keep running in a workspace: start, list, logs, signal, stdin (talks to the API).
    #[command(subcommand)]
    Processes(processes::ProcessesCommand),
    /// Preview URLs of a workspace's ports: create, list, revoke (talks to the API).
    #[command(subcommand)]
    Previews(resources::PreviewsCommand),
    /// SSH keys the gateway accepts: add, list, rm (talks to the API).
    #[command(subcommand)]
    SshKeys(resources::SshKeysCommand),
    /// Webhook endpoints of the event feed (talks to the API).
    #[command(subcommand)]
    Webhooks(resources::WebhooksCommand),
    /// The MCP server an agent drives one owner's workspaces with: over
    /// stdio (the agent's client starts it), or streamable HTTP with
    /// `--listen` (talks to the API).
    Mcp(mcp::McpArgs),
    /// Print a shell's completion script: `sluice completions bash > /etc/bash_completion.d/sluice`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConsoleCommand {
    /// Console sessions (one per sign-in).
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum SessionsCommand {
    /// End every console session now: each browser must sign in again.
    Revoke {
        #[command(flatten)]
        store: StoreArgs,
    },
}

impl Command {
    /// Whether the command prints answers (it talks to an API, or reads a
    /// store for an operator): then its log is warnings only.
    pub fn prints_answers(&self) -> bool {
        matches!(
            self,
            Command::Retained(_)
                | Command::Recover(_)
                | Command::Discard(_)
                | Command::Drain(_)
                | Command::Jobs(_)
                | Command::Workers(_)
                | Command::Images(_)
                | Command::Broker(_)
                | Command::Gc(_)
                | Command::Capture(_)
                | Command::Workspaces(_)
                | Command::Runs(_)
                | Command::Files(_)
                | Command::Processes(_)
                | Command::Templates(_)
                | Command::Previews(_)
                | Command::SshKeys(_)
                | Command::Webhooks(_)
                | Command::Mcp(_)
        )
    }
}

#[cfg(test)]
mod tests {
    /// Every command's flags are well formed (no two with one name): clap
    /// checks this only when a command is run, so each is checked here.
    #[test]
    fn the_command_tree_is_well_formed() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
