//! Operator commands, talking to a running sluice API: list retained
//! executors, ask for a recovery, discard unsaved work, and follow a drain
//! live.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use indicatif::{HumanBytes, ProgressBar, ProgressStyle};
use serde_json::Value;

pub use crate::api_client::ApiClientArgs;
use crate::api_client::{Api, failed, json};

#[derive(Args, Debug, Clone)]
pub struct RetainedArgs {
    #[command(subcommand)]
    pub command: Option<RetainedCommand>,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum RetainedCommand {
    /// Archive a retained executor's disk as tar, on its host, straight from
    /// the runtime (nothing needs to run): `sluice retained export WS --owner O > disk.tar`.
    Export(Box<crate::export::ExportArgs>),
}

#[derive(Args, Debug, Clone)]
pub struct WorkspaceArgs {
    /// The workspace.
    pub workspace_id: String,
    /// Its owner.
    #[arg(long = "owner")]
    pub owner_user_id: String,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

#[derive(Args, Debug, Clone)]
pub struct DrainArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Ask for the stop first (otherwise follow a drain already asked for).
    #[arg(long)]
    pub stop: bool,
    /// Give up following after this many seconds (the drain goes on).
    #[arg(long, default_value_t = 3600)]
    pub timeout_seconds: u64,
}

/// `sluice retained`: every retained executor, why, since when, and its
/// recovery.
pub async fn retained(args: ApiClientArgs) -> anyhow::Result<()> {
    let api = Api::new(&args)?;
    let list = json(api.client.list_retained_executors().limit("1000").send().await.map_err(failed)?);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        println!("no retained executors");
        return Ok(());
    }
    println!("{:<36} {:<16} {:<24} {:>8} {:<24} REASON", "WORKSPACE", "OWNER", "SINCE", "ATTEMPTS", "NEXT ATTEMPT");
    for item in items {
        let r = &item["captureDrain"]["retained"];
        let next = match (r["recoverable"].as_bool(), r["nextRecoveryAt"].as_str()) {
            (Some(false), _) => "not recoverable here".to_owned(),
            (_, Some(at)) => at.to_owned(),
            _ => "-".to_owned(),
        };
        let mut reason = r["reason"].as_str().unwrap_or("").to_owned();
        if let Some(error) = r["lastRecoveryError"].as_str() {
            reason.push_str(&format!(" (last attempt: {error})"));
        }
        println!(
            "{:<36} {:<16} {:<24} {:>8} {:<24} {reason}",
            item["workspaceId"].as_str().unwrap_or(""),
            item["ownerUserId"].as_str().unwrap_or(""),
            r["since"].as_str().unwrap_or(""),
            r["recoveryAttempts"].as_i64().unwrap_or(0),
            next,
        );
    }
    Ok(())
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum JobsCommand {
    /// List the parked jobs: kind, subject, attempts, since when and why.
    Failed(ApiClientArgs),
    /// Bring a parked job back: due now, its attempts counted afresh.
    Retry {
        /// `reconcile` or `exec`.
        kind: String,
        /// The workspace (reconcile) or exec run (exec).
        subject: String,
        #[command(flatten)]
        api: ApiClientArgs,
    },
}

/// `sluice jobs failed` and `sluice jobs retry`.
pub async fn jobs(command: JobsCommand) -> anyhow::Result<()> {
    match command {
        JobsCommand::Failed(args) => {
            let api = Api::new(&args)?;
            let list = json(api.client.list_failed_jobs().limit("1000").send().await.map_err(failed)?);
            let items = list["items"].as_array().cloned().unwrap_or_default();
            if items.is_empty() {
                println!("no parked jobs");
                return Ok(());
            }
            println!("{:<10} {:<40} {:>8} {:<24} LAST ERROR", "KIND", "SUBJECT", "ATTEMPTS", "PARKED AT");
            for job in items {
                println!(
                    "{:<10} {:<40} {:>8} {:<24} {}",
                    job["kind"].as_str().unwrap_or(""),
                    job["subject"].as_str().unwrap_or(""),
                    job["attempts"].as_i64().unwrap_or(0),
                    job["failedAt"].as_str().unwrap_or(""),
                    job["lastError"].as_str().unwrap_or(""),
                );
            }
            Ok(())
        }
        JobsCommand::Retry { kind, subject, api } => {
            let api = Api::new(&api)?;
            let retry = api.client.retry_job().body_map(|b| b.kind(kind.clone()).subject(subject.clone()));
            let answer = json(retry.send().await.map_err(failed)?);
            if answer["retried"].as_bool() == Some(true) {
                println!("{kind} {subject}: due again now");
                Ok(())
            } else {
                anyhow::bail!("no parked {kind} job for {subject}")
            }
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct WorkersArgs {
    #[command(subcommand)]
    pub command: Option<WorkersCommand>,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum WorkersCommand {
    /// The host takes no new executor; what runs there goes on.
    Cordon(HostArgs),
    /// The host takes new executors again.
    Uncordon(HostArgs),
    /// Cordon the host, then stop every workspace on it (each drains as any
    /// stop does: saved first, or retained).
    Drain(HostArgs),
    /// Declare the host lost with its executors: each is failed as
    /// executor-lost, and whatever it had not saved is given up.
    Forget(HostArgs),
}

#[derive(Args, Debug, Clone)]
pub struct HostArgs {
    /// The host, as `sluice workers` lists it.
    pub host: String,
    /// Who asks (recorded with the change); the login name by default.
    #[arg(long, env = "USER", default_value = "operator")]
    pub by: String,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

fn check_host(host: &str) -> anyhow::Result<()> {
    // Host names are letters, digits, '.', '-' and '_' (see --host-name).
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    anyhow::ensure!(!host.is_empty() && host.chars().all(plain), "no host is named like that: {host:?}");
    Ok(())
}

/// `sluice workers` and its host commands.
pub async fn workers(args: WorkersArgs) -> anyhow::Result<()> {
    let (action, host) = match args.command {
        None => return list_workers(&Api::new(&args.api)?).await,
        Some(WorkersCommand::Cordon(h)) => ("cordon", h),
        Some(WorkersCommand::Uncordon(h)) => ("uncordon", h),
        Some(WorkersCommand::Drain(h)) => ("drain", h),
        Some(WorkersCommand::Forget(h)) => ("forget", h),
    };
    let api = Api::new(&host.api)?;
    check_host(&host.host)?;
    let (c, name, by) = (&api.client, host.host.as_str(), host.by.clone());
    let answer = match action {
        "cordon" => json(c.cordon_host().host(name).body_map(|b| b.by(by)).send().await.map_err(failed)?),
        "uncordon" => json(c.uncordon_host().host(name).body_map(|b| b.by(by)).send().await.map_err(failed)?),
        "drain" => json(c.drain_host().host(name).body_map(|b| b.by(by)).send().await.map_err(failed)?),
        _ => json(c.forget_host().host(name).body_map(|b| b.by(by)).send().await.map_err(failed)?),
    };
    match action {
        "drain" => {
            let stopping = answer["stopping"].as_array().cloned().unwrap_or_default();
            println!("{}: cordoned; stopping {} workspaces", host.host, stopping.len());
            for id in stopping {
                println!("  {}", id.as_str().unwrap_or(""));
            }
        }
        "forget" => {
            let lost = answer["lostRuns"].as_array().cloned().unwrap_or_default();
            println!("{}: declared lost; {} executors written off", host.host, lost.len());
            for run in lost {
                println!("  {}", run.as_str().unwrap_or(""));
            }
        }
        _ => println!("{}: {action}ed", host.host),
    }
    Ok(())
}

#[derive(Args, Debug, Clone)]
pub struct ImagesArgs {
    #[command(subcommand)]
    pub command: Option<ImagesCommand>,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum ImagesCommand {
    /// Puts an image into this host's cache from a file: an OCI image
    /// layout (a directory or a tar of one) or a `docker save` archive.
    Import(ImportArgs),
    /// Pulls an image into this host's cache (again, for a tag: what the
    /// registry has now), with a progress bar on a terminal.
    Pull(PullArgs),
    /// Removes an image (by name, `registryId/repository:tag`, or digest)
    /// from this host's cache; refused while an executor runs on it.
    Remove(RemoveArgs),
    /// Removes every image of this host's cache that no executor runs on.
    Prune(CacheArgs),
}

#[derive(Args, Debug, Clone)]
pub struct CacheArgs {
    /// The data directory whose image cache it is (its executors, under
    /// `executors/`, say which images are in use).
    #[arg(long, env = "SLUICE_DATA_DIR", default_value = "sluice-data")]
    pub data_dir: PathBuf,
    /// Where the host's executors are, when not DATA_DIR/executors.
    #[arg(long, env = "SLUICE_EXECUTORS_DIR")]
    pub executors_dir: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct PullArgs {
    /// `registryId/repository:tag` (or `@sha256:…`), the registry id as `--registry` maps it.
    pub image: String,
    #[command(flatten)]
    pub registry: sluice_server::config::RegistryArgs,
    /// The data directory whose image cache takes it.
    #[arg(long, env = "SLUICE_DATA_DIR", default_value = "sluice-data")]
    pub data_dir: PathBuf,
}

/// `registryId/repository:tag` or `registryId/repository@sha256:…`.
fn image_name(text: &str) -> anyhow::Result<sluice_images::ImageName> {
    let (registry_id, rest) = text.split_once('/').context("an image is registryId/repository:tag")?;
    let (repository, reference) = match rest.split_once('@') {
        Some((repository, digest)) => (repository, digest),
        None => rest.rsplit_once(':').filter(|(_, t)| !t.contains('/')).unwrap_or((rest, "latest")),
    };
    sluice_images::ImageName::new(registry_id, repository, reference).map_err(anyhow::Error::msg)
}

/// Pulls `name` into the cache at `data_dir`, showing its bytes as they come
/// (a bar on a terminal, nothing otherwise); answers what it pulled.
async fn pull(args: &PullArgs) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    let name = image_name(&args.image)?;
    let root = std::path::absolute(args.data_dir.join("images"))?;
    let cache = sluice_images::ImageCache::open(&root, args.registry.registries()?, sluice_runtime::is_root())?;
    let progress = std::sync::Arc::new(sluice_images::PullProgress::default());
    let bar = if std::io::stderr().is_terminal() { ProgressBar::new(0) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(name.to_string());
    let pulling = cache.pull(&name, Some(progress.clone()));
    tokio::pin!(pulling);
    let pulled = loop {
        tokio::select! {
            pulled = &mut pulling => break pulled,
            _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                let (done, total) = progress.read();
                bar.set_length(total);
                bar.set_position(done.min(total));
            }
        }
    };
    bar.finish_and_clear();
    let prepared = pulled?;
    match prepared.pulled {
        Some(stats) => println!(
            "{} {name}: {} in {} layers fetched ({} cached) in {:.1} s",
            prepared.digest,
            HumanBytes(stats.bytes),
            stats.layers_fetched,
            stats.layers_cached,
            stats.seconds
        ),
        None => println!("{} {name}: cached", prepared.digest),
    }
    Ok(())
}

#[derive(Args, Debug, Clone)]
pub struct RemoveArgs {
    /// The image's name or digest.
    pub image: String,
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// The OCI layout directory, or the tar archive.
    pub file: PathBuf,
    /// Its name, `repository:tag` (default: the names the archive gives).
    #[arg(long)]
    pub name: Option<String>,
    /// The registry id creates name it under (an id no `--registry` maps).
    #[arg(long, default_value = "local")]
    pub registry_id: String,
    /// The data directory whose image cache takes it.
    #[arg(long, env = "SLUICE_DATA_DIR", default_value = "sluice-data")]
    pub data_dir: PathBuf,
}

/// The host's image cache and the images its executors run on.
fn open_cache(args: &CacheArgs) -> anyhow::Result<(sluice_images::ImageStore, std::collections::HashMap<String, u32>)> {
    let store = sluice_images::ImageStore::open(&args.data_dir.join("images"))?;
    let executors = args.executors_dir.clone().unwrap_or_else(|| args.data_dir.join("executors"));
    Ok((store, sluice_runtime::local::images_in_use(&executors)))
}

/// `sluice images`: every host's cached images, as its workers last
/// reported them; `import` puts one into this host's cache.
pub async fn images(args: ImagesArgs) -> anyhow::Result<()> {
    match args.command {
        Some(ImagesCommand::Import(import)) => {
            let store = sluice_images::ImageStore::open(&import.data_dir.join("images"))?;
            let imported = store.import(&import.file, &import.registry_id, import.name.as_deref()).await?;
            println!("{} {}", imported.digest, imported.names.join(" "));
            return Ok(());
        }
        Some(ImagesCommand::Pull(args)) => return pull(&args).await,
        Some(ImagesCommand::Remove(remove)) => {
            let (store, in_use) = open_cache(&remove.cache)?;
            let digest = sluice_images::Digest::parse(&remove.image)
                .or_else(|| store.lookup(&remove.image))
                .filter(|d| store.image(d).is_some())
                .ok_or_else(|| anyhow::anyhow!("no image named {:?} is in this host's cache", remove.image))?;
            if let Some(executors) = in_use.get(digest.as_str()) {
                bail!("image {digest}: {executors} executors run on it here; it stays");
            }
            store.remove(&digest).await?;
            println!("removed {digest}");
            return Ok(());
        }
        Some(ImagesCommand::Prune(cache)) => {
            let (store, in_use) = open_cache(&cache)?;
            let mut in_use: std::collections::HashSet<String> = in_use.into_keys().collect();
            // A template's image may be its only copy: removed by name only.
            let templates = store.list().into_iter().filter(|i| i.names.iter().any(|n| n.starts_with("templates/")));
            in_use.extend(templates.map(|i| i.record.digest));
            for image in store.evict(0, &in_use).await? {
                println!("removed {} {}", image.record.digest, image.names.join(" "));
            }
            return Ok(());
        }
        None => {}
    }
    let api = Api::new(&args.api)?;
    let listed = json(api.client.list_images().send().await.map_err(failed)?);
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        println!("no host has an image cached");
        return Ok(());
    }
    println!(
        "{:<24} {:<71} {:>10} {:>14} {:>9} {:<24} NAMES",
        "HOST", "DIGEST", "SIZE", "LAYERS", "EXECUTORS", "LAST USED"
    );
    for image in items {
        let names: Vec<&str> = image["names"].as_array().into_iter().flatten().filter_map(|n| n.as_str()).collect();
        println!(
            "{:<24} {:<71} {:>10} {:>14} {:>9} {:<24} {}",
            image["host"].as_str().unwrap_or(""),
            image["digest"].as_str().unwrap_or(""),
            format!("{:.1} MiB", image["sizeBytes"].as_u64().unwrap_or(0) as f64 / (1u64 << 20) as f64),
            format!(
                "{} ({} shared)",
                image["layers"].as_u64().unwrap_or(0),
                image["sharedLayers"].as_u64().unwrap_or(0)
            ),
            image["executors"].as_u64().unwrap_or(0),
            image["lastUsedAt"].as_str().unwrap_or(""),
            names.join(", "),
        );
    }
    Ok(())
}

async fn list_workers(api: &Api) -> anyhow::Result<()> {
    let fleet = json(api.client.list_workers().send().await.map_err(failed)?);
    let hosts = fleet["hosts"].as_array().cloned().unwrap_or_default();
    if hosts.is_empty() {
        println!("no workers have joined");
        return Ok(());
    }
    println!("{:<24} {:<12} {:>8} {:>7} {:<10} NOTE", "HOST", "STATE", "LOAD", "WORKERS", "NEW WORK");
    for host in &hosts {
        let mut note = String::new();
        if let Some(by) = host["cordoned"]["by"].as_str() {
            note.push_str(&format!("cordoned by {by} at {}", host["cordoned"]["at"].as_str().unwrap_or("")));
        }
        if let Some(by) = host["forgotten"]["by"].as_str() {
            note.push_str(&format!("forgotten by {by} at {}", host["forgotten"]["at"].as_str().unwrap_or("")));
        }
        println!(
            "{:<24} {:<12} {:>8} {:>7} {:<10} {note}",
            host["name"].as_str().unwrap_or(""),
            host["state"].as_str().unwrap_or(""),
            match host["capacity"].as_i64() {
                Some(capacity) => format!("{}/{capacity}", host["load"].as_i64().unwrap_or(0)),
                None => format!("{}", host["load"].as_i64().unwrap_or(0)),
            },
            host["liveWorkers"].as_i64().unwrap_or(0),
            if host["takesNewWork"].as_bool() == Some(true) { "yes" } else { "no" },
        );
    }
    println!();
    println!("{:<40} {:<24} {:<8} {:<10} {:<10} LAST HEARTBEAT", "WORKER", "HOST", "RUNTIME", "HEALTH", "VERSION");
    for worker in fleet["items"].as_array().cloned().unwrap_or_default() {
        println!(
            "{:<40} {:<24} {:<8} {:<10} {:<10} {}",
            worker["id"].as_str().unwrap_or(""),
            worker["host"].as_str().unwrap_or(""),
            worker["runtime"].as_str().unwrap_or(""),
            worker["health"].as_str().unwrap_or(""),
            worker["version"].as_str().unwrap_or(""),
            worker["heartbeatAt"].as_str().unwrap_or(""),
        );
    }
    Ok(())
}

/// `sluice recover`: a recovery attempt of the retained executor, now.
pub async fn recover(args: WorkspaceArgs) -> anyhow::Result<()> {
    let api = Api::new(&args.api)?;
    let recover = api.client.recover_workspace().workspace_id(&args.workspace_id);
    let owner = args.owner_user_id.clone();
    let answer = json(recover.body_map(|b| b.owner_user_id(owner)).send().await.map_err(failed)?);
    match (answer["state"].as_str(), answer["recoverable"].as_bool()) {
        (Some("requested"), Some(true)) => {
            println!("recovery requested: the executor restarts on its own disk and is drained");
        }
        (Some("requested"), _) => println!("recovery requested, but its runtime cannot restart it: it is reported"),
        _ => println!("nothing is retained for {}", args.workspace_id),
    }
    Ok(())
}

/// `sluice discard`: end the workspace without saving its unsaved work.
pub async fn discard(args: WorkspaceArgs) -> anyhow::Result<()> {
    let api = Api::new(&args.api)?;
    let stop = api.client.stop_workspace().workspace_id(&args.workspace_id);
    let owner = args.owner_user_id.clone();
    stop.body_map(|b| b.owner_user_id(owner).discard_unsaved(true)).send().await.map_err(failed)?;
    println!("discard recorded: the executor is terminated without a drain");
    Ok(())
}

/// What a drain reads as, on one line.
fn drain_line(workspace: &Value) -> String {
    let drain = &workspace["captureDrain"];
    let state = drain["state"].as_str().unwrap_or("waiting");
    let detail = drain["detail"].as_str().unwrap_or("");
    let left = drain["pending"].as_u64().unwrap_or(0);
    let bytes = HumanBytes(drain["pendingBytes"].as_u64().unwrap_or(0));
    match state {
        "draining" => format!("saving · {left} left · {bytes} pending"),
        "kept" => format!("kept · {left} left · {bytes} pending · {detail}"),
        "saved" => "saved · removing the executor".to_owned(),
        _ if workspace["status"] == "retained" => {
            format!("retained · {}", drain["retained"]["reason"].as_str().unwrap_or(detail))
        }
        other if detail.is_empty() => other.to_owned(),
        other => format!("{other} · {detail}"),
    }
}

/// `sluice drain`: follow a workspace's drain until its executor is gone
/// (or retained), with a live progress line.
pub async fn drain(args: DrainArgs) -> anyhow::Result<()> {
    let w = &args.workspace;
    let api = Api::new(&w.api)?;
    if args.stop {
        let owner = w.owner_user_id.clone();
        let stop = api.client.stop_workspace().workspace_id(&w.workspace_id).body_map(|b| b.owner_user_id(owner));
        stop.send().await.map_err(failed)?;
    }
    let progress = ProgressBar::new_spinner();
    progress.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("a valid template"));
    progress.enable_steady_tick(Duration::from_millis(120));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout_seconds);
    loop {
        let get = api.client.get_workspace().workspace_id(&w.workspace_id).owner_user_id(w.owner_user_id.as_str());
        let workspace = json(get.send().await.map_err(failed)?);
        let line = drain_line(&workspace);
        progress.set_message(line.clone());
        let state = workspace["captureDrain"]["state"].as_str();
        let status = workspace["status"].as_str().and_then(|s| s.parse::<sluice_domain::model::WorkspaceStatus>().ok());
        match (status, state) {
            (Some(status), _) if status.is_finished() => {
                finish(&progress, line);
                return Ok(());
            }
            (_, Some("stopped" | "discarded")) => {
                finish(&progress, line);
                return Ok(());
            }
            (Some(sluice_domain::model::WorkspaceStatus::Retained), _) => {
                finish(&progress, line);
                bail!("the executor is retained: its work is not confirmed saved (see `sluice retained`)");
            }
            (_, None) if !args.stop && workspace["captureDrain"].is_null() => {
                progress.abandon_with_message("no drain: the workspace was not asked to stop".to_owned());
                bail!("no drain to follow; pass --stop to ask for one");
            }
            _ => {}
        }
        if tokio::time::Instant::now() > deadline {
            finish(&progress, line);
            bail!("still draining after {} s; the drain goes on", args.timeout_seconds);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Leaves the last line on screen; where there is no terminal to draw on
/// (a pipe, a log), prints it.
fn finish(progress: &ProgressBar, line: String) {
    if progress.is_hidden() {
        println!("{line}");
    }
    progress.abandon_with_message(line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drain_lines_name_what_is_left() {
        let draining =
            json!({"status": "ready", "captureDrain": {"state": "draining", "pending": 3, "pendingBytes": 2048}});
        assert_eq!(drain_line(&draining), "saving · 3 left · 2.00 KiB pending");
        let kept =
            json!({"status": "ready", "captureDrain": {"state": "kept", "pending": 1, "detail": "the queue stalled"}});
        assert!(drain_line(&kept).ends_with("the queue stalled"), "{}", drain_line(&kept));
        let retained =
            json!({"status": "retained", "captureDrain": {"state": "gone", "retained": {"reason": "it ended"}}});
        assert_eq!(drain_line(&retained), "retained · it ended");
        let done = json!({"status": "stopped", "captureDrain": {"state": "stopped"}});
        assert_eq!(drain_line(&done), "stopped");
    }
}
