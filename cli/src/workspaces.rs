//! `sluice workspaces …` and `sluice runs get`: the API's workspace
//! operations for people, through the typed client. Tables by default;
//! `--output json` prints the API's answer as it came.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use futures::StreamExt;
use serde_json::{Value, json};
use sluice_client::sse::{Message, Messages};
use sluice_client::types;

use crate::api_client::{Api, ApiClientArgs, failed, json};

#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum Output {
    #[default]
    Table,
    Json,
}

#[derive(Args, Debug, Clone)]
pub struct Common {
    /// The workspaces' owner.
    #[arg(long = "owner", env = "SLUICE_OWNER")]
    pub owner_user_id: String,
    /// How answers are printed.
    #[arg(long, short, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

#[derive(Subcommand, Debug, Clone)]
pub enum WorkspacesCommand {
    /// The owner's workspaces, newest first.
    List {
        #[command(flatten)]
        common: Common,
        /// Only those with this status (queued, running, ready, failed, cancelled, stopped, retained).
        #[arg(long)]
        status: Option<String>,
        /// At most this many (1 to 1000).
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// One workspace, with its spec and drain.
    Get {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Create a workspace running IMAGE (`REPOSITORY:TAG`) with a command.
    Create {
        #[command(flatten)]
        common: Common,
        /// The image, `REPOSITORY:TAG`.
        #[arg(long)]
        image: String,
        /// The registry the image is found in.
        #[arg(long, default_value = "local")]
        registry: String,
        /// Its name (default: made from the image).
        #[arg(long)]
        name: Option<String>,
        /// A create with the same key is done once.
        #[arg(long)]
        idempotency_key: Option<String>,
        /// The whole spec as JSON (instead of the command after `--`).
        #[arg(long, conflicts_with = "command")]
        spec: Option<String>,
        /// Start from a capture session (its newest capture, or --capture-n).
        #[arg(long, requires = "capture_token_file")]
        capture_session: Option<String>,
        /// The capture session's token, read from this file.
        #[arg(long, requires = "capture_session")]
        capture_token_file: Option<std::path::PathBuf>,
        /// The capture to start from (default: the session's head).
        #[arg(long, requires = "capture_session")]
        capture_n: Option<u64>,
        /// Take the session over from an executor holding unsaved work, discarding that work.
        #[arg(long, requires = "capture_session")]
        discard_unsaved: bool,
        /// Wait until it is ready (exit 1 if it ends otherwise).
        #[arg(long)]
        wait: bool,
        /// With --wait: give up after this many seconds (exit 1).
        #[arg(long, default_value_t = 600, requires = "wait")]
        wait_seconds: u64,
        /// The command the executor runs.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Run a command in a workspace and follow it: its output is printed
    /// as it comes (all at the end with --output json), and its exit code
    /// is this command's.
    Exec {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
        /// Give up waiting after this many seconds (the run goes on).
        #[arg(long, default_value_t = 600)]
        wait_seconds: u64,
        /// The directory it runs in (relative to the worktree).
        #[arg(long)]
        cwd: Option<String>,
        /// An environment variable for it, `NAME=VALUE` (again for more).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// Feed it this CLI's own standard input.
        #[arg(long)]
        stdin: bool,
        /// Stop it after this many seconds (the daemon's default otherwise).
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<u64>,
        /// The command (argv, no shell).
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// Stop a workspace; its work is saved first (see `sluice drain`).
    Stop {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
        /// End it without saving what is not saved yet.
        #[arg(long)]
        discard_unsaved: bool,
    },
    /// Delete a workspace that has ended (stopped, failed or cancelled):
    /// gone from lists and reads; its events stay on the feed.
    Delete {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Stop the current executor and launch a fresh one.
    Restart {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Send a capture-sourced workspace to sleep: its work is saved to its
    /// capture session and its runtime released; the next exec, file or
    /// process call, SSH session or preview visit wakes it.
    Sleep {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Wake a sleeping workspace ahead of its next use: a new run restores
    /// its capture session's head.
    Wake {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Fork a capture-sourced workspace: COUNT copies of its files as they
    /// are now, each on a capture session of its own (with -o json, each
    /// session's token, shown once).
    Fork {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
        /// How many copies, 1 to 100.
        #[arg(long, default_value_t = 1)]
        count: i64,
        /// The copies' names start with this.
        #[arg(long)]
        name_prefix: Option<String>,
    },
    /// The workspace's events; with --follow, then each new one as it is
    /// recorded (resuming after a dropped connection) until interrupted.
    Events {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
        #[arg(long, short)]
        follow: bool,
    },
}

#[derive(Subcommand, Debug, Clone)]
pub enum RunsCommand {
    /// An exec run: each command's exit code and output.
    Get {
        run_id: String,
        #[command(flatten)]
        common: Common,
    },
}

fn print_json(value: &Value) {
    println!("{}", serde_json::to_string_pretty(value).expect("JSON prints"));
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("-")
}

pub async fn run(command: WorkspacesCommand) -> anyhow::Result<i32> {
    match command {
        WorkspacesCommand::List { common, status, limit } => list(&common, status, limit).await,
        WorkspacesCommand::Get { workspace_id, common } => get(&common, &workspace_id).await,
        WorkspacesCommand::Create {
            common,
            image,
            registry,
            name,
            idempotency_key,
            spec,
            capture_session,
            capture_token_file,
            capture_n,
            discard_unsaved,
            wait,
            wait_seconds,
            command,
        } => {
            let spec = match spec {
                Some(text) => serde_json::from_str::<Value>(&text).context("--spec is not JSON")?,
                None if command.is_empty() => bail!("give the command after `--`, or --spec"),
                None => json!({ "command": command }),
            };
            let (repository, tag) = image.rsplit_once(':').context("--image is REPOSITORY:TAG")?;
            let mut body = json!({
                "ownerUserId": common.owner_user_id, "registryId": registry,
                "repository": repository, "tag": tag, "spec": spec,
            });
            if let Some(name) = name {
                body["name"] = json!(name);
            }
            if let (Some(session), Some(file)) = (capture_session, capture_token_file) {
                let token = std::fs::read_to_string(&file)
                    .with_context(|| format!("--capture-token-file {} cannot be read", file.display()))?;
                let mut source = json!({"kind": "capture", "sessionId": session});
                if let Some(n) = capture_n {
                    source["captureN"] = json!(n);
                }
                body["spec"]["source"] = source;
                body["captureToken"] = json!(token.trim());
                if discard_unsaved {
                    body["takeOver"] = json!("discard-unsaved");
                }
            }
            if wait {
                body["waitFor"] = json!("ready");
            }
            create(&common, body, idempotency_key, wait.then_some(Duration::from_secs(wait_seconds))).await
        }
        WorkspacesCommand::Exec { workspace_id, common, wait_seconds, cwd, env, stdin, timeout, argv } => {
            let mut command = json!({"argv": argv});
            if let Some(cwd) = cwd {
                command["cwd"] = json!(cwd);
            }
            if !env.is_empty() {
                let mut vars = serde_json::Map::new();
                for pair in env {
                    let Some((name, value)) = pair.split_once('=') else {
                        bail!("--env {name:?} is not NAME=VALUE", name = pair.split('=').next().unwrap_or(""));
                    };
                    vars.insert(name.to_owned(), json!(value));
                }
                command["env"] = Value::Object(vars);
            }
            if stdin {
                let mut input = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut input)
                    .context("--stdin: this CLI's standard input is not text")?;
                command["stdin"] = json!(input);
            }
            if let Some(seconds) = timeout {
                command["timeoutMs"] = json!(seconds.saturating_mul(1000).max(1));
            }
            exec(&common, &workspace_id, command, wait_seconds).await
        }
        WorkspacesCommand::Stop { workspace_id, common, discard_unsaved } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let stop = api.client.stop_workspace().workspace_id(&workspace_id);
            let answer = json(
                stop.body_map(|b| b.owner_user_id(owner).discard_unsaved(discard_unsaved))
                    .send()
                    .await
                    .map_err(failed)?,
            );
            match common.output {
                Output::Json => print_json(&answer),
                Output::Table => println!("{workspace_id}: {}", after_stop(&answer)),
            }
            Ok(0)
        }
        WorkspacesCommand::Delete { workspace_id, common } => {
            let api = Api::new(&common.api)?;
            let delete = api.client.delete_workspace().workspace_id(&workspace_id);
            let answer = json(delete.owner_user_id(common.owner_user_id.as_str()).send().await.map_err(failed)?);
            match common.output {
                Output::Json => print_json(&answer),
                Output::Table => println!("{workspace_id}: deleted"),
            }
            Ok(0)
        }
        WorkspacesCommand::Restart { workspace_id, common } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let restart = api.client.restart_workspace().workspace_id(&workspace_id);
            let answer = json(restart.body_map(|b| b.owner_user_id(owner)).send().await.map_err(failed)?);
            match common.output {
                Output::Json => print_json(&answer),
                Output::Table => println!("{workspace_id}: restarting"),
            }
            Ok(0)
        }
        WorkspacesCommand::Sleep { workspace_id, common } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let sleep = api.client.sleep_workspace().workspace_id(&workspace_id);
            let answer = json(sleep.body_map(|b| b.owner_user_id(owner)).send().await.map_err(failed)?);
            match common.output {
                Output::Json => print_json(&answer),
                Output::Table if answer["sleeping"].is_object() => println!("{workspace_id}: asleep"),
                Output::Table => println!("{workspace_id}: saving its work to go to sleep"),
            }
            Ok(0)
        }
        WorkspacesCommand::Wake { workspace_id, common } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let wake = api.client.wake_workspace().workspace_id(&workspace_id);
            let answer = json(wake.body_map(|b| b.owner_user_id(owner)).send().await.map_err(failed)?);
            match common.output {
                Output::Json => print_json(&answer),
                Output::Table if answer["woken"] == true => {
                    println!("{workspace_id}: waking (run {})", answer["runId"].as_str().unwrap_or_default())
                }
                Output::Table => println!("{workspace_id}: awake ({})", answer["status"].as_str().unwrap_or_default()),
            }
            Ok(0)
        }
        WorkspacesCommand::Fork { workspace_id, common, count, name_prefix } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let body = serde_json::json!({"ownerUserId": owner, "count": count, "namePrefix": name_prefix});
            let body: types::ForkRequest = serde_json::from_value(body)
                .map_err(|e| anyhow::anyhow!("--count is 1 to 100 and --name-prefix 1 to 120 characters ({e})"))?;
            let fork = api.client.fork_workspace().workspace_id(&workspace_id).body(body);
            let answer = json(fork.send().await.map_err(failed)?);
            match common.output {
                Output::Json => print_json(&answer),
                Output::Table => {
                    for item in answer["items"].as_array().into_iter().flatten() {
                        let field = |name: &str| item[name].as_str().unwrap_or_default().to_owned();
                        println!("{}  {}  {}", field("workspaceId"), field("name"), field("captureSessionId"));
                    }
                }
            }
            Ok(0)
        }
        WorkspacesCommand::Events { workspace_id, common, follow } => events(&common, &workspace_id, follow).await,
    }
}

pub async fn runs(command: RunsCommand) -> anyhow::Result<i32> {
    let RunsCommand::Get { run_id, common } = command;
    let api = Api::new(&common.api)?;
    let answer = api.client.get_run().run_id(&run_id).owner_user_id(common.owner_user_id.as_str()).send().await;
    let run = answer.map_err(failed)?.into_inner();
    match common.output {
        Output::Json => print_json(&serde_json::to_value(&run)?),
        Output::Table => {
            print_run(&run);
            // Each command's end, after its output (on stderr, beside the errors).
            for command in &run.commands {
                match command.exit_code {
                    Some(code) => eprintln!("exit {code}: {}", command.argv.join(" ")),
                    None => eprintln!("not run: {}", command.argv.join(" ")),
                }
            }
            eprintln!("run {}: {}", run.run_id, run.status);
        }
    }
    Ok(run_exit_code(&run))
}

async fn list(common: &Common, status: Option<String>, limit: u32) -> anyhow::Result<i32> {
    let api = Api::new(&common.api)?;
    let mut ask = api.client.list_workspaces().owner_user_id(common.owner_user_id.as_str()).limit(limit.to_string());
    if let Some(status) = status {
        let status: types::WorkspaceStatus =
            status.parse().map_err(|_| anyhow::anyhow!("--status {status:?} is not a workspace status"))?;
        ask = ask.status(status);
    }
    let answer = json(ask.send().await.map_err(failed)?);
    match common.output {
        Output::Json => print_json(&answer),
        Output::Table => {
            println!("{:<40} {:<24} {:<10} {:<32} CREATED", "WORKSPACE", "NAME", "STATUS", "IMAGE");
            for w in answer["items"].as_array().into_iter().flatten() {
                println!(
                    "{:<40} {:<24} {:<10} {:<32} {}",
                    text(&w["workspaceId"]),
                    text(&w["name"]),
                    text(&w["status"]),
                    format!("{}:{}", text(&w["repository"]), text(&w["tag"])),
                    text(&w["createdAt"]),
                );
            }
        }
    }
    Ok(0)
}

async fn get(common: &Common, id: &str) -> anyhow::Result<i32> {
    let api = Api::new(&common.api)?;
    let ask = api.client.get_workspace().workspace_id(id).owner_user_id(common.owner_user_id.as_str());
    let w = json(ask.send().await.map_err(failed)?);
    match common.output {
        Output::Json => print_json(&w),
        Output::Table => {
            for (label, value) in [
                ("workspace", &w["workspaceId"]),
                ("name", &w["name"]),
                ("owner", &w["ownerUserId"]),
                ("status", &w["status"]),
                ("repository", &w["repository"]),
                ("tag", &w["tag"]),
                ("created", &w["createdAt"]),
                ("current run", &w["currentAttemptId"]),
            ] {
                println!("{label:<12} {}", text(value));
            }
            if let Some(state) = w["captureDrain"]["state"].as_str() {
                println!("{:<12} {state}", "drain");
            }
        }
    }
    Ok(0)
}

/// How long one request waits for a workspace (the API's most).
const WAIT_PER_REQUEST_MS: u64 = 60_000;

async fn create(common: &Common, body: Value, key: Option<String>, wait: Option<Duration>) -> anyhow::Result<i32> {
    let api = Api::new(&common.api)?;
    let body: types::CreateWorkspaceRequest =
        serde_json::from_value(body).map_err(|e| anyhow::anyhow!("the workspace cannot be asked for: {e}"))?;
    let mut ask = api.client.create_workspace().body(body);
    if let Some(key) = key {
        ask = ask.idempotency_key(key);
    }
    let mut answer = json(ask.send().await.map_err(failed)?);
    let id = text(&answer["workspaceId"]).to_owned();
    if let Some(wait) = wait {
        // The create waited up to the API's bound; each read waits again.
        let deadline = tokio::time::Instant::now() + wait;
        while starting(&answer) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                bail!("workspace {id} is still {} after {} s", text(&answer["status"]), wait.as_secs());
            }
            let ask = api.client.get_workspace().workspace_id(&id).owner_user_id(common.owner_user_id.as_str());
            let timeout_ms = (left.as_millis() as u64).min(WAIT_PER_REQUEST_MS);
            answer = json(
                ask.wait_for(types::WaitFor::Ready).timeout_ms(timeout_ms.to_string()).send().await.map_err(failed)?,
            );
        }
    }
    match common.output {
        Output::Json => print_json(&answer),
        Output::Table => println!("{id} {}", text(&answer["status"])),
    }
    if wait.is_some() && answer["status"] != "ready" {
        bail!("workspace {id} is {}, not ready", text(&answer["status"]));
    }
    Ok(0)
}

/// What a stop produced: the asked-for stop under way, or the end it
/// already reached (a workspace that had ended, or was ended at once).
fn after_stop(answer: &Value) -> String {
    match answer["status"].as_str() {
        Some(status @ ("stopped" | "failed" | "cancelled" | "retained")) => status.to_owned(),
        Some(status) => format!("stopping (it was {status}; its work is saved before its runtime goes)"),
        None => "stopping".to_owned(),
    }
}

/// Whether a workspace as the API answered it is still on its way up.
fn starting(workspace: &Value) -> bool {
    matches!(workspace["status"].as_str(), Some("queued" | "running"))
        && workspace["desiredState"].as_str().is_none_or(|desired| desired == "running")
}

fn print_run(run: &types::ExecRun) {
    for command in &run.commands {
        print!("{}", command.stdout);
        eprint!("{}", command.stderr);
        if command.stdout_truncated || command.stderr_truncated {
            eprintln!("(output cut at 1 MiB)");
        }
        if command.timed_out {
            eprintln!("{}: timed out", command.argv.join(" "));
        }
    }
    if let Some(error) = &run.error {
        eprintln!("the run failed: {}", error.message);
    }
}

async fn exec(common: &Common, id: &str, command: Value, wait_seconds: u64) -> anyhow::Result<i32> {
    let api = Api::new(&common.api)?;
    let body: types::ExecWorkspaceRequest =
        serde_json::from_value(json!({"ownerUserId": common.owner_user_id, "commands": [command]}))
            .map_err(|e| anyhow::anyhow!("the command cannot be asked for: {e}"))?;
    // A workspace still starting is waited for, not refused.
    let ask = api.client.exec_workspace().workspace_id(id).body(body).wait_for(types::WaitFor::Ready);
    let mut run = ask.timeout_ms(WAIT_PER_REQUEST_MS.to_string()).send().await.map_err(failed)?.into_inner();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait_seconds);
    if let Output::Table = common.output {
        let ended = follow_run(&api, common, &run.run_id, deadline, wait_seconds).await?;
        if let Some(error) = &ended.error {
            eprintln!("the run failed: {}", error.message);
        }
        return Ok(run_exit_code(&ended));
    }
    while matches!(run.status, types::RunStatus::Queued | types::RunStatus::Running) {
        if tokio::time::Instant::now() > deadline {
            bail!("run {} still {} after {wait_seconds} s; `sluice runs get` reads it later", run.run_id, run.status);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let ask = api.client.get_run().run_id(&run.run_id).owner_user_id(common.owner_user_id.as_str());
        run = ask.send().await.map_err(failed)?.into_inner();
    }
    match common.output {
        Output::Json => print_json(&serde_json::to_value(&run)?),
        Output::Table => print_run(&run),
    }
    Ok(run_exit_code(&run))
}

/// What the CLI exits with for a run: its last command's exit code once it
/// completed, 125 when the machinery failed it, 0 while it has not ended.
fn run_exit_code(run: &types::ExecRun) -> i32 {
    match run.status {
        types::RunStatus::Completed => run.exit_code.map_or(125, |code| code.clamp(0, 255) as i32),
        types::RunStatus::Failed => 125,
        _ => 0,
    }
}

/// Prints a `stdout` or `stderr` event's text where it belongs, as it
/// comes; whether the event was one.
pub(crate) fn print_output(event: &str, data: &Value) -> std::io::Result<bool> {
    use std::io::Write;
    let text = data["text"].as_str().unwrap_or("");
    match event {
        "stdout" => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        "stderr" => eprint!("{text}"),
        _ => return Ok(false),
    }
    Ok(true)
}

/// Prints a run's output as it comes, through its stream (resumed after
/// the last position when it breaks off), until its end; answers the run
/// as it ended.
async fn follow_run(
    api: &Api,
    common: &Common,
    run_id: &str,
    deadline: tokio::time::Instant,
    wait_seconds: u64,
) -> anyhow::Result<types::ExecRun> {
    let mut last: Option<String> = None;
    loop {
        let mut ask = api.client.stream_run().run_id(run_id).owner_user_id(common.owner_user_id.as_str());
        if let Some(last) = &last {
            ask = ask.last_event_id(last.clone());
        }
        let mut stream = match ask.send().await {
            Ok(stream) => stream.into_inner(),
            Err(sluice_client::Error::CommunicationError(e)) => {
                eprintln!("the run's stream broke off ({e}); resuming");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(failed(e)),
        };
        let mut messages = Messages::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let chunk = match tokio::time::timeout(left, stream.next()).await {
                Err(_) => bail!("run {run_id} still running after {wait_seconds} s; `sluice runs get` reads it later"),
                Ok(Some(Ok(chunk))) => chunk,
                Ok(_) => break,
            };
            for Message { id, event, data } in messages.push(&chunk) {
                if !print_output(&event, &data)? {
                    match event.as_str() {
                        "exit" if data["stdoutTruncated"] == true || data["stderrTruncated"] == true => {
                            eprintln!("(output cut at 1 MiB)");
                        }
                        "exit" if data["timedOut"] == true => eprintln!("(timed out)"),
                        "end" => return Ok(serde_json::from_value(data)?),
                        _ => {}
                    }
                }
                if id.is_some() {
                    last = id;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn print_event(output: Output, event: &Value) {
    match output {
        Output::Json => println!("{event}"),
        Output::Table => println!(
            "{:>5} {:<24} {:<20} {}",
            event["sequence"].as_i64().unwrap_or(0),
            text(&event["occurredAt"]),
            text(&event["type"]),
            event["message"].as_str().unwrap_or(""),
        ),
    }
}

async fn events(common: &Common, id: &str, follow: bool) -> anyhow::Result<i32> {
    let api = Api::new(&common.api)?;
    let owner = common.owner_user_id.as_str();
    if !follow {
        let ask = api.client.list_workspace_events().workspace_id(id).owner_user_id(owner).limit("1000");
        let answer = json(ask.send().await.map_err(failed)?);
        match common.output {
            Output::Json => print_json(&answer),
            Output::Table => {
                answer["items"].as_array().into_iter().flatten().for_each(|e| print_event(Output::Table, e))
            }
        }
        return Ok(0);
    }
    // Follow: one event per line; a dropped stream resumes after the last.
    let mut last: Option<String> = None;
    loop {
        let mut ask = api.client.stream_workspace_events().workspace_id(id).owner_user_id(owner);
        if let Some(last) = &last {
            ask = ask.last_event_id(last.clone());
        }
        let mut stream = match ask.send().await {
            Ok(stream) => stream.into_inner(),
            Err(sluice_client::Error::CommunicationError(e)) => {
                eprintln!("the stream broke off ({e}); resuming");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(failed(e)),
        };
        let mut messages = Messages::new();
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { break };
            for Message { id: event_id, data: event, .. } in messages.push(&chunk) {
                // Events without an id are not the workspace's (there are none).
                if let Some(event_id) = event_id {
                    print_event(common.output, &event);
                    last = Some(event_id);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
