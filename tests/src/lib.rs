//! Helpers for the end-to-end tests: a real API server on port 0 over a
//! fresh database, and the real `sluice` binary.

pub mod broker;
pub mod capture;
pub mod hosts;
pub mod origin;
pub mod prometheus;
pub mod registry;
pub mod s3;
pub mod server;

use std::path::PathBuf;

use serde_json::{Value, json};
use sluice_api::{ApiConfig, AppState, TokenSet};
use sluice_store::Store;
use sluice_store::testing::{self, TestDatabase};

pub const TOKEN: &str = "test-api-token-0123456789";
pub const GATEWAY_TOKEN: &str = "test-gateway-token-0123456789";

/// A running API server with its own database.
pub struct App {
    pub base: String,
    pub store: Store,
    pub client: reqwest::Client,
    pub label: &'static str,
    _db: TestDatabase,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl App {
    pub async fn start(db: TestDatabase) -> App {
        Self::start_with(db, |_| {}).await
    }

    /// Starts a server whose configuration `adjust` changed first.
    pub async fn start_with(db: TestDatabase, adjust: impl FnOnce(&mut ApiConfig)) -> App {
        let store = testing::open(&db).await;
        let mut config = ApiConfig {
            api_tokens: TokenSet::new([TOKEN]),
            gateway_tokens: TokenSet::new([GATEWAY_TOKEN]),
            default_ttl_seconds: None,
            http: Default::default(),
            unenforceable: None,
            control: None,
            // As an install's defaults are.
            capture_defaults: sluice_api::CaptureDefaults {
                retention: sluice_store::capture::Retention { keep_last: Some(20), keep_within_ms: Some(604_800_000) },
                quota_bytes: None,
            },
            captures: None,
            cluster_authority: None,
            previews: None,
            metrics: Default::default(),
            webhook_allow_private: true,
        };
        adjust(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = AppState::new(store.clone(), config);
        tokio::spawn(sluice_api::serve(state, listener, async {
            let _ = stopped.await;
        }));
        App { base, store, client: http_client(), label: db.label, _db: db, _stop: stop }
    }

    /// One server per available backend.
    pub async fn each() -> Vec<App> {
        let mut apps = Vec::new();
        for db in testing::databases().await {
            apps.push(App::start(db).await);
        }
        apps
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.post(self.url(path)).bearer_auth(TOKEN).json(body).send().await.unwrap();
        read(r).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self.client.patch(self.url(path)).bearer_auth(TOKEN).json(body).send().await.unwrap();
        read(r).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.client.get(self.url(path)).bearer_auth(TOKEN).send().await.unwrap();
        read(r).await
    }

    /// Creates a workspace for `owner` and returns its id.
    pub async fn create(&self, owner: &str) -> String {
        let (status, body) = self.post("/v1/workspaces", &create_body(owner)).await;
        assert_eq!(status, 202, "{}: {body}", self.label);
        body["workspaceId"].as_str().unwrap().to_owned()
    }
}

pub async fn read(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let body = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
    (status, body)
}

/// A valid create request.
pub fn create_body(owner: &str) -> Value {
    json!({
        "ownerUserId": owner,
        "registryId": "host",
        "repository": "sluice-test/busybox",
        "tag": "1",
        "spec": {"resources": {"cpus": 1}},
    })
}

/// The `sluice` binary built alongside these tests.
pub fn sluice_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target directory");
    let bin = dir.join("sluice");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace --bins` first (scripts/test does)",
        bin.display()
    );
    bin
}

/// How long a test client keeps an idle connection: well within the
/// server's header read timeout (10 s), which also ends a keep-alive
/// connection waiting for its next request. A test that blocks its runtime
/// (a child process run to completion) would otherwise send its next
/// request on a connection the server closed meanwhile, its client not
/// having run to notice.
pub const CLIENT_IDLE: std::time::Duration = std::time::Duration::from_secs(4);

/// reqwest is built with rustls for the broker's HTTPS and no provider of
/// its own: every client of the tests uses ring.
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().pool_idle_timeout(CLIENT_IDLE).build().unwrap()
}

/// The pause between two looks at a condition: short at first, so a quick
/// answer is seen at once, then longer, so a slow one costs little.
fn next_pause(pause: std::time::Duration) -> std::time::Duration {
    (pause * 2).min(std::time::Duration::from_millis(100))
}

const FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// Reads `read` again and again until `done` holds of what it answers:
/// `Ok` with that answer, or `Err` with the last one once `within` has
/// passed (for a failure that shows what was seen). The one way a test
/// waits for a condition: never a fixed sleep.
pub async fn read_until<V, F: std::future::Future<Output = V>>(
    within: std::time::Duration,
    mut read: impl FnMut() -> F,
    done: impl Fn(&V) -> bool,
) -> Result<V, V> {
    let deadline = tokio::time::Instant::now() + within;
    let mut pause = FIRST_PAUSE;
    loop {
        let answer = read().await;
        if done(&answer) {
            return Ok(answer);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(answer);
        }
        tokio::time::sleep(pause).await;
        pause = next_pause(pause);
    }
}

/// Polls `check` until it answers `Some`, and returns that; `None` once
/// `within` has passed, for a caller that says more than [`poll_until`]
/// when it gives up.
pub async fn wait_for<T, F: std::future::Future<Output = Option<T>>>(
    within: std::time::Duration,
    check: impl FnMut() -> F,
) -> Option<T> {
    read_until(within, check, Option::is_some).await.ok().flatten()
}

/// [`wait_for`], panicking with `what` once `within` has passed.
pub async fn poll_until<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    within: std::time::Duration,
    check: impl FnMut() -> F,
) -> T {
    wait_for(within, check).await.unwrap_or_else(|| panic!("{what}: not within {within:?}"))
}

/// [`wait_for`] for a caller outside a runtime (a helper's `Drop`, a
/// blocking start).
pub fn wait_for_blocking<T>(within: std::time::Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + within;
    let mut pause = FIRST_PAUSE;
    loop {
        if let Some(done) = check() {
            return Some(done);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(pause);
        pause = next_pause(pause);
    }
}

/// Asserts that `holds` stays true, looking again and again for all of
/// `window`: how a test says that something does not happen (a kept
/// executor stays, a parked job is not retried). It fails at the first
/// look that breaks, naming `what`.
pub async fn holds_for<F: std::future::Future<Output = bool>>(
    what: &str,
    window: std::time::Duration,
    holds: impl FnMut() -> F,
) {
    let broken = read_until(window, holds, |held| !held).await;
    assert!(broken.is_err(), "{what}: broken within {window:?}");
}

/// Lets `pause` pass for a timer of the server's that no answer shows
/// (`timer`, such as how long an idle connection is kept). Named so that it
/// is never mistaken for a wait on a condition, which [`wait_for`] is.
pub async fn outwait(timer: &str, pause: std::time::Duration) {
    eprintln!("letting {pause:?} pass: {timer}");
    tokio::time::sleep(pause).await;
}

/// A pause that is part of the scenario under test (a header trickled byte
/// by byte, a kill at a random point, a second request a moment after the
/// first, an outage of a chosen length): never a wait for a condition.
pub async fn pace(pause: std::time::Duration) {
    tokio::time::sleep(pause).await;
}

/// Whether what a test needs is here. Where it is not, the test says so on
/// stderr and passes; under `CI`, which installs everything, it fails.
pub fn present(what: &str, here: bool) -> bool {
    if !here {
        assert!(std::env::var_os("CI").is_none(), "CI must provide {what}");
        eprintln!("{what} is not here: this test is skipped");
    }
    here
}

/// Whether this process is root, which `why` needs (see [`present`]).
pub fn root_for(why: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    present(&format!("root ({why})"), unsafe { libc::geteuid() } == 0)
}

/// The bytes of every file under `dir`, recursively.
pub fn bytes_under(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let meta = e.metadata().ok();
                    match meta {
                        Some(m) if m.is_dir() => bytes_under(&e.path()),
                        Some(m) => m.len(),
                        None => 0,
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The image the docker tests run: busybox in an otherwise empty root,
/// imported locally (nothing can be pulled). `None` when this machine has
/// no Docker Engine; under CI that is a failure, not a skip.
pub fn docker_test_image() -> Option<&'static str> {
    const IMAGE: &str = "sluice-test/busybox:1";
    const APPLETS: [&str; 16] = [
        "sh", "ls", "echo", "cat", "sleep", "true", "false", "id", "env", "pwd", "touch", "printf", "kill", "head",
        "nc", "httpd",
    ];
    static READY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ready = *READY.get_or_init(|| {
        let engine = std::process::Command::new("docker").args(["info", "--format", "{{.ServerVersion}}"]).output();
        if !present("a Docker Engine (the docker runtime tests)", engine.is_ok_and(|o| o.status.success())) {
            return false;
        }
        // The image names its applets in a label: one imported with another
        // set (by an older test suite) is imported again.
        let applets = APPLETS.join(",");
        let present = std::process::Command::new("docker")
            .args(["image", "inspect", "--format", "{{index .Config.Labels \"sluice.test.applets\"}}", IMAGE])
            .output();
        if present.is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == applets) {
            return true;
        }
        let busybox = std::path::Path::new("/bin/busybox");
        assert!(busybox.exists(), "the docker tests need busybox-static (apt-get install busybox-static)");
        let root = tempfile::tempdir().unwrap();
        for dir in ["bin", "tmp", "proc", "sys", "dev", "etc", "workspace", "var/lib"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        std::fs::copy(busybox, root.path().join("bin/busybox")).unwrap();
        for applet in APPLETS {
            std::os::unix::fs::symlink("busybox", root.path().join("bin").join(applet)).unwrap();
        }
        let tar =
            std::process::Command::new("tar").arg("-C").arg(root.path()).args(["-cf", "-", "."]).output().unwrap();
        assert!(tar.status.success());
        let mut import = std::process::Command::new("docker")
            .args(["import", "--change", &format!("LABEL sluice.test.applets={applets}"), "-", IMAGE])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        import.stdin.take().unwrap().write_all(&tar.stdout).unwrap();
        assert!(import.wait().unwrap().success(), "docker import of the test image failed");
        true
    });
    ready.then_some(IMAGE)
}
