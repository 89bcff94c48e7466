//! The SSH gateway with OpenSSH's own clients (`ssh`, `scp`, `sftp`) and
//! curl, against `sluice gateway` beside the embedded default (`sluice
//! serve` with no flag but the runtime): a terminal shell, commands with their streams
//! and exit codes, files both ways, a forwarded port, the refusals a user
//! reads, and the sessions recorded without anything typed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

const READY_WITHIN: Duration = Duration::from_secs(60);

/// The gateway's sign-in bound here, short so both sides of it are seen.
const SIGN_IN_SECONDS: u64 = 3;

/// Typed into the shell; must never show in what sluice records.
const TYPED: &str = "typed-marker-5521";

/// A gateway process, stopped when dropped.
struct Gateway {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gateway {
    fn start(dir: &DataDir, api: &Server) -> Gateway {
        let port = free_port();
        let log = dir.root().join("gateway.log");
        let child = Command::new(sluice_binary())
            .arg("gateway")
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--api-url", &api.base])
            .arg("--gateway-token-file")
            .arg(dir.path().join("gateway-token"))
            .arg("--data-dir")
            .arg(dir.root().join("gateway"))
            .args(["--sign-in-seconds", &SIGN_IN_SECONDS.to_string()])
            .env("SLUICE_LOG", "info")
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(dir.root().join("gateway.err")).unwrap())
            .spawn()
            .unwrap();
        let gateway = Gateway { child, port, log };
        let listening =
            wait_for_blocking(Duration::from_secs(10), || std::net::TcpStream::connect(("127.0.0.1", port)).ok());
        assert!(
            listening.is_some(),
            "the gateway did not listen: {}",
            std::fs::read_to_string(dir.root().join("gateway.err")).unwrap()
        );
        gateway
    }
}

/// A user's key pair made by ssh-keygen: its private key file and
/// fingerprint.
struct Key {
    path: PathBuf,
    public: String,
    fingerprint: String,
}

fn keygen(dir: &Path, name: &str) -> Key {
    let path = dir.join(name);
    let made = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&path).status().unwrap();
    assert!(made.success());
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap().trim().to_owned();
    let listed = Command::new("ssh-keygen").arg("-lf").arg(path.with_extension("pub")).output().unwrap();
    let fingerprint = String::from_utf8(listed.stdout).unwrap().split_whitespace().nth(1).unwrap().to_owned();
    Key { path, public, fingerprint }
}

/// OpenSSH's options for a throwaway gateway: no known_hosts, this key only.
fn client_options(key: &Key) -> Vec<String> {
    [
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-i",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([key.path.display().to_string()])
    .collect()
}

fn ssh(gateway: &Gateway, key: &Key, workspace: &str, command: &str, stdin: Option<&Path>) -> Output {
    let mut ssh = Command::new("ssh");
    ssh.args(client_options(key)).args(["-p", &gateway.port.to_string()]).arg(format!("{workspace}@127.0.0.1"));
    ssh.arg(command);
    ssh.stdin(match stdin {
        Some(path) => Stdio::from(std::fs::File::open(path).unwrap()),
        None => Stdio::null(),
    });
    ssh.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Drives an interactive `ssh` on a terminal of its own (a pseudo-terminal
/// the test holds, as a user's terminal emulator would): checks the tty,
/// the size and a resize, interrupts a command with Ctrl-C, and exits 7.
const TERMINAL_SCRIPT: &str = r#"
import fcntl, os, re, select, struct, subprocess, sys, termios, time
master, slave = os.openpty()
def size(rows, cols):
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
size(24, 80)
def own_terminal():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
ssh = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=slave, stderr=slave, preexec_fn=own_terminal, close_fds=True)
os.close(slave)
seen = b''
def until(pattern, start=0):
    """Reads the terminal until `pattern` (a regular expression) shows
    after `start`; answers the match."""
    global seen
    end = time.time() + 30
    while True:
        found = re.search(pattern.encode(), seen[start:])
        if found:
            return found
        ready, _, _ = select.select([master], [], [], max(0, end - time.time()))
        if not ready:
            sys.exit('no %r in %r' % (pattern, seen[-800:]))
        try:
            chunk = os.read(master, 65536)
        except OSError:
            chunk = b''
        if not chunk:
            sys.exit('the terminal closed before %r: %r' % (pattern, seen[-800:]))
        seen += chunk
def send(keys):
    os.write(master, keys.encode())
send('busybox tty; busybox stty size\r')
until('/dev/pts/')
until('24 80')
size(40, 100)
# The resize travels to the workspace's terminal: ask until it is there.
for attempt in range(200):
    mark = len(seen)
    send('busybox stty size | busybox sed s/^/SIZE_/\r')
    if until(r'SIZE_(\d+ \d+)\r?\n', mark).group(1) == b'40 100':
        break
else:
    sys.exit('the resize never reached the terminal: %r' % seen[-800:])
# Ctrl-C once the command runs (it says so: the typed line reads SLEEP''ING).
send('busybox sh -c "echo SLEEP\'\'ING; exec sleep 30"\r')
until('SLEEPING')
send('\x03')
send('echo after=$? TYPEDMARK\r')
until('after=130')
send('exit 7\r')
deadline = time.time() + 30
while ssh.poll() is None and time.time() < deadline:
    ready, _, _ = select.select([master], [], [], 0.2)
    if ready:
        try:
            os.read(master, 65536)
        except OSError:
            pass
print('ssh exited', ssh.wait(timeout=5))
sys.exit(ssh.returncode)
"#;

fn terminal_session(gateway: &Gateway, key: &Key, workspace: &str) -> (i32, String) {
    let script = TERMINAL_SCRIPT.replace("TYPEDMARK", TYPED);
    let mut python = Command::new("python3");
    python.arg("-c").arg(script).arg("ssh").args(client_options(key)).arg("-tt");
    python.args(["-p", &gateway.port.to_string()]).arg(format!("{workspace}@127.0.0.1"));
    let out = python.output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", text(&out.stdout), text(&out.stderr)))
}

async fn register(api: &Server, principal: &str, key: &Key) {
    let (status, body) = api.post("/v1/ssh-keys", &json!({"principal": principal, "publicKey": key.public})).await;
    assert_eq!(status, 201, "{body}");
}

fn sha256(path: &Path) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// `sluice serve` as a fresh machine runs it: the gateway reaches its
/// executors through the loopback address it serves them on by itself.
async fn embedded(dir: &DataDir, runtime: &str) -> Server {
    let mut options = Options::serve().env("SLUICE_LOG", "info");
    if runtime != "local" {
        options = options.arg("--runtime").arg(runtime);
    }
    Server::start_with(&dir.path(), options).await
}

async fn create(api: &Server, image: &str) -> String {
    let (repository, tag) = image.split_once(':').unwrap();
    let body = json!({"ownerUserId": "alice", "registryId": "host", "repository": repository, "tag": tag, "spec": {}});
    let (status, made) = api.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{made}");
    let id = made["workspaceId"].as_str().unwrap().to_owned();
    api.wait_for("alice", &id, READY_WITHIN, |w| w["status"] == "ready").await;
    id
}

#[tokio::test]
async fn openssh_reaches_workspaces_through_the_gateway() {
    let mut runtimes = vec![("local", "sluice-test/busybox:1")];
    if let Some(image) = docker_test_image() {
        runtimes.push(("docker", image));
    }
    for (runtime, image) in runtimes {
        let dir = DataDir::new();
        let api = embedded(&dir, runtime).await;
        let gateway = Gateway::start(&dir, &api);
        let keys = dir.root().join("keys");
        std::fs::create_dir_all(&keys).unwrap();
        let (alice, bob, stranger) = (keygen(&keys, "alice"), keygen(&keys, "bob"), keygen(&keys, "stranger"));
        register(&api, "alice", &alice).await;
        register(&api, "bob", &bob).await;
        let id = create(&api, image).await;

        // A command: its streams and its exit code.
        let out = ssh(&gateway, &alice, &id, "echo out; echo err >&2; exit 3", None);
        assert_eq!(
            (out.status.code(), text(&out.stdout).as_str(), text(&out.stderr).as_str()),
            (Some(3), "out\n", "err\n"),
            "{runtime}"
        );

        // A connection that never signs in is ended at the bound; a signed-in
        // session goes on past it.
        let mut silent = std::net::TcpStream::connect(("127.0.0.1", gateway.port)).unwrap();
        silent.set_read_timeout(Some(Duration::from_secs(SIGN_IN_SECONDS + 10))).unwrap();
        let started = std::time::Instant::now();
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut silent, &mut sink);
        assert!(
            started.elapsed() < Duration::from_secs(SIGN_IN_SECONDS + 5),
            "{runtime}: the silent connection was ended"
        );
        let wait = SIGN_IN_SECONDS + 2;
        let out = ssh(&gateway, &alice, &id, &format!("sleep {wait}; echo still-here"), None);
        assert_eq!(
            (out.status.code(), text(&out.stdout).trim()),
            (Some(0), "still-here"),
            "{runtime}: {}",
            text(&out.stderr)
        );

        // A terminal: tty, size and resize, Ctrl-C, exit 7.
        let (code, shown) = terminal_session(&gateway, &alice, &id);
        assert_eq!(code, 7, "{runtime}: {shown}\n{}", api.output());

        // 10 MB through stdin, byte for byte; and scp both ways.
        let payload = dir.root().join("payload");
        let bytes: Vec<u8> = (0..10_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        std::fs::write(&payload, &bytes).unwrap();
        let out = ssh(&gateway, &alice, &id, "cat > via-stdin && busybox sha256sum via-stdin", Some(&payload));
        assert!(out.status.success(), "{runtime}: {}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with(&sha256(&payload)), "{runtime}: {}", text(&out.stdout));
        let scp = |from: String, to: String| {
            Command::new("scp")
                .args(client_options(&alice))
                .args(["-P", &gateway.port.to_string()])
                .arg(from)
                .arg(to)
                .output()
                .unwrap()
        };
        let up = scp(payload.display().to_string(), format!("{id}@127.0.0.1:via-scp"));
        assert!(up.status.success(), "{runtime}: {}", text(&up.stderr));
        let back = dir.root().join("back");
        let down = scp(format!("{id}@127.0.0.1:via-scp"), back.display().to_string());
        assert!(down.status.success(), "{runtime}: {}", text(&down.stderr));
        assert!(std::fs::read(&back).unwrap() == bytes, "{runtime}: scp round-tripped every byte");

        // sftp, as a batch.
        let batch = dir.root().join("batch");
        std::fs::write(&batch, "mkdir made-by-sftp\nls -1\n").unwrap();
        let sftp = Command::new("sftp")
            .args(client_options(&alice))
            .args(["-P", &gateway.port.to_string(), "-b"])
            .arg(&batch)
            .arg(format!("{id}@127.0.0.1"))
            .output()
            .unwrap();
        assert!(sftp.status.success(), "{runtime}: {}", text(&sftp.stderr));
        assert!(text(&sftp.stdout).contains("made-by-sftp") && text(&sftp.stdout).contains("via-scp"));

        // `ssh -L` to an HTTP server listening inside the workspace.
        let mut server = Command::new("ssh")
            .args(client_options(&alice))
            .args(["-p", &gateway.port.to_string()])
            .arg(format!("{id}@127.0.0.1"))
            .arg("busybox mkdir -p www && echo served-inside > www/index.html && busybox httpd -f -p 127.0.0.1:8000 -h www")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let local = free_port();
        let mut forward = Command::new("ssh")
            .args(client_options(&alice))
            .args(["-p", &gateway.port.to_string(), "-N", "-L", &format!("{local}:localhost:8000")])
            .arg(format!("{id}@127.0.0.1"))
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let read = || {
            let curl = Command::new("curl")
                .args(["-s", "--max-time", "5", &format!("http://127.0.0.1:{local}/index.html")])
                .output()
                .unwrap();
            std::future::ready(text(&curl.stdout))
        };
        let served = read_until(Duration::from_secs(20), read, |s| s.contains("served-inside"))
            .await
            .unwrap_or_else(|last| last);
        let _ = (forward.kill(), server.kill());
        let _ = (forward.wait(), server.wait());
        assert_eq!(served.trim(), "served-inside", "{runtime}: {}", std::fs::read_to_string(&gateway.log).unwrap());

        // Refusals a user can read.
        let started = std::time::Instant::now();
        let out = ssh(&gateway, &stranger, &id, "true", None);
        let first = started.elapsed();
        assert_eq!(out.status.code(), Some(255), "{runtime}: an unregistered key");
        assert!(text(&out.stderr).contains("Permission denied"), "{}", text(&out.stderr));
        // A source that keeps failing is answered later each time, and
        // every refusal is logged with its source and key fingerprint.
        let mut last = first;
        for _ in 0..4 {
            let started = std::time::Instant::now();
            assert_eq!(ssh(&gateway, &stranger, &id, "true", None).status.code(), Some(255));
            last = started.elapsed();
        }
        assert!(
            last >= first + Duration::from_millis(500),
            "{runtime}: the fifth refusal took {last:?}, the first {first:?}"
        );
        let log = std::fs::read_to_string(dir.root().join("gateway.err")).unwrap();
        let refusals: Vec<&str> = log.lines().filter(|l| l.contains("a sign-in was refused")).collect();
        assert!(refusals.len() >= 5, "{runtime}: {log}");
        assert!(
            refusals.iter().all(|l| l.contains(&stranger.fingerprint) && l.contains("127.0.0.1")),
            "{runtime}: {refusals:?}"
        );
        let key_body = stranger.public.split_whitespace().nth(1).unwrap();
        assert!(!log.contains(key_body), "{runtime}: a refused key is never logged");
        let out = ssh(&gateway, &bob, &id, "true", None);
        assert_eq!(out.status.code(), Some(1), "{runtime}: another principal's key");
        assert!(text(&out.stderr).contains("no workspace"), "{}", text(&out.stderr));
        let out = ssh(&gateway, &alice, "ws_00000000000000000000000000000000", "true", None);
        assert!(text(&out.stderr).contains("no workspace"), "{}", text(&out.stderr));

        // What was recorded: every kind, with its principal, key and exit
        // status, and nothing typed or shown.
        let (_, sessions) = api.get(&format!("/v1/workspaces/{id}/sessions?ownerUserId=alice")).await;
        let items = sessions["items"].as_array().unwrap();
        let kinds: std::collections::BTreeSet<&str> = items.iter().map(|s| s["kind"].as_str().unwrap()).collect();
        for kind in ["exec", "shell", "sftp", "port-forward"] {
            assert!(kinds.contains(kind), "{runtime}: a {kind} session is recorded: {sessions}");
        }
        let shell = items.iter().find(|s| s["kind"] == "shell").unwrap();
        assert_eq!(shell["exitStatus"], 7, "{shell}");
        assert_eq!(shell["principal"], "alice");
        assert_eq!(shell["keyFingerprint"], alice.fingerprint.as_str());
        assert!(shell["endedAt"].is_string(), "{shell}");
        assert!(items.iter().any(|s| s["kind"] == "exec" && s["exitStatus"] == 3), "{sessions}");
        assert!(items.iter().all(|s| s["principal"] == "alice"), "bob's refused key opened nothing: {sessions}");
        assert!(!sessions.to_string().contains(TYPED), "{sessions}");
        for log in [api.output(), std::fs::read_to_string(&gateway.log).unwrap()] {
            assert!(!log.contains(TYPED) && !log.contains("served-inside"), "nothing typed or shown is logged");
        }

        // A stopped workspace is refused in words.
        let (status, _) = api.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
        assert_eq!(status, 202);
        api.wait_for("alice", &id, READY_WITHIN, |w: &Value| w["status"] == "stopped").await;
        let out = ssh(&gateway, &alice, &id, "true", None);
        assert_eq!(out.status.code(), Some(1), "{runtime}");
        assert!(text(&out.stderr).contains("stopped"), "{runtime}: {}", text(&out.stderr));
        drop(gateway);
        api.stop();
    }
}

/// An SSH session is a request that needs the runtime: `ssh` to a sleeping
/// workspace wakes it (the gateway's ssh-target waits for it) and the
/// command sees the files written before it slept.
#[tokio::test]
async fn ssh_to_a_sleeping_workspace_wakes_it() {
    let dir = DataDir::new();
    let api = embedded(&dir, "local").await;
    let gateway = Gateway::start(&dir, &api);
    let keys = dir.root().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let alice = keygen(&keys, "alice");
    register(&api, "alice", &alice).await;
    let session = capture::session(&api, None).await;
    let (id, first_run) = capture::launch(&api, &session, "ssh-sleepy").await;
    capture::sh_ok(&api, &id, "cd /workspace 2>/dev/null || cd ~; echo before-sleep > kept.txt").await;
    let (status, _) = api.post(&format!("/v1/workspaces/{id}/sleep"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    api.wait_for("alice", &id, READY_WITHIN, |w| w["sleeping"].is_object()).await;

    let out = ssh(&gateway, &alice, &id, "cd /workspace 2>/dev/null || cd ~; cat kept.txt", None);
    assert_eq!((out.status.code(), text(&out.stdout).as_str()), (Some(0), "before-sleep\n"), "{}", text(&out.stderr));
    let (_, woken) = api.get(&format!("/v1/workspaces/{id}?ownerUserId=alice")).await;
    assert_eq!(woken["status"], "ready", "{woken}");
    assert_ne!(woken["runtime"]["runId"], first_run.as_str(), "a new run: {woken}");
    drop(gateway);
    api.stop();
}
