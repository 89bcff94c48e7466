//! `sluice files …`: a workspace's live worktree from the command line,
//! through the typed client: put and get files (streamed), list, make,
//! move and remove, and `cp` with `WORKSPACE:PATH` on either side as scp
//! writes it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Subcommand;
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::api_client::{Api, failed, json};
use crate::workspaces::{Common, Output};

#[derive(Subcommand, Debug, Clone)]
pub enum FilesCommand {
    /// Upload LOCAL (a file, or - for this CLI's input) to PATH in the worktree.
    Put {
        workspace_id: String,
        local: PathBuf,
        path: String,
        #[command(flatten)]
        common: Common,
        /// Its permission bits, octal (default 644).
        #[arg(long)]
        mode: Option<String>,
        /// Make missing directories above it.
        #[arg(long, short)]
        parents: bool,
    },
    /// Download PATH from the worktree to LOCAL (default: this CLI's output).
    Get {
        workspace_id: String,
        path: String,
        local: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// List a directory of the worktree (the worktree itself by default).
    Ls {
        workspace_id: String,
        #[arg(default_value = "")]
        path: String,
        #[command(flatten)]
        common: Common,
        /// Levels listed, 1 to 16.
        #[arg(long, default_value_t = 1)]
        depth: u32,
    },
    /// Make a directory in the worktree.
    Mkdir {
        workspace_id: String,
        path: String,
        #[command(flatten)]
        common: Common,
        #[arg(long, short)]
        parents: bool,
    },
    /// Move (rename) an entry of the worktree.
    Mv {
        workspace_id: String,
        from: String,
        to: String,
        #[command(flatten)]
        common: Common,
        /// Replace what is at TO.
        #[arg(long)]
        overwrite: bool,
    },
    /// Remove an entry of the worktree.
    Rm {
        workspace_id: String,
        path: String,
        #[command(flatten)]
        common: Common,
        /// A directory and all it holds.
        #[arg(long, short)]
        recursive: bool,
    },
    /// Pack a directory of the worktree (the worktree itself by default)
    /// as a tar archive (to this CLI's output unless `--file`).
    Pack {
        workspace_id: String,
        #[arg(default_value = "")]
        path: String,
        #[command(flatten)]
        common: Common,
        /// The file the archive is written to (- for this CLI's output), as
        /// `tar -f` names it.
        #[arg(long, short)]
        file: Option<PathBuf>,
    },
    /// Unpack a tar archive (a file, or - for this CLI's input) into PATH
    /// of the worktree (made when missing); nothing is written if any
    /// member would land outside it.
    Unpack {
        workspace_id: String,
        archive: PathBuf,
        #[arg(default_value = "")]
        path: String,
        #[command(flatten)]
        common: Common,
    },
    /// Copy a file to or from a worktree: `cp LOCAL WORKSPACE:PATH` or
    /// `cp WORKSPACE:PATH LOCAL` (parents are made on upload).
    Cp {
        from: String,
        to: String,
        #[command(flatten)]
        common: Common,
    },
}

/// `WORKSPACE:PATH`, when `text` names one (a workspace id is `ws_…`).
fn remote(text: &str) -> Option<(&str, &str)> {
    let (workspace, path) = text.split_once(':')?;
    workspace.starts_with("ws_").then_some((workspace, path))
}

pub async fn run(command: FilesCommand) -> anyhow::Result<i32> {
    match command {
        FilesCommand::Put { workspace_id, local, path, common, mode, parents } => {
            put(&common, &workspace_id, &local, &path, mode, parents).await
        }
        FilesCommand::Get { workspace_id, path, local, common } => get(&common, &workspace_id, &path, local).await,
        FilesCommand::Ls { workspace_id, path, common, depth } => {
            let api = Api::new(&common.api)?;
            let ask = api.client.list_workspace_files().workspace_id(&workspace_id);
            let ask = ask.owner_user_id(common.owner_user_id.as_str()).path(path).depth(depth.to_string());
            let listing = json(ask.send().await.map_err(failed)?);
            match common.output {
                Output::Json => println!("{}", serde_json::to_string_pretty(&listing)?),
                Output::Table => {
                    for entry in listing["entries"].as_array().into_iter().flatten() {
                        let name = entry["name"]
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| format!("(hex) {}", entry["nameHex"].as_str().unwrap_or_default()));
                        let kind = entry["kind"].as_str().unwrap_or("-");
                        let mode = entry["mode"].as_u64().unwrap_or(0);
                        println!("{kind:<9} {mode:04o} {:>12} {name}", entry["size"].as_u64().unwrap_or(0));
                    }
                    if listing["truncated"] == true {
                        eprintln!("(more entries than one listing holds)");
                    }
                }
            }
            Ok(0)
        }
        FilesCommand::Mkdir { workspace_id, path, common, parents } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let ask = api.client.make_workspace_directory().workspace_id(&workspace_id);
            ask.body_map(|b| b.owner_user_id(owner).path(path).parents(parents)).send().await.map_err(failed)?;
            Ok(0)
        }
        FilesCommand::Mv { workspace_id, from, to, common, overwrite } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let ask = api.client.move_workspace_file().workspace_id(&workspace_id);
            ask.body_map(|b| b.owner_user_id(owner).from(from).to(to).overwrite(overwrite))
                .send()
                .await
                .map_err(failed)?;
            Ok(0)
        }
        FilesCommand::Rm { workspace_id, path, common, recursive } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let ask = api.client.remove_workspace_file().workspace_id(&workspace_id);
            ask.body_map(|b| b.owner_user_id(owner).path(path).recursive(recursive)).send().await.map_err(failed)?;
            Ok(0)
        }
        FilesCommand::Pack { workspace_id, path, common, file } => {
            let api = Api::new(&common.api)?;
            let ask = api.client.pack_workspace_archive().workspace_id(&workspace_id);
            let stream = ask.owner_user_id(common.owner_user_id.as_str()).path(path).send().await.map_err(failed)?;
            save(stream.into_inner(), file).await?;
            Ok(0)
        }
        FilesCommand::Unpack { workspace_id, archive, path, common } => {
            let api = Api::new(&common.api)?;
            let ask = api.client.unpack_workspace_archive().workspace_id(&workspace_id);
            let ask = ask.owner_user_id(common.owner_user_id.as_str()).path(path.as_str());
            let unpacked = json(ask.body(body_of(&archive).await?).send().await.map_err(failed)?);
            match common.output {
                Output::Json => println!("{}", serde_json::to_string_pretty(&unpacked)?),
                Output::Table => {
                    let count = |k: &str| unpacked[k].as_u64().unwrap_or(0);
                    let into = if path.is_empty() { "the worktree" } else { path.as_str() };
                    println!(
                        "{into}: {} files, {} directories, {} symlinks unpacked; {} other members left out",
                        count("files"),
                        count("directories"),
                        count("symlinks"),
                        count("skipped")
                    );
                }
            }
            Ok(0)
        }
        FilesCommand::Cp { from, to, common } => match (remote(&from), remote(&to)) {
            (None, Some((workspace, path))) => put(&common, workspace, Path::new(&from), path, None, true).await,
            (Some((workspace, path)), None) => get(&common, workspace, path, Some(PathBuf::from(&to))).await,
            (Some(_), Some(_)) => bail!("cp copies between this machine and a workspace, not between workspaces"),
            (None, None) => bail!("cp needs one side written WORKSPACE:PATH (ws_…:path)"),
        },
    }
}

async fn put(
    common: &Common,
    workspace_id: &str,
    local: &Path,
    path: &str,
    mode: Option<String>,
    parents: bool,
) -> anyhow::Result<i32> {
    let api = Api::new(&common.api)?;
    let body = body_of(local).await?;
    let mut ask = api.client.write_workspace_file().workspace_id(workspace_id);
    ask = ask.owner_user_id(common.owner_user_id.as_str()).path(path).parents(parents.to_string()).body(body);
    if let Some(mode) = mode {
        ask = ask.mode(mode);
    }
    let written = json(ask.send().await.map_err(failed)?);
    match common.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&written)?),
        Output::Table => println!("{path}: {} bytes", written["size"].as_u64().unwrap_or(0)),
    }
    Ok(0)
}

/// An upload's body: `local`'s bytes (`-`: this CLI's input), streamed as
/// they are read, so a large file is never held whole.
async fn body_of(local: &Path) -> anyhow::Result<reqwest::Body> {
    if local == Path::new("-") {
        return Ok(reqwest::Body::wrap_stream(chunks(tokio::io::stdin())));
    }
    let file = tokio::fs::File::open(local).await.with_context(|| format!("{} cannot be read", local.display()))?;
    Ok(reqwest::Body::wrap_stream(chunks(file)))
}

/// A reader's bytes as a stream of chunks.
fn chunks(
    reader: impl tokio::io::AsyncRead + Unpin + Send + Sync + 'static,
) -> impl futures::Stream<Item = std::io::Result<Vec<u8>>> + Send + Sync + 'static {
    futures::stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        let mut buf = vec![0u8; 256 * 1024];
        match reader.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(buf), Some(reader)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

async fn get(common: &Common, workspace_id: &str, path: &str, local: Option<PathBuf>) -> anyhow::Result<i32> {
    let api = Api::new(&common.api)?;
    let ask = api.client.read_workspace_file().workspace_id(workspace_id);
    let stream = ask.owner_user_id(common.owner_user_id.as_str()).path(path).send().await.map_err(failed)?;
    save(stream.into_inner(), local).await?;
    Ok(0)
}

/// A download's bytes to `local` (none or `-`: this CLI's output).
async fn save(mut stream: sluice_client::ByteStream, local: Option<PathBuf>) -> anyhow::Result<()> {
    match local.filter(|l| l != Path::new("-")) {
        None => {
            let mut out = tokio::io::stdout();
            while let Some(chunk) = stream.next().await {
                out.write_all(&chunk.context("the download broke off")?).await?;
            }
            out.flush().await?;
        }
        Some(local) => {
            // Written beside, renamed once whole: a broken download leaves nothing.
            let partial = local.with_file_name(format!(
                ".{}.partial",
                local.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "download".into())
            ));
            let mut file = tokio::fs::File::create(&partial)
                .await
                .with_context(|| format!("{} cannot be written", partial.display()))?;
            let copied = async {
                while let Some(chunk) = stream.next().await {
                    file.write_all(&chunk.context("the download broke off")?).await?;
                }
                file.flush().await?;
                anyhow::Ok(())
            }
            .await;
            if let Err(e) = copied {
                let _ = tokio::fs::remove_file(&partial).await;
                return Err(e);
            }
            tokio::fs::rename(&partial, &local)
                .await
                .with_context(|| format!("{} cannot be written", local.display()))?;
        }
    }
    Ok(())
}
