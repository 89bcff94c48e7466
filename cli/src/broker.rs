//! `sluice broker …`: tokens (leases) and admission of the execution
//! broker, operated against the database while the server runs.

use clap::{Args, Subcommand};
use sluice_store::broker::{Admission, BrokerScope, EVERY_INSTANCE};

use sluice_server::config::StoreArgs;

#[derive(Subcommand, Debug)]
pub enum BrokerCommand {
    /// Tokens: issue, rotate, revoke.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Admission: pause, open or emergency-stop (one instance, or all).
    #[command(subcommand)]
    Admission(AdmissionCommand),
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Issue a token for an instance; prints the token and nothing else.
    Issue(IssueArgs),
    /// Supersede the instance's tokens (they work on for the grace) and print the new one.
    Rotate(RotateArgs),
    /// Revoke every token of the instance at once.
    Revoke(InstanceArgs),
}

#[derive(Args, Debug)]
pub struct InstanceArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The client instance the token authenticates.
    #[arg(long)]
    pub instance: String,
}

#[derive(Args, Debug)]
pub struct IssueArgs {
    #[command(flatten)]
    pub instance: InstanceArgs,
    /// Workspaces the instance may have at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub max_concurrency: u64,
    /// An image the instance may use (repeat; the first is the default).
    #[arg(long = "image", default_value = "sluice-test/busybox:1")]
    pub images: Vec<String>,
    /// A workspace's hard lifetime.
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_lifetime_seconds: u64,
    /// A workspace nothing touched for this long is reaped.
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_seconds: u64,
    /// The token expires after this long (default: never).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub token_ttl_seconds: Option<u64>,
    /// Live snapshots the instance may keep.
    #[arg(long, default_value_t = 20)]
    pub max_snapshots: u64,
    /// How long a snapshot lives.
    #[arg(long, default_value_t = 14 * 24 * 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub snapshot_ttl_seconds: u64,
    /// A name the instance's workspaces may be allowed to reach (repeat):
    /// `pypi.org`, `*.githubusercontent.com`, `registry.example:5000`.
    /// None given: workspaces get no outbound network at all.
    #[arg(long = "egress-ceiling", conflicts_with = "any_egress")]
    pub egress_ceiling: Vec<String>,
    /// Any name may be allowed (the lease reports a `null` ceiling).
    #[arg(long)]
    pub any_egress: bool,
}

#[derive(Args, Debug)]
pub struct RotateArgs {
    #[command(flatten)]
    pub instance: InstanceArgs,
    /// How long the superseded tokens keep working.
    #[arg(long, default_value_t = 300)]
    pub grace_seconds: u64,
}

#[derive(Subcommand, Debug)]
pub enum AdmissionCommand {
    /// Refuse new workspaces (`403 paused`).
    Pause(AdmissionArgs),
    /// Admit new workspaces again.
    Open(AdmissionArgs),
    /// Refuse new workspaces (`403 emergency_stopped`).
    EmergencyStop(AdmissionArgs),
}

#[derive(Args, Debug)]
pub struct AdmissionArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// One instance; without it, every instance.
    #[arg(long)]
    pub instance: Option<String>,
    /// Said to the client in `details.reason`.
    #[arg(long)]
    pub reason: Option<String>,
}

fn valid_instance(name: &str) -> anyhow::Result<()> {
    let ok = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && name != "."
        && name != "..";
    anyhow::ensure!(ok, "--instance must be 1 to 64 characters of [A-Za-z0-9._-]");
    Ok(())
}

pub async fn run(command: BrokerCommand) -> anyhow::Result<()> {
    match command {
        BrokerCommand::Token(TokenCommand::Issue(args)) => {
            valid_instance(&args.instance.instance)?;
            anyhow::ensure!(!args.images.is_empty(), "at least one --image");
            let store = args.instance.store.open_existing().await?;
            let egress_ceiling = match (args.any_egress, &args.egress_ceiling) {
                (true, _) => None,
                (false, entries) => {
                    for entry in entries {
                        sluice_domain::egress::Entry::parse(entry)
                            .map_err(|e| anyhow::anyhow!("--egress-ceiling {e}"))?;
                    }
                    Some(entries.clone())
                }
            };
            let scope = BrokerScope {
                egress_ceiling,
                max_concurrent_workspaces: args.max_concurrency,
                images: args.images,
                max_lifetime_seconds: args.max_lifetime_seconds,
                idle_timeout_seconds: args.idle_timeout_seconds,
                max_snapshots: args.max_snapshots,
                snapshot_ttl_seconds: args.snapshot_ttl_seconds,
            };
            let token = store.issue_broker_token(&args.instance.instance, &scope, args.token_ttl_seconds).await?;
            println!("{}", token.expose());
            store.close().await;
        }
        BrokerCommand::Token(TokenCommand::Rotate(args)) => {
            let store = args.instance.store.open_existing().await?;
            let token = store.rotate_broker_token(&args.instance.instance, args.grace_seconds).await?;
            store.close().await;
            let token =
                token.ok_or_else(|| anyhow::anyhow!("instance {} has no token to rotate", args.instance.instance))?;
            println!("{}", token.expose());
        }
        BrokerCommand::Token(TokenCommand::Revoke(args)) => {
            let store = args.store.open_existing().await?;
            let revoked = store.revoke_broker_tokens(&args.instance).await?;
            store.close().await;
            eprintln!("revoked {revoked} token(s) of instance {}", args.instance);
        }
        BrokerCommand::Admission(command) => {
            let (args, admission) = match command {
                AdmissionCommand::Pause(a) => {
                    let reason = a.reason.clone();
                    (a, Admission::Paused(reason))
                }
                AdmissionCommand::Open(a) => (a, Admission::Open),
                AdmissionCommand::EmergencyStop(a) => {
                    let reason = a.reason.clone();
                    (a, Admission::EmergencyStopped(reason))
                }
            };
            if let Some(instance) = &args.instance {
                valid_instance(instance)?;
            }
            let store = args.store.open_existing().await?;
            let target = args.instance.as_deref().unwrap_or(EVERY_INSTANCE);
            store.set_broker_admission(target, &admission).await?;
            store.close().await;
            eprintln!("admission for {target}: {}", admission.as_str());
        }
    }
    Ok(())
}
