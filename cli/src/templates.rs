//! `sluice templates …`: images built from a Dockerfile (build, with the
//! build's output live; list; show; logs).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use futures::StreamExt;
use serde_json::Value;

use crate::api_client::{Api, ApiClientArgs, failed, json};

#[derive(Subcommand, Debug, Clone)]
pub enum TemplatesCommand {
    /// Build a template from a Dockerfile and its context directory, the
    /// build's output shown as it comes.
    Build {
        /// The context directory (sent whole, as a tar).
        dir: PathBuf,
        /// The template's name.
        #[arg(long)]
        name: String,
        /// The Dockerfile (default: DIR/Dockerfile).
        #[arg(long = "file", short = 'f')]
        dockerfile: Option<PathBuf>,
        /// A line of shell its workspaces run as their managed process.
        #[arg(long)]
        start_command: Option<String>,
        /// A line of shell that exits 0 once a workspace of it is ready.
        #[arg(long)]
        ready_command: Option<String>,
        /// Answer the build's id at once instead of following it.
        #[arg(long)]
        detach: bool,
        #[command(flatten)]
        api: ApiClientArgs,
    },
    /// Every template, with the build its workspaces get.
    List {
        #[command(flatten)]
        api: ApiClientArgs,
    },
    /// A template's builds: state, digest, size, timings.
    Show {
        name: String,
        #[command(flatten)]
        api: ApiClientArgs,
    },
    /// A build's output; with -f, then each new line until it ends.
    Logs {
        name: String,
        build_id: String,
        #[arg(long, short)]
        follow: bool,
        #[command(flatten)]
        api: ApiClientArgs,
    },
}

/// A build on one line.
fn line(build: &Value) -> String {
    let mut text =
        format!("{} {}", build["id"].as_str().unwrap_or_default(), build["state"].as_str().unwrap_or_default());
    if build["cacheHit"].as_bool() == Some(true) {
        text.push_str(" (cache hit)");
    }
    if let Some(digest) = build["digest"].as_str() {
        text.push_str(&format!(" {digest}"));
    }
    if let Some(size) = build["sizeBytes"].as_u64() {
        text.push_str(&format!(" {}", indicatif::HumanBytes(size)));
    }
    if let Some(ms) = build["durationMs"].as_i64() {
        text.push_str(&format!(" in {:.1} s", ms as f64 / 1000.0));
    }
    if let Some(error) = build["error"].as_str() {
        text.push_str(&format!(": {error}"));
    }
    text
}

/// The context directory as a tar, base64.
fn context_of(dir: &std::path::Path) -> anyhow::Result<String> {
    use base64::Engine as _;
    anyhow::ensure!(dir.is_dir(), "{} is not a directory", dir.display());
    let mut tar = tar::Builder::new(Vec::new());
    tar.follow_symlinks(false);
    tar.append_dir_all(".", dir).with_context(|| format!("reading {}", dir.display()))?;
    let bytes = tar.into_inner()?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

pub async fn run(command: TemplatesCommand) -> anyhow::Result<i32> {
    match command {
        TemplatesCommand::Build { dir, name, dockerfile, start_command, ready_command, detach, api } => {
            let dockerfile_path = dockerfile.unwrap_or_else(|| dir.join("Dockerfile"));
            let text = std::fs::read_to_string(&dockerfile_path)
                .with_context(|| format!("reading the Dockerfile {}", dockerfile_path.display()))?;
            let context = context_of(&dir)?;
            let api = Api::new(&api)?;
            use sluice_client::types::{CreateTemplateRequestReadyCommand, CreateTemplateRequestStartCommand};
            let start_command: Option<CreateTemplateRequestStartCommand> = start_command
                .map(TryInto::try_into)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--start-command: {e}"))?;
            let ready_command: Option<CreateTemplateRequestReadyCommand> = ready_command
                .map(TryInto::try_into)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--ready-command: {e}"))?;
            let ask = api.client.create_template_build().body_map(|b| {
                b.name(name.clone())
                    .dockerfile(text)
                    .context(Some(context))
                    .start_command(start_command)
                    .ready_command(ready_command)
            });
            let build = json(ask.send().await.map_err(failed)?);
            let id = build["id"].as_str().unwrap_or_default().to_owned();
            if detach || build["state"] == "succeeded" || build["state"] == "failed" {
                println!("{}", line(&build));
                return Ok(i32::from(build["state"] == "failed"));
            }
            eprintln!("build {id} of template {name}: {}", build["state"].as_str().unwrap_or_default());
            logs(&api, &name, &id, true).await
        }
        TemplatesCommand::List { api } => {
            let api = Api::new(&api)?;
            let listed = json(api.client.list_templates().send().await.map_err(failed)?);
            let items = listed["items"].as_array().cloned().unwrap_or_default();
            if items.is_empty() {
                println!("no templates");
            }
            for template in items {
                let current = &template["current"];
                let current = if current.is_null() { "no successful build".to_owned() } else { line(current) };
                println!("{:<24} {current}", template["name"].as_str().unwrap_or_default());
            }
            Ok(0)
        }
        TemplatesCommand::Show { name, api } => {
            let api = Api::new(&api)?;
            let template = json(api.client.get_template().name(&name).send().await.map_err(failed)?);
            for build in template["builds"].as_array().cloned().unwrap_or_default() {
                println!("{}", line(&build));
            }
            Ok(0)
        }
        TemplatesCommand::Logs { name, build_id, follow, api } => {
            logs(&Api::new(&api)?, &name, &build_id, follow).await
        }
    }
}

/// Prints the build's output; with `follow`, resumes after the last line
/// when the stream breaks off, and answers 1 if the build failed.
async fn logs(api: &Api, name: &str, build_id: &str, follow: bool) -> anyhow::Result<i32> {
    let mut last: Option<String> = None;
    loop {
        let mut ask = api.client.template_build_logs().name(name).build_id(build_id).follow(follow.to_string());
        if let Some(last) = &last {
            ask = ask.last_event_id(last.clone());
        }
        let mut stream = match ask.send().await {
            Ok(stream) => stream.into_inner(),
            Err(sluice_client::Error::CommunicationError(e)) if follow => {
                eprintln!("the build's log broke off ({e}); resuming");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(failed(e)),
        };
        let mut messages = sluice_client::sse::Messages::new();
        while let Some(Ok(chunk)) = stream.next().await {
            for sluice_client::sse::Message { id, event, data } in messages.push(&chunk) {
                match event.as_str() {
                    "log" => print!("{}", data["text"].as_str().unwrap_or_default()),
                    "ended" => {
                        eprintln!("{}", line(&data));
                        return Ok(i32::from(data["state"] != "succeeded"));
                    }
                    _ => {}
                }
                if id.is_some() {
                    last = id;
                }
            }
        }
        if !follow {
            return Ok(0);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
