//! `sluice processes …`: processes that keep running in a workspace, from
//! the command line through the typed client: start, list, logs (-f to
//! follow, resuming after a dropped stream), signal, stdin.

use std::time::Duration;

use anyhow::bail;
use clap::Subcommand;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::api_client::{Api, failed, json};
use crate::workspaces::{Common, Output};

#[derive(Subcommand, Debug, Clone)]
pub enum ProcessesCommand {
    /// Start a process that keeps running (argv after `--`, no shell).
    Start {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        name: Option<String>,
        /// Where it runs, relative to the worktree.
        #[arg(long)]
        cwd: Option<String>,
        /// An environment variable, `NAME=VALUE` (again for more).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// The workspace's processes.
    List {
        workspace_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// A process's kept output; with -f, then each new line until it ends.
    Logs {
        workspace_id: String,
        process_id: String,
        #[command(flatten)]
        common: Common,
        #[arg(long, short)]
        follow: bool,
    },
    /// Send a signal (TERM, INT, KILL, HUP, …) to a process.
    Signal {
        workspace_id: String,
        process_id: String,
        signal: String,
        #[command(flatten)]
        common: Common,
    },
    /// Write this CLI's input to a process's input (--eof closes it after).
    Stdin {
        workspace_id: String,
        process_id: String,
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        eof: bool,
    },
}

fn line(p: &Value) -> String {
    let ended = match (p["exitCode"].as_i64(), p["signal"].as_str()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => String::new(),
    };
    let argv: Vec<&str> = p["argv"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    format!(
        "{:<22} {:<10} {:<9} {:<12} {}",
        p["processId"].as_str().unwrap_or("-"),
        p["name"].as_str().unwrap_or("-"),
        p["state"].as_str().unwrap_or("-"),
        ended,
        argv.join(" ")
    )
}

pub async fn run(command: ProcessesCommand) -> anyhow::Result<i32> {
    match command {
        ProcessesCommand::Start { workspace_id, common, name, cwd, env, argv } => {
            let api = Api::new(&common.api)?;
            let mut vars = serde_json::Map::new();
            for pair in env {
                let Some((key, value)) = pair.split_once('=') else { bail!("--env {pair:?} is not NAME=VALUE") };
                vars.insert(key.to_owned(), json!(value));
            }
            let body =
                json!({"ownerUserId": common.owner_user_id, "argv": argv, "cwd": cwd, "env": vars, "name": name});
            let body: sluice_client::types::StartProcessRequest =
                serde_json::from_value(body).map_err(|e| anyhow::anyhow!("the process cannot be asked for: {e}"))?;
            let started =
                json(api.client.start_process().workspace_id(&workspace_id).body(body).send().await.map_err(failed)?);
            match common.output {
                Output::Json => println!("{}", serde_json::to_string_pretty(&started)?),
                Output::Table => println!("{}", line(&started)),
            }
        }
        ProcessesCommand::List { workspace_id, common } => {
            let api = Api::new(&common.api)?;
            let ask =
                api.client.list_processes().workspace_id(&workspace_id).owner_user_id(common.owner_user_id.as_str());
            let listed = json(ask.send().await.map_err(failed)?);
            match common.output {
                Output::Json => println!("{}", serde_json::to_string_pretty(&listed)?),
                Output::Table => {
                    println!("{:<22} {:<10} {:<9} {:<12} ARGV", "PROCESS", "NAME", "STATE", "ENDED");
                    for p in listed["items"].as_array().into_iter().flatten() {
                        println!("{}", line(p));
                    }
                }
            }
        }
        ProcessesCommand::Logs { workspace_id, process_id, common, follow } => {
            let api = Api::new(&common.api)?;
            return logs(&api, &common, &workspace_id, &process_id, follow).await;
        }
        ProcessesCommand::Signal { workspace_id, process_id, signal, common } => {
            let api = Api::new(&common.api)?;
            let owner = common.owner_user_id.clone();
            let ask = api.client.signal_process().workspace_id(&workspace_id).process_id(&process_id);
            let answer = json(ask.body_map(|b| b.owner_user_id(owner).signal(signal)).send().await.map_err(failed)?);
            match common.output {
                Output::Json => println!("{}", serde_json::to_string_pretty(&answer)?),
                Output::Table => println!("{}", line(&answer)),
            }
        }
        ProcessesCommand::Stdin { workspace_id, process_id, common, eof } => {
            let api = Api::new(&common.api)?;
            let mut input = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut input)?;
            let ask = api.client.write_process_stdin().workspace_id(&workspace_id).process_id(&process_id);
            let ask = ask.owner_user_id(common.owner_user_id.as_str()).eof(eof.to_string()).body(input);
            ask.send().await.map_err(failed)?;
        }
    }
    Ok(0)
}

/// Prints the process's output (stdout to stdout, stderr to stderr); with
/// `follow`, resumes after the last position when the stream breaks off,
/// and answers the process's exit code once it has ended.
async fn logs(api: &Api, common: &Common, workspace_id: &str, process_id: &str, follow: bool) -> anyhow::Result<i32> {
    let mut last: Option<String> = None;
    loop {
        let mut ask = api.client.process_output().workspace_id(workspace_id).process_id(process_id);
        ask = ask.owner_user_id(common.owner_user_id.as_str()).follow(follow.to_string());
        if let Some(last) = &last {
            ask = ask.last_event_id(last.clone());
        }
        let mut stream = match ask.send().await {
            Ok(stream) => stream.into_inner(),
            Err(sluice_client::Error::CommunicationError(e)) if follow => {
                eprintln!("the output stream broke off ({e}); resuming");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(failed(e)),
        };
        let mut messages = sluice_client::sse::Messages::new();
        while let Some(Ok(chunk)) = stream.next().await {
            for sluice_client::sse::Message { id, event, data } in messages.push(&chunk) {
                if !crate::workspaces::print_output(&event, &data)? {
                    match event.as_str() {
                        "cut" => {
                            eprintln!(
                                "(output from {} to {} was cut: only the newest is kept)",
                                data["from"], data["to"]
                            )
                        }
                        "ended" => {
                            eprintln!("{}", line(&data));
                            return Ok(data["exitCode"].as_i64().map_or(0, |c| c.clamp(0, 255) as i32));
                        }
                        _ => {}
                    }
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
