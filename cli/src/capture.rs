//! `sluice capture`: a session's timeline from the command line, talking
//! to a running sluice API: list the kept captures, compare two, export one
//! as a tar archive, or restore one into a directory.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use futures::StreamExt;
use indicatif::{HumanBytes, ProgressBar, ProgressStyle};
use serde_json::Value;
use std::os::unix::fs::OpenOptionsExt;

use crate::api_client::{Api, ApiClientArgs, failed, json};

#[derive(Subcommand, Debug, Clone)]
pub enum CaptureCommand {
    /// Make a capture session. Its token is shown once: written to
    /// --token-file (mode 0600) when given, else printed.
    NewSession {
        /// Its owner.
        #[arg(long = "owner")]
        owner_user_id: String,
        /// The most bytes it may hold in the object store.
        #[arg(long)]
        quota_bytes: Option<i64>,
        /// Keep the newest this many captures.
        #[arg(long)]
        keep_last: Option<i64>,
        /// Keep every capture of this many seconds back.
        #[arg(long)]
        keep_within_seconds: Option<i64>,
        #[arg(long)]
        token_file: Option<PathBuf>,
        #[command(flatten)]
        api: ApiClientArgs,
    },
    /// A capture session: its epoch, head, quota, bytes, retention, seal.
    Session {
        #[command(flatten)]
        session: SessionArgs,
    },
    /// The session's kept captures: when, by which executor, what changed.
    List {
        #[command(flatten)]
        session: SessionArgs,
    },
    /// The paths added (+), changed (~) and removed (-) between two captures.
    Diff {
        #[command(flatten)]
        session: SessionArgs,
        /// The capture.
        n: u64,
        /// The capture to compare with (default: the kept one before).
        #[arg(long)]
        against: Option<u64>,
    },
    /// Write capture N's tree as a tar archive (to stdout, or --output).
    Export {
        #[command(flatten)]
        session: SessionArgs,
        n: u64,
        /// The file to write (default: stdout, which must not be a terminal).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Restore capture N's tree into a directory, with the system's tar.
    Restore {
        #[command(flatten)]
        session: SessionArgs,
        n: u64,
        /// The directory (made if missing; it must be empty).
        #[arg(long)]
        into: PathBuf,
    },
}

#[derive(Args, Debug, Clone)]
pub struct SessionArgs {
    /// The capture session.
    pub session_id: String,
    /// Its owner.
    #[arg(long = "owner")]
    pub owner_user_id: String,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

pub async fn run(command: CaptureCommand) -> anyhow::Result<()> {
    match command {
        CaptureCommand::NewSession { owner_user_id, quota_bytes, keep_last, keep_within_seconds, token_file, api } => {
            let api = Api::new(&api)?;
            let mut body = serde_json::json!({"ownerUserId": owner_user_id, "quotaBytes": quota_bytes});
            if keep_last.is_some() || keep_within_seconds.is_some() {
                body["retention"] =
                    serde_json::json!({"keepLast": keep_last, "keepWithinSeconds": keep_within_seconds});
            }
            let body: sluice_client::types::CreateCaptureSessionRequest =
                serde_json::from_value(body).map_err(|e| anyhow::anyhow!("the session cannot be asked for: {e}"))?;
            let created = json(api.client.create_capture_session().body(body).send().await.map_err(failed)?);
            let (id, token) = (created["sessionId"].as_str().unwrap_or("-"), created["token"].as_str().unwrap_or(""));
            match token_file {
                Some(file) => {
                    use std::io::Write;
                    let mut out = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&file)
                        .with_context(|| format!("{} cannot be made (it must not exist)", file.display()))?;
                    writeln!(out, "{token}")?;
                    println!("{id}");
                }
                None => println!("{id}\n{token}"),
            }
            Ok(())
        }
        CaptureCommand::Session { session } => {
            let api = Api::new(&session.api)?;
            let ask = api.client.get_capture_session().session_id(&session.session_id);
            let answer = json(ask.owner_user_id(session.owner_user_id.as_str()).send().await.map_err(failed)?);
            println!("{}", serde_json::to_string_pretty(&answer)?);
            Ok(())
        }
        CaptureCommand::List { session } => list(&session).await,
        CaptureCommand::Diff { session, n, against } => diff(&session, n, against).await,
        CaptureCommand::Export { session, n, output } => export(&session, n, output).await,
        CaptureCommand::Restore { session, n, into } => restore(&session, n, into).await,
    }
}

async fn list(s: &SessionArgs) -> anyhow::Result<()> {
    let api = Api::new(&s.api)?;
    println!(
        "{:>6} {:<24} {:<28} {:>8} {:>8} {:>8} {:>8} {:>10} NOTE",
        "N", "WHEN", "EXECUTOR", "FILES", "ADDED", "CHANGED", "REMOVED", "BYTES"
    );
    let mut after = 0;
    loop {
        let list = api.client.list_captures().session_id(&s.session_id).owner_user_id(s.owner_user_id.as_str());
        let page = json(list.limit("1000").after(after.to_string()).send().await.map_err(failed)?);
        for c in page["captures"].as_array().into_iter().flatten() {
            let count = |key: &str| c[key].as_u64().map_or("-".to_owned(), |n| n.to_string());
            let note = c["restoredFrom"].as_u64().map(|n| format!("restored {n}")).unwrap_or_default();
            println!(
                "{:>6} {:<24} {:<28} {:>8} {:>8} {:>8} {:>8} {:>10} {note}",
                c["n"],
                c["registeredAt"].as_str().unwrap_or(""),
                c["executorId"].as_str().unwrap_or(""),
                count("files"),
                count("added"),
                count("changed"),
                count("removed"),
                HumanBytes(c["bytes"].as_u64().unwrap_or(0)).to_string(),
            );
        }
        match page["nextAfter"].as_u64() {
            Some(next) => after = next,
            None => return Ok(()),
        }
    }
}

/// A path as the API gives it: a string, or `{"hex": …}` for one that is
/// not UTF-8 (printed with its bytes escaped).
fn path_text(path: &Value) -> String {
    match serde_json::from_value::<sluice_protocol::names::Name>(path.clone()) {
        Ok(name) => name.to_str().map_or_else(|| name.as_bytes().escape_ascii().to_string(), str::to_owned),
        Err(_) => path.to_string(),
    }
}

async fn diff(s: &SessionArgs, n: u64, against: Option<u64>) -> anyhow::Result<()> {
    let api = Api::new(&s.api)?;
    let mut ask = api.client.diff_captures().session_id(&s.session_id).n(n as i64);
    ask = ask.owner_user_id(s.owner_user_id.as_str());
    if let Some(against) = against {
        ask = ask.against(against.to_string());
    }
    let diff = json(ask.send().await.map_err(failed)?);
    for (mark, key) in [("+", "added"), ("~", "changed"), ("-", "removed")] {
        for path in diff[key].as_array().into_iter().flatten() {
            println!("{mark} {}", path_text(path));
        }
    }
    let counts = (&diff["addedCount"], &diff["changedCount"], &diff["removedCount"]);
    eprintln!("{n} against {}: {} added, {} changed, {} removed", diff["against"], counts.0, counts.1, counts.2);
    if diff["truncated"].as_bool() == Some(true) {
        eprintln!("(the lists stop short of the counts)");
    }
    Ok(())
}

/// Streams capture `n`'s archive into `sink`, showing progress on a terminal.
async fn stream_archive(s: &SessionArgs, n: u64, sink: &mut dyn Write) -> anyhow::Result<u64> {
    let api = Api::new(&s.api)?;
    let archive = api.client.archive_capture().session_id(&s.session_id).n(n as i64);
    let response = archive.owner_user_id(s.owner_user_id.as_str()).send().await.map_err(failed)?;
    let progress = ProgressBar::new_spinner();
    progress.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("a valid template"));
    progress.enable_steady_tick(Duration::from_millis(120));
    let mut body = response.into_inner();
    let mut written = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.context("the archive was cut short (the store failed or the API went away)")?;
        sink.write_all(&chunk)?;
        written += chunk.len() as u64;
        progress.set_message(format!("{} of capture {n}", HumanBytes(written)));
    }
    sink.flush()?;
    progress.finish_and_clear();
    Ok(written)
}

async fn export(s: &SessionArgs, n: u64, output: Option<PathBuf>) -> anyhow::Result<()> {
    let written = match &output {
        Some(path) => {
            let partial = path.with_extension("partial");
            let mut file = std::fs::File::create(&partial).with_context(|| partial.display().to_string())?;
            let written = stream_archive(s, n, &mut file).await;
            if written.is_err() {
                let _ = std::fs::remove_file(&partial);
            }
            let written = written?;
            file.sync_all()?;
            std::fs::rename(&partial, path)?;
            written
        }
        None if std::io::stdout().is_terminal() => {
            bail!("the archive is binary: redirect stdout to a file, or pass --output")
        }
        None => stream_archive(s, n, &mut std::io::stdout().lock()).await?,
    };
    eprintln!("capture {n}: {} archived", HumanBytes(written));
    Ok(())
}

async fn restore(s: &SessionArgs, n: u64, into: PathBuf) -> anyhow::Result<()> {
    std::fs::create_dir_all(&into).with_context(|| into.display().to_string())?;
    if std::fs::read_dir(&into)?.next().is_some() {
        bail!("{} is not empty: restore into an empty directory", into.display());
    }
    // Permissions as archived (-p), holes kept; tar reads the pax headers.
    let mut tar = std::process::Command::new("tar")
        .args(["-x", "-p", "-f", "-", "-C"])
        .arg(&into)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .context("tar could not be started (install GNU tar, or use `sluice capture export`)")?;
    let mut stdin = tar.stdin.take().expect("a piped stdin");
    let streamed = stream_archive(s, n, &mut stdin).await;
    drop(stdin);
    let status = tar.wait()?;
    let written = streamed?;
    if !status.success() {
        bail!("tar could not extract the archive ({status})");
    }
    eprintln!("capture {n}: {} restored into {}", HumanBytes(written), into.display());
    Ok(())
}
