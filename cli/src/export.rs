//! `sluice retained export WORKSPACE > disk.tar`: a retained executor's
//! disk as a tar archive, read on its host straight from the runtime (the
//! database says which executor; nothing needs to run), for when its work
//! cannot be recovered any other way.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use futures::StreamExt;
use indicatif::HumanBytes;

use sluice_domain::ids::WorkspaceId;
use sluice_server::config::{StoreArgs, WorkerArgs};

#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// The workspace whose executor's disk is archived.
    pub workspace_id: String,
    /// Its owner.
    #[arg(long = "owner")]
    pub owner_user_id: String,
    /// The file to write (default: stdout, which must not be a terminal).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub worker: WorkerArgs,
}

pub async fn run(args: ExportArgs) -> anyhow::Result<()> {
    if args.output.is_none() && std::io::stdout().is_terminal() {
        bail!("the archive is binary: redirect stdout to a file, or pass --output");
    }
    let store = args.store.open().await?;
    let state = store.load_reconcile_state(&WorkspaceId::from(&args.workspace_id)).await?;
    store.close().await;
    let Some(state) = state.filter(|s| s.workspace.owner_user_id == args.owner_user_id) else {
        bail!("{} is not a workspace of {}", args.workspace_id, args.owner_user_id);
    };
    // The executor that still has a disk: the current run's, else the
    // newest earlier one not yet removed.
    let present = |r: &&sluice_store::Run| r.runtime.is_some() && r.runtime_removed_at.is_none();
    let run = state.current_run.iter().find(present).or_else(|| state.stale_runs.iter().rev().find(present));
    let Some(run) = run else { bail!("{}: no executor of it is left on a runtime", args.workspace_id) };
    let record = run.runtime.as_ref().expect("a present run has a runtime");
    if state.workspace.status != sluice_store::WorkspaceStatus::Retained {
        eprintln!("note: {} is {}, not retained; archiving its executor's disk as it is", run.id, run.status.as_str());
    }
    let (runtime, _) = args.worker.runtime(&args.store.data_dir).await?;
    if runtime.adapter() != record.adapter {
        bail!(
            "the executor is on the {} runtime; this host is set up for {} (pass --runtime {})",
            record.adapter.as_str(),
            runtime.adapter().as_str(),
            record.adapter.as_str()
        );
    }
    let mut archive = runtime.export_disk(&run.id, &record.resource_id).await?;
    let partial = args.output.as_ref().map(|p| p.with_extension("partial"));
    let mut sink: Box<dyn Write> = match &partial {
        Some(path) => Box::new(std::fs::File::create(path).with_context(|| path.display().to_string())?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut written = 0u64;
    let streamed: anyhow::Result<()> = async {
        while let Some(chunk) = archive.next().await {
            let chunk = chunk.context("reading the executor's disk")?;
            sink.write_all(&chunk)?;
            written += chunk.len() as u64;
        }
        sink.flush()?;
        Ok(())
    }
    .await;
    drop(sink);
    match (&partial, &args.output) {
        (Some(partial), Some(output)) if streamed.is_ok() => std::fs::rename(partial, output)?,
        (Some(partial), _) => {
            let _ = std::fs::remove_file(partial);
        }
        _ => {}
    }
    streamed?;
    eprintln!("{}: {} of {}'s disk archived", args.workspace_id, HumanBytes(written), run.id);
    Ok(())
}
