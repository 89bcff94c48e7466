//! The CLI for people against the real `sluice serve`, through the typed
//! client (`sluice-client`), which this test also uses for its own calls:
//! a profile from ~/.config/sluice/config.toml, flags and the environment
//! over it; workspaces created, listed, read, exec'd (the command's exit
//! code is the CLI's), restarted and stopped; a run read back; events
//! followed live; completions printed.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use sluice_client::types::WorkspaceStatus;
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::{poll_until, wait_for};

const WITHIN: Duration = Duration::from_secs(90);

/// The CLI with only `home` for its profile: no API address or token in
/// its environment.
fn sluice(home: &Path) -> Command {
    let mut command = Command::new(sluice_tests::sluice_binary());
    in_home(&mut command, home);
    command
}

/// `command` with only `home` and the PATH in its environment.
fn in_home<'a>(command: &'a mut Command, home: &Path) -> &'a mut Command {
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .current_dir(home)
        .stdin(Stdio::null())
}

fn run(command: &mut Command) -> Output {
    command.output().expect("the CLI runs")
}

fn ok_json(command: &mut Command) -> Value {
    let out = run(command);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{command:?}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

async fn wait_status(client: &sluice_client::Client, id: &str, want: WorkspaceStatus) {
    poll_until(&format!("{id} is {want}"), WITHIN, || async {
        let answer = client.get_workspace().workspace_id(id).owner_user_id("alice").send().await.unwrap();
        (answer.status == want).then_some(())
    })
    .await;
}

#[tokio::test]
async fn people_drive_workspaces_from_the_cli_through_the_typed_client() {
    let dir = DataDir::new();
    // Webhook endpoints may be on loopback here: one points at a closed port.
    let server = Server::start_with(&dir.path(), Options::serve().arg("--webhook-allow-private")).await;
    let client = server.api();

    // The profile names the API and the file its token is read from.
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".config/sluice");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[profiles.default]\napi-url = \"{}\"\napi-token-file = \"{}\"\n\n[profiles.nowhere]\napi-url = \"http://127.0.0.1:9\"\napi-token-file = \"{}\"\n",
            server.base,
            dir.path().join("api-token").display(),
            dir.path().join("api-token").display(),
        ),
    )
    .unwrap();
    let home = home.path();

    let created = ok_json(sluice(home).args([
        "workspaces",
        "create",
        "--owner",
        "alice",
        "--image",
        "sluice-test/busybox:1",
        "--registry",
        "host",
        "--output",
        "json",
        "--",
        "sleep",
        "600",
    ]));
    let id = created["workspaceId"].as_str().expect("the create's answer").to_owned();
    wait_status(&client, &id, WorkspaceStatus::Ready).await;

    // A flag, then the environment, win over the profile; a profile that
    // does not exist is named.
    let elsewhere =
        run(sluice(home).args(["workspaces", "list", "--owner", "alice", "--api-url", "http://127.0.0.1:9"]));
    assert!(!elsewhere.status.success());
    assert!(String::from_utf8_lossy(&elsewhere.stderr).contains("cannot be reached"));
    let by_env =
        run(sluice(home).env("SLUICE_API_URL", "http://127.0.0.1:9").args(["workspaces", "list", "--owner", "alice"]));
    assert!(!by_env.status.success(), "the environment wins over the profile");
    let nowhere = run(sluice(home).args(["workspaces", "list", "--owner", "alice", "--profile", "nowhere"]));
    assert!(!nowhere.status.success(), "a named profile is used");
    let missing = run(sluice(home).args(["workspaces", "list", "--owner", "alice", "--profile", "staging"]));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no profile \"staging\""));

    // List (a table by default) and get.
    let table = run(sluice(home).args(["workspaces", "list", "--owner", "alice"]));
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    assert!(table.starts_with("WORKSPACE"), "{table}");
    assert!(table.lines().any(|l| l.contains(&id) && l.contains("ready")), "{table}");
    let listed =
        ok_json(sluice(home).args(["workspaces", "list", "--owner", "alice", "--status", "ready", "-o", "json"]));
    assert_eq!(listed["items"][0]["workspaceId"], id.as_str());
    let got = ok_json(sluice(home).args(["workspaces", "get", &id, "--owner", "alice", "--output", "json"]));
    assert_eq!(got["status"], "ready");
    // An error is one line, a backtrace or not; `--debug` gives its causes.
    let absent =
        run(sluice(home).env("RUST_BACKTRACE", "1").args(["workspaces", "get", "ws_nope", "--owner", "alice"]));
    assert_eq!(absent.status.code(), Some(1), "{absent:?}");
    let said = String::from_utf8_lossy(&absent.stderr);
    assert!(said.starts_with("error: ") && said.contains("404") && said.lines().count() == 1, "{said}");
    let debug = run(sluice(home).args(["workspaces", "get", "ws_nope", "--owner", "alice", "--debug"]));
    assert_eq!(debug.status.code(), Some(1), "{debug:?}");
    assert!(String::from_utf8_lossy(&debug.stderr).starts_with("error: "), "{debug:?}");

    // Exec: the output printed, the exit code the CLI's; the run read back.
    let script = "busybox echo out; busybox echo err >&2; exit 7";
    let exec =
        run(sluice(home).args(["workspaces", "exec", &id, "--owner", "alice", "--", "busybox", "sh", "-c", script]));
    assert_eq!(exec.status.code(), Some(7), "{exec:?}");
    assert_eq!(String::from_utf8_lossy(&exec.stdout), "out\n");
    assert_eq!(String::from_utf8_lossy(&exec.stderr), "err\n");
    // Where it runs, its environment, its input and its time limit.
    let exec_in = |flags: &[&str], argv: &[&str]| {
        let mut command = sluice(home);
        command.args(["workspaces", "exec", &id, "--owner", "alice"]).args(flags).arg("--").args(argv);
        command
    };
    assert_eq!(run(&mut exec_in(&[], &["busybox", "mkdir", "-p", "sub"])).status.code(), Some(0));
    let placed = run(&mut exec_in(
        &["--cwd", "sub", "--env", "GREETING=hi", "--env", "PAIR=a=b"],
        &["busybox", "sh", "-c", "busybox pwd; echo $GREETING $PAIR"],
    ));
    let printed = String::from_utf8_lossy(&placed.stdout).to_string();
    assert_eq!(placed.status.code(), Some(0), "{placed:?}");
    assert!(printed.lines().next().is_some_and(|l| l.ends_with("/sub")), "{printed}");
    assert!(printed.ends_with("hi a=b\n"), "{printed}");
    let bad = run(&mut exec_in(&["--env", "NOVALUE"], &["busybox", "true"]));
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("NAME=VALUE"), "{bad:?}");
    let mut fed =
        exec_in(&["--stdin"], &["busybox", "cat"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    fed.stdin.take().unwrap().write_all(b"fed in\n").unwrap();
    let fed = fed.wait_with_output().unwrap();
    assert_eq!((fed.status.code(), String::from_utf8_lossy(&fed.stdout).as_ref()), (Some(0), "fed in\n"), "{fed:?}");
    // Its output as it comes: the first line is read while the CLI still runs.
    let mut live = exec_in(&[], &["busybox", "sh", "-c", "for i in 1 2 3; do echo $i; busybox sleep 1; done; exit 4"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(live.stdout.take().unwrap());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    assert_eq!(first, "1\n");
    assert!(live.try_wait().unwrap().is_none(), "the first line came before the command ended");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut lines, &mut rest).unwrap();
    assert_eq!((rest.as_str(), live.wait().unwrap().code()), ("2\n3\n", Some(4)));
    let limited = run(&mut exec_in(&["--timeout", "1"], &["busybox", "sleep", "30"]));
    assert_ne!(limited.status.code(), Some(0), "{limited:?}");
    assert!(String::from_utf8_lossy(&limited.stderr).contains("timed out"), "{limited:?}");

    let ran =
        run(sluice(home).args(["workspaces", "exec", &id, "--owner", "alice", "-o", "json", "--", "busybox", "true"]));
    assert_eq!(ran.status.code(), Some(0));
    let ran: Value = serde_json::from_slice(&ran.stdout).unwrap();
    let run_id = ran["runId"].as_str().unwrap().to_owned();
    let read = ok_json(sluice(home).args(["runs", "get", &run_id, "--owner", "alice", "-o", "json"]));
    assert_eq!((read["status"].as_str(), read["commands"][0]["exitCode"].as_i64()), (Some("completed"), Some(0)));
    // Read back as a table: each command's exit, and the run's as the CLI's.
    let shown = run(sluice(home).args(["runs", "get", &run_id, "--owner", "alice"]));
    assert_eq!(shown.status.code(), Some(0), "{shown:?}");
    assert!(String::from_utf8_lossy(&shown.stderr).contains("exit 0: busybox true"), "{shown:?}");
    let argv = ["busybox", "sh", "-c", "exit 3"];
    let three = run(sluice(home).args(["workspaces", "exec", &id, "--owner", "alice", "-o", "json", "--"]).args(argv));
    assert_eq!(three.status.code(), Some(3), "{three:?}");
    let three: Value = serde_json::from_slice(&three.stdout).unwrap();
    let again = run(sluice(home).args(["runs", "get", three["runId"].as_str().unwrap(), "--owner", "alice"]));
    assert_eq!(again.status.code(), Some(3), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("exit 3: busybox sh -c exit 3"), "{again:?}");

    // In a script: a create that waits, then an exec straight after it.
    let script = format!(
        "set -e; id=$('{sluice}' workspaces create --owner alice --image sluice-test/busybox:1 --registry host --wait -- sleep 600 \
           | cut -d' ' -f1); '{sluice}' workspaces exec \"$id\" --owner alice -- busybox echo scripted",
        sluice = sluice_tests::sluice_binary().display()
    );
    let scripted = run(in_home(Command::new("sh").arg("-c").arg(&script), home));
    assert_eq!(scripted.status.code(), Some(0), "{scripted:?}");
    assert_eq!(String::from_utf8_lossy(&scripted.stdout), "scripted\n", "{scripted:?}");

    // Files: put (from a file and from stdin), ls, get, cp both ways, mv, rm.
    let files = |args: &[&str]| {
        let mut command = sluice(home);
        command.arg("files").args(args).args(["--owner", "alice"]);
        command
    };
    let local = home.join("local.txt");
    std::fs::write(&local, "from the cli\n").unwrap();
    let put = run(&mut files(&["put", &id, local.to_str().unwrap(), "notes/a.txt", "--parents", "--mode", "600"]));
    assert_eq!(
        (put.status.code(), String::from_utf8_lossy(&put.stdout).as_ref()),
        (Some(0), "notes/a.txt: 13 bytes\n"),
        "{put:?}"
    );
    let mut piped = files(&["put", &id, "-", "notes/b.txt"]).stdin(Stdio::piped()).spawn().unwrap();
    piped.stdin.take().unwrap().write_all(b"piped in").unwrap();
    assert!(piped.wait().unwrap().success());
    let listed = run(&mut files(&["ls", &id, "notes"]));
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(listed.contains("file      0600           13 a.txt") && listed.contains(" b.txt"), "{listed}");
    let got = run(&mut files(&["get", &id, "notes/b.txt"]));
    assert_eq!(got.stdout, b"piped in");
    let copied = home.join("copied.txt");
    assert!(run(&mut files(&["cp", &format!("{id}:notes/a.txt"), copied.to_str().unwrap()])).status.success());
    assert_eq!(std::fs::read_to_string(&copied).unwrap(), "from the cli\n");
    assert!(run(&mut files(&["cp", copied.to_str().unwrap(), &format!("{id}:deep/er/c.txt")])).status.success());
    assert!(run(&mut files(&["mv", &id, "deep/er/c.txt", "c.txt"])).status.success());
    assert_eq!(run(&mut files(&["get", &id, "c.txt"])).stdout, b"from the cli\n");
    let refused = run(&mut files(&["rm", &id, "deep"]));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("directory-not-empty"), "{refused:?}");
    assert!(run(&mut files(&["rm", &id, "deep", "-r"])).status.success());
    let missing = run(&mut files(&["get", &id, "deep/er/c.txt"]));
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(!home.join(".missing.partial").exists());
    let outside = run(&mut files(&["get", &id, "../../etc/passwd"]));
    assert!(String::from_utf8_lossy(&outside.stderr).contains("path"), "{outside:?}");

    // A directory packed as a tar archive and unpacked into another, from
    // a file and from the CLI's input.
    let archive = home.join("notes.tar");
    let packed = run(&mut files(&["pack", &id, "notes", "-f", archive.to_str().unwrap()]));
    assert!(packed.status.success(), "{packed:?}");
    let members = Command::new("tar").arg("-tf").arg(&archive).output().unwrap();
    let members = String::from_utf8_lossy(&members.stdout).to_string();
    assert!(members.contains("a.txt") && members.contains("b.txt"), "{members}");
    let unpacked = run(&mut files(&["unpack", &id, archive.to_str().unwrap(), "restored"]));
    let said = String::from_utf8_lossy(&unpacked.stdout).to_string();
    assert!(said.starts_with("restored: 2 files,"), "{unpacked:?}");
    assert_eq!(run(&mut files(&["get", &id, "restored/a.txt"])).stdout, b"from the cli\n");
    let mut piped = files(&["unpack", &id, "-", "again"]).stdin(Stdio::piped()).spawn().unwrap();
    piped.stdin.take().unwrap().write_all(&std::fs::read(&archive).unwrap()).unwrap();
    assert!(piped.wait().unwrap().success());
    assert_eq!(run(&mut files(&["get", &id, "again/b.txt"])).stdout, b"piped in");
    let bad = home.join("bad.tar");
    std::fs::write(&bad, b"not a tar archive at all").unwrap();
    let refused = run(&mut files(&["unpack", &id, bad.to_str().unwrap(), "bad"]));
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");

    // Processes: started, listed, fed, followed to their end, signalled.
    let procs = |args: &[&str]| {
        let mut command = sluice(home);
        command.arg("processes").arg(args[0]).args(["--owner", "alice"]).args(&args[1..]);
        command
    };
    let started = run(&mut procs(&[
        "start",
        &id,
        "--name",
        "greeter",
        "--",
        "busybox",
        "sh",
        "-c",
        "echo started; read x; echo \"got $x\"",
    ]));
    let started_line = String::from_utf8_lossy(&started.stdout).to_string();
    assert!(started_line.contains("greeter") && started_line.contains("running"), "{started:?}");
    let greeter = started_line.split_whitespace().next().unwrap().to_owned();
    let mut fed = procs(&["stdin", &id, &greeter, "--eof"]).stdin(Stdio::piped()).spawn().unwrap();
    fed.stdin.take().unwrap().write_all(b"hi\n").unwrap();
    assert!(fed.wait().unwrap().success());
    let logs = run(&mut procs(&["logs", &id, &greeter, "-f"]));
    assert_eq!(
        (logs.status.code(), String::from_utf8_lossy(&logs.stdout).as_ref()),
        (Some(0), "started\ngot hi\n"),
        "{logs:?}"
    );
    let sleeper = run(&mut procs(&["start", &id, "--", "busybox", "sleep", "600"]));
    let sleeper = String::from_utf8_lossy(&sleeper.stdout).split_whitespace().next().unwrap().to_owned();
    let listed = String::from_utf8_lossy(&run(&mut procs(&["list", &id])).stdout).to_string();
    assert!(listed.lines().any(|l| l.starts_with(&sleeper) && l.contains("running")), "{listed}");
    assert!(listed.lines().any(|l| l.starts_with(&greeter) && l.contains("exit 0")), "{listed}");
    assert!(run(&mut procs(&["signal", &id, &sleeper, "TERM"])).status.success());
    let ended = run(&mut procs(&["logs", &id, &sleeper, "-f"]));
    assert!(String::from_utf8_lossy(&ended.stderr).contains("signal TERM"), "{ended:?}");

    // A capture session, its token kept in a file only its owner reads,
    // and a workspace started from it.
    let token_file = home.join("cs.token");
    let made = run(sluice(home)
        .args(["capture", "new-session", "--owner", "alice", "--keep-last", "5", "--token-file"])
        .arg(&token_file));
    assert!(made.status.success(), "{made:?}");
    let session = String::from_utf8_lossy(&made.stdout).trim().to_owned();
    assert!(session.starts_with("cs_"), "{session}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let shown = ok_json(sluice(home).args(["capture", "session", &session, "--owner", "alice"]));
    assert_eq!(shown["sessionId"], session.as_str(), "{shown}");
    assert!(
        !shown.to_string().contains(std::fs::read_to_string(&token_file).unwrap().trim()),
        "the token is not shown again"
    );
    let from_session = run(sluice(home)
        .args([
            "workspaces",
            "create",
            "--owner",
            "alice",
            "--image",
            "sluice-test/busybox:1",
            "--registry",
            "host",
            "--wait",
            "--capture-session",
            &session,
            "--capture-token-file",
        ])
        .arg(&token_file)
        .args(["--", "sleep", "600"]));
    assert!(String::from_utf8_lossy(&from_session.stdout).ends_with(" ready\n"), "{from_session:?}");

    // SSH keys, webhooks and previews.
    let key = home.join("key");
    let keygen = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&key).status().unwrap();
    assert!(keygen.success());
    let added = run(sluice(home)
        .args(["ssh-keys", "add", "--principal", "alice", "--key-file"])
        .arg(key.with_extension("pub")));
    assert!(added.status.success(), "{added:?}");
    let fingerprint = String::from_utf8_lossy(&added.stdout).split_whitespace().next().unwrap().to_owned();
    assert!(fingerprint.starts_with("SHA256:"), "{added:?}");
    let keys = String::from_utf8_lossy(&run(sluice(home).args(["ssh-keys", "list", "--principal", "alice"])).stdout)
        .to_string();
    assert!(keys.contains(&fingerprint), "{keys}");
    assert!(run(sluice(home).args(["ssh-keys", "rm", &fingerprint])).status.success());
    let hook = ok_json(sluice(home).args([
        "webhooks",
        "create",
        "--url",
        "http://127.0.0.1:9/hook",
        "--event",
        "workspace.created",
    ]));
    let hook_id = hook["id"].as_str().expect("a webhook").to_owned();
    let hooks = String::from_utf8_lossy(&run(sluice(home).args(["webhooks", "list"])).stdout).to_string();
    assert!(hooks.contains(&hook_id), "{hooks}");
    assert!(run(sluice(home).args(["webhooks", "deliveries", &hook_id])).status.success());
    assert!(run(sluice(home).args(["webhooks", "rm", &hook_id])).status.success());
    let previews = run(sluice(home).args(["previews", "create", &id, "--port", "8000", "--owner", "alice"]));
    assert!(String::from_utf8_lossy(&previews.stderr).contains("previews-not-configured"), "{previews:?}");

    // Piped into something that stops reading (`| head -1`), it ends
    // quietly: no panic.
    let mut reader = sluice(home).arg("openapi").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(reader.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert_eq!(first.trim(), "{");
    let ended = reader.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&ended.stderr);
    assert!(ended.status.code() != Some(101) && !said.contains("panicked"), "{ended:?}: {said}");

    // Follow the events while the workspace restarts and stops.
    let mut follower = sluice(home)
        .args(["workspaces", "events", &id, "--owner", "alice", "--follow", "--output", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::<Value>::new()));
    let reader = {
        let (stdout, lines) = (follower.stdout.take().unwrap(), lines.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(serde_json::from_str(&line).unwrap_or(Value::Null));
            }
        })
    };
    let restarted = ok_json(sluice(home).args(["workspaces", "restart", &id, "--owner", "alice", "-o", "json"]));
    assert_eq!(restarted["workspaceId"], id.as_str(), "{restarted}");
    // Ready again on the restart's own run (the old run was ready too).
    let new_run = restarted["runId"].as_str().unwrap().to_owned();
    poll_until("the restarted run is ready", WITHIN, || async {
        let answer = client.get_workspace().workspace_id(&id).owner_user_id("alice").send().await.ok()?;
        let on_new_run = answer.runtime.as_ref().and_then(|r| r.run_id.as_deref()) == Some(new_run.as_str());
        (answer.status == WorkspaceStatus::Ready && on_new_run).then_some(())
    })
    .await;
    let stopped = run(sluice(home).args(["workspaces", "stop", &id, "--owner", "alice"]));
    assert!(stopped.status.success(), "{stopped:?}");
    let said = String::from_utf8_lossy(&stopped.stdout);
    assert!(said.starts_with(&format!("{id}: stopping")), "the stop it asked for, not the status before: {said}");
    wait_status(&client, &id, WorkspaceStatus::Stopped).await;
    let stored = client.list_workspace_events().workspace_id(&id).owner_user_id("alice").limit("1000").send().await;
    let stored = serde_json::to_value(stored.unwrap().into_inner()).unwrap()["items"].as_array().unwrap().clone();
    let followed = wait_for(WITHIN, || {
        let all = (lines.lock().unwrap().len() >= stored.len()).then_some(());
        async move { all }
    })
    .await;
    assert!(followed.is_some(), "only {} of {} events followed", lines.lock().unwrap().len(), stored.len());
    follower.kill().unwrap();
    let _ = follower.wait();
    reader.join().unwrap();
    let followed = lines.lock().unwrap().clone();
    assert_eq!(followed, stored, "every event, once, in order, as the API lists it");
    assert!(followed.iter().any(|e| e["type"] == "runtime.stopped"));

    // Deleted once stopped: gone for the CLI too.
    let deleted = run(sluice(home).args(["workspaces", "delete", &id, "--owner", "alice"]));
    assert_eq!(String::from_utf8_lossy(&deleted.stdout), format!("{id}: deleted\n"), "{deleted:?}");
    let gone = run(sluice(home).args(["workspaces", "get", &id, "--owner", "alice"]));
    assert!(!gone.status.success() && String::from_utf8_lossy(&gone.stderr).contains("404"), "{gone:?}");

    // Completions.
    let completions = run(sluice(home).args(["completions", "bash"]));
    let script = String::from_utf8_lossy(&completions.stdout);
    assert!(completions.status.success() && script.contains("complete -F") && script.contains("workspaces"));
    server.stop();
}
