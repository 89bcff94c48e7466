//! A real S3-compatible server for the capture tests: `s3s-fs`, which
//! checks request signatures, serving a temporary directory on loopback.
//! Found as `SLUICE_TEST_S3S_FS`, on the PATH, or where `.ci/run` installs
//! it; `None` when absent (under CI that is a failure, not a skip).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const ACCESS_KEY: &str = "sluice-test-access";
pub const SECRET_KEY: &str = "sluice-test-secret-key-0123456789";
pub const BUCKET: &str = "sluice-captures";

pub fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SLUICE_TEST_S3S_FS") {
        return Some(path.into());
    }
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>());
    on_path
        .map(|dir| dir.join("s3s-fs"))
        .chain([PathBuf::from("/var/tmp/sluice-tools/bin/s3s-fs")])
        .find(|p| p.is_file())
}

/// The environment a sluice process needs to use the bucket at `endpoint`.
pub fn env_for(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT", endpoint.to_owned()),
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "false".into()),
    ]
}

pub struct S3Server {
    child: Option<Child>,
    binary: PathBuf,
    port: u16,
    root: tempfile::TempDir,
}

impl S3Server {
    /// Starts the server with an empty bucket.
    pub fn start() -> Option<S3Server> {
        let binary = binary();
        if !crate::present("s3s-fs (the S3 capture tests; see .ci/run)", binary.is_some()) {
            return None;
        }
        let binary = binary?;
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(BUCKET)).unwrap();
        let mut server = S3Server { child: None, binary, port: crate::free_port(), root };
        server.resume();
        Some(server)
    }

    /// Stops the server (the bucket's files stay).
    pub fn pause(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and files, and waits until it listens.
    pub fn resume(&mut self) {
        let child = Command::new(&self.binary)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .arg(self.root.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("s3s-fs starts");
        self.child = Some(child);
        let listening = crate::wait_for_blocking(Duration::from_secs(5), || {
            std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()
        });
        assert!(listening.is_some(), "s3s-fs did not listen on {}", self.port);
    }

    /// The environment a sluice process needs to use the bucket.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        env_for(&format!("http://127.0.0.1:{}", self.port))
    }

    /// The secret key, which must never reach an executor.
    pub fn secret_key(&self) -> &'static str {
        SECRET_KEY
    }

    /// Files the server holds under the bucket.
    pub fn object_count(&self) -> usize {
        fn count(dir: &std::path::Path) -> usize {
            std::fs::read_dir(dir)
                .map(|entries| entries.flatten().map(|e| if e.path().is_dir() { count(&e.path()) } else { 1 }).sum())
                .unwrap_or(0)
        }
        count(&self.root.path().join(BUCKET))
    }

    /// The bytes of every file the server keeps for the bucket.
    pub fn stored_bytes(&self) -> u64 {
        crate::bytes_under(&self.root.path().join(BUCKET))
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.pause();
    }
}
