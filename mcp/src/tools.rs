//! The tools, each one call (or a short wait) of the HTTP API as the one
//! owner this server was started for. Arguments are snake_case and
//! unknown ones are refused, so a misspelt argument is an error, not a
//! silent default.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use sluice_client::sse::Messages;
use sluice_client::types;
use tokio::time::Instant;

use crate::failure::Failure;

/// How much a tool answers: a model's context is small and costly.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of a command's output (each stream), a process's output, or a
    /// file read in one call.
    pub output_bytes: usize,
    /// Entries of a directory listing.
    pub entries: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { output_bytes: 32 * 1024, entries: 500 }
    }
}

/// What this server acts as and creates with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The owner every call acts for.
    pub owner: String,
    /// The registry images are named in.
    pub registry: String,
    /// The image a create without one uses (`repository:tag`).
    pub image: Option<String>,
    pub limits: Limits,
}

/// The MCP server: one owner's workspaces, through the API.
#[derive(Clone)]
pub struct Workspaces {
    api: sluice_client::Client,
    settings: Arc<Settings>,
    tool_router: ToolRouter<Workspaces>,
}

/// How long one API request waits for a workspace (the API's most).
const LONG_POLL: Duration = Duration::from_secs(60);
/// How long reading a process's stored output may take.
const OUTPUT_READ: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWorkspace {
    /// The image, `repository:tag`. Leave it out to use the server's default image.
    pub image: Option<String>,
    /// A program the workspace keeps running, as an argv (for example
    /// ["python3", "-m", "http.server", "8000"]). Usually left out: start
    /// servers later with start_process.
    pub command: Option<Vec<String>>,
    /// Environment variables of the workspace.
    pub env: Option<BTreeMap<String, String>>,
    /// A name to know it by.
    pub name: Option<String>,
    /// How long to wait for it to be ready, in seconds (default 120, at most 600).
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceOnly {
    /// The workspace's id (from create_workspace or list_workspaces).
    pub workspace_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCommand {
    /// The workspace's id.
    pub workspace_id: String,
    /// A shell command line, run with `sh -c` (pipes, `&&` and redirections work).
    /// Give this or `argv`, not both.
    pub command: Option<String>,
    /// The program and its arguments, run without a shell. Give this or `command`.
    pub argv: Option<Vec<String>>,
    /// The directory it runs in, relative to the workspace's worktree (default: the worktree).
    pub cwd: Option<String>,
    /// Extra environment variables.
    pub env: Option<BTreeMap<String, String>>,
    /// Text given to its standard input.
    pub stdin: Option<String>,
    /// Seconds it may run before it is killed (default 120, at most 3600).
    /// For servers and anything long-lived use start_process instead.
    pub timeout_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartProcess {
    /// The workspace's id.
    pub workspace_id: String,
    /// A shell command line, run with `sh -c`. Give this or `argv`, not both.
    pub command: Option<String>,
    /// The program and its arguments, run without a shell. Give this or `command`.
    pub argv: Option<Vec<String>>,
    /// A name to know it by.
    pub name: Option<String>,
    /// The directory it runs in, relative to the worktree.
    pub cwd: Option<String>,
    /// Extra environment variables.
    pub env: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadProcessOutput {
    /// The workspace's id.
    pub workspace_id: String,
    /// The process's id (from start_process or list_processes).
    pub process_id: String,
    /// Only output after this position (the `position` an earlier call answered).
    pub after: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFile {
    /// The workspace's id.
    pub workspace_id: String,
    /// The file, relative to the worktree.
    pub path: String,
    /// The first byte to read (default 0): read a long file in parts.
    pub offset: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    /// The workspace's id.
    pub workspace_id: String,
    /// The file, relative to the worktree. Missing directories above it are made.
    pub path: String,
    /// Its whole new content, as text.
    pub content: String,
    /// Its permission bits, octal (default "644"; "755" for a script).
    pub mode: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFiles {
    /// The workspace's id.
    pub workspace_id: String,
    /// The directory, relative to the worktree (default: the worktree itself).
    pub path: Option<String>,
    /// How many levels to list, 1 to 4 (default 1).
    pub depth: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenPreview {
    /// The workspace's id.
    pub workspace_id: String,
    /// The port a server in the workspace listens on.
    pub port: u16,
    /// Anyone with the URL may visit, without the signed first visit (default false).
    pub public: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopWorkspace {
    /// The workspace's id.
    pub workspace_id: String,
    /// Throw away work not yet saved instead of keeping the workspace for
    /// recovery (default false). Only when the user said the work does not matter.
    pub discard_unsaved: Option<bool>,
    /// How long to wait for it to end, in seconds (default 120, at most 600).
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkWorkspace {
    /// The workspace's id.
    pub workspace_id: String,
    /// How many copies, 1 to 100 (default 1).
    pub count: Option<u64>,
    /// The copies' names start with this (default: the workspace's name and `-fork`).
    pub name_prefix: Option<String>,
    /// How long to wait for every copy to be ready, in seconds (default 120, at most 600).
    pub wait_seconds: Option<u64>,
}

type Answer = Result<Value, Failure>;

/// A tool's arguments, read so that a refusal names the argument it is
/// about (`argv: invalid type: string …`), not only what was expected.
pub struct Named<T>(pub T);

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Named<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Named<T>, D::Error> {
        let value = Value::deserialize(deserializer)?;
        serde_path_to_error::deserialize(value).map(Named).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            match path.as_str() {
                "." | "" => serde::de::Error::custom(inner),
                path => serde::de::Error::custom(format!("{path}: {inner}")),
            }
        })
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Named<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

fn respond(answer: Answer) -> CallToolResult {
    match answer {
        Ok(value) => CallToolResult::structured(value),
        Err(failure) => failure.into_result(),
    }
}

#[tool_router]
impl Workspaces {
    pub fn new(api: sluice_client::Client, settings: Settings) -> Workspaces {
        Workspaces { api, settings: Arc::new(settings), tool_router: Self::tool_router() }
    }

    fn owner(&self) -> &str {
        &self.settings.owner
    }

    #[tool(description = "Create a new workspace (an isolated Linux machine with a worktree that is saved \
        continuously) and wait until it is ready. Answers its workspace_id, which every other tool takes.")]
    async fn create_workspace(&self, Parameters(Named(args)): Parameters<Named<CreateWorkspace>>) -> CallToolResult {
        respond(self.create(args).await)
    }

    #[tool(description = "List this owner's workspaces: id, name and status of each (newest first).")]
    async fn list_workspaces(&self) -> CallToolResult {
        respond(self.list().await)
    }

    #[tool(description = "Run a command in a workspace and wait for it to end. Answers its exit code, \
        stdout and stderr (long output keeps its start and end; `stdout_cut`/`stderr_cut` say so) and \
        whether it timed out. For servers or anything that keeps running, use start_process.")]
    async fn run_command(&self, Parameters(Named(args)): Parameters<Named<RunCommand>>) -> CallToolResult {
        respond(self.run(args).await)
    }

    #[tool(description = "Start a background process in a workspace (a server, a watcher, a long build) \
        and return at once with its process_id. It keeps running until it ends or the workspace stops; \
        read_process_output shows what it printed.")]
    async fn start_process(&self, Parameters(Named(args)): Parameters<Named<StartProcess>>) -> CallToolResult {
        respond(self.start(args).await)
    }

    #[tool(description = "List a workspace's background processes: id, name, argv, state and exit code.")]
    async fn list_processes(&self, Parameters(Named(args)): Parameters<Named<WorkspaceOnly>>) -> CallToolResult {
        respond(self.processes(args).await)
    }

    #[tool(description = "Read what a background process printed (stdout and stderr together, newest \
        kept when long), its state, and a `position`: pass it as `after` next time to read only what is new.")]
    async fn read_process_output(
        &self,
        Parameters(Named(args)): Parameters<Named<ReadProcessOutput>>,
    ) -> CallToolResult {
        respond(self.output(args).await)
    }

    #[tool(description = "Read a text file of a workspace. A long file is answered in parts: \
        `next_offset` is where the next part starts.")]
    async fn read_file(&self, Parameters(Named(args)): Parameters<Named<ReadFile>>) -> CallToolResult {
        respond(self.read(args).await)
    }

    #[tool(description = "Write a text file in a workspace (replacing it whole), making missing directories.")]
    async fn write_file(&self, Parameters(Named(args)): Parameters<Named<WriteFile>>) -> CallToolResult {
        respond(self.write(args).await)
    }

    #[tool(description = "List a directory of a workspace: each entry's path, kind (file, dir, symlink) and size.")]
    async fn list_files(&self, Parameters(Named(args)): Parameters<Named<ListFiles>>) -> CallToolResult {
        respond(self.list_dir(args).await)
    }

    #[tool(description = "Open a preview URL for a port a server in the workspace listens on (start the \
        server with start_process first; it should listen on 0.0.0.0 or 127.0.0.1). A private URL carries \
        a one-time token for its first visit: give the whole URL to the user.")]
    async fn open_preview(&self, Parameters(Named(args)): Parameters<Named<OpenPreview>>) -> CallToolResult {
        respond(self.preview(args).await)
    }

    #[tool(description = "Copy a workspace: each copy starts with its files as they are now (not its \
        memory: its processes start afresh) and goes its own way; nothing written in one shows in another \
        or in the original. Use it to try several approaches side by side. Waits until the copies are ready.")]
    async fn fork_workspace(&self, Parameters(Named(args)): Parameters<Named<ForkWorkspace>>) -> CallToolResult {
        respond(self.fork(args).await)
    }

    #[tool(description = "Stop a workspace. Its work is saved first; a workspace whose work cannot be \
        saved is kept (status `retained`) for recovery rather than lost. Waits until it has ended.")]
    async fn stop_workspace(&self, Parameters(Named(args)): Parameters<Named<StopWorkspace>>) -> CallToolResult {
        respond(self.stop(args).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Workspaces {
    fn get_info(&self) -> ServerConfig {
        let image = match &self.settings.image {
            Some(image) => format!("create_workspace uses the image {image} unless given one."),
            None => "create_workspace needs an image (`repository:tag`).".to_owned(),
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("sluice", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "sluice workspaces: isolated machines whose files are saved as they change. Create one with \
                 create_workspace, then run commands, start servers, read and write files in it, and stop \
                 it when the task is done. Every workspace you see belongs to {}. {image}",
                self.settings.owner
            ))
    }
}

impl Workspaces {
    async fn create(&self, args: CreateWorkspace) -> Answer {
        let image = args
            .image
            .or_else(|| self.settings.image.clone())
            .ok_or_else(|| Failure::bad("image", "this server has no default image: name one as `repository:tag`"))?;
        let (repository, tag) = split_image(&image);
        let wait = Duration::from_secs(args.wait_seconds.unwrap_or(120).clamp(1, 600));
        let mut spec = serde_json::Map::new();
        if let Some(command) = args.command {
            spec.insert("command".into(), json!(command));
        }
        if let Some(env) = args.env {
            spec.insert("env".into(), json!(env));
        }
        // Its files are saved as they change, in a capture session of its own.
        let session: types::CreateCaptureSessionRequest = typed("arguments", json!({"ownerUserId": self.owner()}))?;
        let session = self.api.create_capture_session().body(session).send().await?.into_inner();
        spec.insert("source".into(), json!({"kind": "capture", "sessionId": session.session_id}));
        let mut body = json!({
            "ownerUserId": self.owner(),
            "registryId": self.settings.registry,
            "repository": repository,
            "tag": tag,
            "spec": spec,
            "captureToken": session.token,
            "idempotencyKey": format!("mcp-{}", uuid::Uuid::new_v4()),
        });
        if let Some(name) = args.name {
            body["name"] = json!(name);
        }
        let body: types::CreateWorkspaceRequest = typed("arguments", body)?;
        let created = self.api.create_workspace().body(body).send().await?.into_inner();
        let id = created.workspace_id.clone();
        let workspace = self.wait_ready(&id, wait).await?;
        let status = workspace["status"].as_str().unwrap_or("");
        if status != "ready" {
            let why = workspace["error"]["message"].as_str().unwrap_or(status);
            return Err(Failure::Ended(format!("workspace {id} did not start: it is {status} ({why})")));
        }
        Ok(json!({"workspace_id": id, "status": status, "name": workspace["name"], "image": image}))
    }

    /// The workspace once it is ready or will never be by itself, or an
    /// error at `wait`.
    async fn wait_ready(&self, id: &str, wait: Duration) -> Result<Value, Failure> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ask = self.api.get_workspace().workspace_id(id).owner_user_id(self.owner());
            let ask = ask.wait_for(types::WaitFor::Ready).timeout_ms(left.min(LONG_POLL).as_millis().to_string());
            let workspace = serde_json::to_value(ask.send().await?.into_inner()).unwrap_or_default();
            let starting = matches!(workspace["status"].as_str(), Some("queued" | "running"));
            if !starting {
                return Ok(workspace);
            }
            if Instant::now() >= deadline {
                return Err(Failure::TimedOut(format!(
                    "workspace {id} is still starting after {} s: call create_workspace's result later with \
                     list_workspaces, or wait longer next time (wait_seconds)",
                    wait.as_secs()
                )));
            }
        }
    }

    async fn list(&self) -> Answer {
        let listed = self.api.list_workspaces().owner_user_id(self.owner()).limit("100").send().await?.into_inner();
        let listed = serde_json::to_value(listed).unwrap_or_default();
        let items: Vec<Value> = listed["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| json!({"workspace_id": w["workspaceId"], "name": w["name"], "status": w["status"]}))
            .collect();
        Ok(json!({"workspaces": items}))
    }

    async fn run(&self, args: RunCommand) -> Answer {
        let argv = argv_of(args.command, args.argv)?;
        let timeout = Duration::from_secs(args.timeout_seconds.unwrap_or(120).clamp(1, 3600));
        let mut command = json!({"argv": argv, "timeoutMs": timeout.as_millis() as u64});
        for (field, value) in [("cwd", args.cwd.map(Value::from)), ("stdin", args.stdin.map(Value::from))] {
            if let Some(value) = value {
                command[field] = value;
            }
        }
        if let Some(env) = args.env {
            command["env"] = json!(env);
        }
        let body: types::ExecWorkspaceRequest =
            typed("arguments", json!({"ownerUserId": self.owner(), "commands": [command]}))?;
        let ask = self.api.exec_workspace().workspace_id(&args.workspace_id).body(body);
        let ask = ask.wait_for(types::WaitFor::Ready).timeout_ms(LONG_POLL.as_millis().to_string());
        let mut run = ask.send().await?.into_inner();
        // The command's own timeout ends it; the margin covers its start and report.
        let deadline = Instant::now() + timeout + Duration::from_secs(30);
        let mut pause = Duration::from_millis(20);
        while matches!(run.status, types::RunStatus::Queued | types::RunStatus::Running) {
            if Instant::now() >= deadline {
                return Err(Failure::TimedOut(format!(
                    "run {} of workspace {} has not ended {} s after its timeout",
                    run.run_id,
                    args.workspace_id,
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
            run = self.api.get_run().run_id(&run.run_id).owner_user_id(self.owner()).send().await?.into_inner();
        }
        if let types::RunStatus::Failed = run.status {
            let why = run.error.as_ref().map_or("no reason was given", |e| e.message.as_str());
            return Err(Failure::Ended(format!("the command could not be run: {why}")));
        }
        let Some(result) = run.commands.first() else {
            return Err(Failure::Ended("the run ended without the command's result".into()));
        };
        let limit = self.settings.limits.output_bytes;
        let (stdout, stdout_cut) = head_and_tail(&result.stdout, limit);
        let (stderr, stderr_cut) = head_and_tail(&result.stderr, limit);
        Ok(json!({
            "exit_code": result.exit_code,
            "stdout": stdout,
            "stderr": stderr,
            "stdout_cut": stdout_cut || result.stdout_truncated,
            "stderr_cut": stderr_cut || result.stderr_truncated,
            "timed_out": result.timed_out,
        }))
    }

    async fn start(&self, args: StartProcess) -> Answer {
        let argv = argv_of(args.command, args.argv)?;
        let mut body = json!({"ownerUserId": self.owner(), "argv": argv});
        for (field, value) in [("name", args.name), ("cwd", args.cwd)] {
            if let Some(value) = value {
                body[field] = json!(value);
            }
        }
        if let Some(env) = args.env {
            body["env"] = json!(env);
        }
        let body: types::StartProcessRequest = typed("arguments", body)?;
        let ask = self.api.start_process().workspace_id(&args.workspace_id).body(body);
        let ask = ask.wait_for(types::WaitFor::Ready).timeout_ms(LONG_POLL.as_millis().to_string());
        let started = ask.send().await?.into_inner();
        Ok(process(&serde_json::to_value(started).unwrap_or_default()))
    }

    async fn processes(&self, args: WorkspaceOnly) -> Answer {
        let ask = self.api.list_processes().workspace_id(&args.workspace_id).owner_user_id(self.owner());
        let listed = serde_json::to_value(ask.send().await?.into_inner()).unwrap_or_default();
        let items: Vec<Value> = listed["items"].as_array().into_iter().flatten().map(process).collect();
        Ok(json!({"processes": items}))
    }

    async fn output(&self, args: ReadProcessOutput) -> Answer {
        let mut ask = self.api.process_output().workspace_id(&args.workspace_id).process_id(&args.process_id);
        ask = ask.owner_user_id(self.owner()).follow("false");
        if let Some(after) = args.after {
            ask = ask.last_event_id(after);
        }
        let mut stream = ask.send().await?.into_inner();
        let limit = self.settings.limits.output_bytes;
        let mut kept = String::new();
        let mut cut = false;
        let mut position = None;
        let mut ended = None;
        let mut messages = Messages::new();
        let deadline = Instant::now() + OUTPUT_READ;
        loop {
            let chunk = match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => break,
                Ok(None) => break,
                Ok(Some(chunk)) => chunk.map_err(|e| Failure::Unreachable(format!("the output broke off: {e}")))?,
            };
            for message in messages.push(&chunk) {
                match message.event.as_str() {
                    "stdout" | "stderr" => kept.push_str(message.data["text"].as_str().unwrap_or("")),
                    "cut" => cut = true,
                    "ended" => ended = Some(message.data),
                    _ => {}
                }
                if message.id.is_some() {
                    position = message.id;
                }
            }
            // Only the newest output is kept: a server's log grows without end.
            if kept.len() > limit {
                let from = floor_char_boundary(&kept, kept.len() - limit);
                kept.drain(..from);
                cut = true;
            }
        }
        let mut answer = json!({"output": kept, "cut": cut, "position": position});
        match ended {
            Some(record) => {
                answer["state"] = json!("ended");
                answer["exit_code"] = record["exitCode"].clone();
                answer["signal"] = record["signal"].clone();
            }
            None => answer["state"] = json!("running"),
        }
        Ok(answer)
    }

    async fn read(&self, args: ReadFile) -> Answer {
        let limit = self.settings.limits.output_bytes as u64;
        let offset = args.offset.unwrap_or(0);
        let ask = self.api.read_workspace_file().workspace_id(&args.workspace_id).owner_user_id(self.owner());
        // Whatever offset a model sends: no overflow, only a range past the end.
        let ask = ask.path(args.path.as_str()).range(format!("bytes={offset}-{}", offset.saturating_add(limit - 1)));
        let answer = match ask.send().await {
            Ok(answer) => answer,
            Err(sluice_client::Error::UnexpectedResponse(r)) if r.status().as_u16() == 416 => {
                return Ok(
                    json!({"path": args.path, "content": "", "offset": offset, "note": "past the end of the file"}),
                );
            }
            Err(e) => return Err(e.into()),
        };
        let size = answer
            .headers()
            .get("content-range")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit_once('/'))
            .and_then(|(_, total)| total.parse::<u64>().ok());
        let mut bytes = Vec::new();
        let mut stream = answer.into_inner();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Failure::Unreachable(format!("the file's bytes broke off: {e}")))?;
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 >= limit {
                break;
            }
        }
        bytes.truncate(limit as usize);
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => text.to_owned(),
            // A part may end inside a character: the rest starts the next part.
            Err(e) if e.error_len().is_none() => String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned(),
            Err(_) => {
                return Err(Failure::bad(
                    "path",
                    "the file is not text; run_command can inspect it (for example `file`, `xxd | head`, `base64`)",
                ));
            }
        };
        let read_to = offset.saturating_add(text.len() as u64);
        let size = size.unwrap_or(read_to);
        let mut answer = json!({"path": args.path, "content": text, "offset": offset, "size": size});
        if read_to < size {
            answer["next_offset"] = json!(read_to);
        }
        Ok(answer)
    }

    async fn write(&self, args: WriteFile) -> Answer {
        let mut ask = self.api.write_workspace_file().workspace_id(&args.workspace_id).owner_user_id(self.owner());
        ask = ask.path(args.path.as_str()).parents("true").body(args.content.into_bytes());
        if let Some(mode) = args.mode {
            ask = ask.mode(mode);
        }
        let written = ask.wait_for(types::WaitFor::Ready).timeout_ms(LONG_POLL.as_millis().to_string());
        let written = written.send().await?.into_inner();
        Ok(json!({"path": args.path, "size": written.size, "written": true}))
    }

    async fn list_dir(&self, args: ListFiles) -> Answer {
        let depth = args.depth.unwrap_or(1);
        if !(1..=4).contains(&depth) {
            return Err(Failure::bad("depth", "from 1 to 4"));
        }
        let mut ask = self.api.list_workspace_files().workspace_id(&args.workspace_id).owner_user_id(self.owner());
        ask = ask.depth(depth.to_string());
        if let Some(path) = &args.path {
            ask = ask.path(path.as_str());
        }
        let listing = ask.send().await?.into_inner();
        let limit = self.settings.limits.entries;
        let entries: Vec<Value> = listing
            .entries
            .iter()
            .take(limit)
            .map(|e| {
                let name = e
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("(not UTF-8: hex {})", e.name_hex.as_deref().unwrap_or("")));
                json!({"path": name, "kind": e.kind.to_string(), "size": e.size})
            })
            .collect();
        let truncated = listing.truncated || listing.entries.len() > limit;
        Ok(json!({"path": args.path.unwrap_or_default(), "entries": entries, "truncated": truncated}))
    }

    async fn preview(&self, args: OpenPreview) -> Answer {
        if args.port == 0 {
            return Err(Failure::bad("port", "from 1 to 65535"));
        }
        let body: types::CreatePreviewRequest = typed(
            "arguments",
            json!({"ownerUserId": self.owner(), "port": args.port, "public": args.public.unwrap_or(false)}),
        )?;
        let preview = self.api.create_preview().workspace_id(&args.workspace_id).body(body).send().await?;
        let preview = preview.into_inner();
        Ok(
            json!({"url": preview.url, "port": preview.port, "public": preview.public, "expires_at": preview.expires_at}),
        )
    }

    async fn fork(&self, args: ForkWorkspace) -> Answer {
        let count = args.count.unwrap_or(1);
        if !(1..=100).contains(&count) {
            return Err(Failure::bad("count", "from 1 to 100"));
        }
        let wait = Duration::from_secs(args.wait_seconds.unwrap_or(120).clamp(1, 600));
        let mut body = json!({"ownerUserId": self.owner(), "count": count});
        if let Some(prefix) = args.name_prefix {
            body["namePrefix"] = json!(prefix);
        }
        let body: types::ForkRequest = typed("arguments", body)?;
        let forked = self.api.fork_workspace().workspace_id(&args.workspace_id).body(body).send().await?.into_inner();
        // The sessions' tokens stay here: a copy is reached by its id.
        let mut copies = Vec::new();
        for item in &forked.items {
            let workspace = self.wait_ready(&item.workspace_id, wait).await?;
            copies.push(json!({"workspace_id": item.workspace_id, "name": item.name, "status": workspace["status"]}));
        }
        Ok(json!({"copies": copies}))
    }

    async fn stop(&self, args: StopWorkspace) -> Answer {
        let wait = Duration::from_secs(args.wait_seconds.unwrap_or(120).clamp(1, 600));
        let mut body = json!({"ownerUserId": self.owner()});
        if args.discard_unsaved == Some(true) {
            body["discardUnsaved"] = json!(true);
        }
        let body: types::StopWorkspaceRequest = typed("arguments", body)?;
        let stopping = self.api.stop_workspace().workspace_id(&args.workspace_id).body(body).send().await?;
        let mut status = stopping.into_inner().status.to_string();
        let deadline = Instant::now() + wait;
        while !ended(&status) {
            if Instant::now() >= deadline {
                return Ok(json!({"workspace_id": args.workspace_id, "status": status,
                    "note": "still stopping: its work is being saved; list_workspaces shows when it has ended"}));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            let ask = self.api.get_workspace().workspace_id(&args.workspace_id).owner_user_id(self.owner());
            status = ask.send().await?.into_inner().status.to_string();
        }
        let mut answer = json!({"workspace_id": args.workspace_id, "status": status});
        if status == "retained" {
            answer["note"] = json!("its work could not be proven saved, so it was kept for recovery, not deleted");
        }
        Ok(answer)
    }
}

fn ended(status: &str) -> bool {
    matches!(status, "stopped" | "failed" | "cancelled" | "retained")
}

/// A process as the tools show it.
fn process(record: &Value) -> Value {
    json!({
        "process_id": record["processId"],
        "name": record["name"],
        "argv": record["argv"],
        "state": record["state"],
        "exit_code": record["exitCode"],
        "signal": record["signal"],
    })
}

/// `command` (through `sh -c`) or `argv`: exactly one.
fn argv_of(command: Option<String>, argv: Option<Vec<String>>) -> Result<Vec<String>, Failure> {
    match (command, argv) {
        (Some(command), None) if !command.trim().is_empty() => Ok(vec!["sh".into(), "-c".into(), command]),
        (None, Some(argv)) if !argv.is_empty() && !argv[0].is_empty() => Ok(argv),
        (Some(_), Some(_)) => Err(Failure::bad("command", "give `command` or `argv`, not both")),
        (Some(_), None) => Err(Failure::bad("command", "is empty")),
        (None, Some(_)) => Err(Failure::bad("argv", "needs at least the program")),
        (None, None) => Err(Failure::bad("command", "give `command` (a shell line) or `argv`")),
    }
}

/// A typed request body from JSON; what does not fit is the caller's.
fn typed<T: serde::de::DeserializeOwned>(field: &'static str, value: Value) -> Result<T, Failure> {
    serde_json::from_value(value).map_err(|e| Failure::bad(field, e.to_string()))
}

/// `repository:tag` (`latest` when no tag; a registry port is no tag).
fn split_image(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => (repository, tag),
        _ => (image, "latest"),
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// `text` whole if it fits `limit` bytes, else its first and last halves
/// around a line saying how much was cut; and whether it was cut.
fn head_and_tail(text: &str, limit: usize) -> (String, bool) {
    if text.len() <= limit {
        return (text.to_owned(), false);
    }
    let mut head = limit / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let tail = floor_char_boundary(text, text.len() - limit / 2);
    let cut = tail - head;
    (format!("{}\n[… {cut} bytes cut …]\n{}", &text[..head], &text[tail..]), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_keeps_its_start_and_end_on_character_boundaries() {
        let text = format!("{}{}", "é".repeat(100), "z".repeat(100));
        let (kept, cut) = head_and_tail(&text, 51);
        assert!(cut);
        assert!(kept.starts_with(&"é".repeat(12)), "{kept}");
        assert!(kept.ends_with(&"z".repeat(25)), "{kept}");
        assert!(kept.contains(&format!("[… {} bytes cut …]", 300 - 24 - 25)), "{kept}");
        assert_eq!(head_and_tail("short", 51), ("short".to_owned(), false));
    }

    #[test]
    fn a_command_is_a_shell_line_or_an_argv_never_both_or_neither() {
        // (command, argv, the argv run or a word of the refusal)
        type Case<'a> = (Option<&'a str>, Option<Vec<&'a str>>, Result<Vec<&'a str>, &'a str>);
        let cases: [Case; 6] = [
            (Some("echo hi | wc -c"), None, Ok(vec!["sh", "-c", "echo hi | wc -c"])),
            (None, Some(vec!["python3", "-V"]), Ok(vec!["python3", "-V"])),
            (Some("ls"), Some(vec!["ls"]), Err("not both")),
            (None, None, Err("give `command`")),
            (Some("  "), None, Err("is empty")),
            (None, Some(vec![]), Err("at least the program")),
        ];
        for (command, argv, expected) in cases {
            let got = argv_of(command.map(str::to_owned), argv.map(|a| a.into_iter().map(str::to_owned).collect()));
            match (got, expected) {
                (Ok(got), Ok(expected)) => assert_eq!(got, expected),
                (Err(got), Err(expected)) => assert!(got.to_string().contains(expected), "{got}"),
                (got, expected) => panic!("{command:?} {got:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn an_image_splits_into_repository_and_tag() {
        assert_eq!(split_image("sluice-test/busybox:1"), ("sluice-test/busybox", "1"));
        assert_eq!(split_image("python"), ("python", "latest"));
        assert_eq!(split_image("registry:5000/team/app"), ("registry:5000/team/app", "latest"));
    }
}
