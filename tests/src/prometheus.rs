//! A real Prometheus server (Debian's `prometheus`) for the metrics tests:
//! started on a loopback port with the test's scrape configuration and a
//! storage directory of its own, queried through its HTTP API.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

pub struct Prometheus {
    child: Child,
    pub base: String,
    client: reqwest::Client,
    dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A program on the PATH (or in /usr/bin, where Debian puts it).
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain([PathBuf::from("/usr/bin")]).map(|d| d.join(name)).find(|p| p.is_file())
}

/// `promtool` with `args`: whether it passed, and what it printed.
pub fn promtool(args: &[&str], stdin: Option<&[u8]>, cwd: &Path) -> (bool, String) {
    let binary = tool("promtool").expect("promtool is installed with prometheus");
    let mut child = Command::new(binary)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        std::io::Write::write_all(&mut input, bytes).unwrap();
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

impl Prometheus {
    /// Starts Prometheus with `config` (YAML); `None` where it is not
    /// installed (under CI that is a failure, not a skip).
    pub async fn start(config: &str) -> Option<Prometheus> {
        let binary = tool("prometheus");
        if !crate::present("Debian's prometheus (the scrape tests; see .ci/run)", binary.is_some()) {
            return None;
        }
        let binary = binary?;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let port = crate::free_port();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", file.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
            .spawn()
            .expect("prometheus starts");
        let prometheus =
            Prometheus { child, base: format!("http://127.0.0.1:{port}"), client: crate::http_client(), dir };
        let ready = crate::wait_for(Duration::from_secs(20), || {
            let ready = prometheus.client.get(format!("{}/-/ready", prometheus.base)).send();
            async move { ready.await.is_ok_and(|r| r.status() == 200).then_some(()) }
        })
        .await;
        assert!(ready.is_some(), "prometheus did not become ready:\n{}", prometheus.log());
        Some(prometheus)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// An instant query: the result's samples, as the API answers them.
    pub async fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let answer = self
            .client
            .get(format!("{}/api/v1/query", self.base))
            .query(&[("query", expr)])
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let body: Value = answer.json().await.map_err(|e| e.to_string())?;
        if body["status"] != "success" {
            return Err(body.to_string());
        }
        Ok(body["data"]["result"].as_array().cloned().unwrap_or_default())
    }

    /// The value of a query whose result is one sample (`None`: no sample).
    pub async fn value(&self, expr: &str) -> Option<f64> {
        let samples = self.query(expr).await.unwrap_or_else(|e| panic!("{expr}: {e}"));
        let sample = samples.first()?;
        sample["value"][1].as_str()?.parse().ok()
    }

    /// Waits until `expr`'s value satisfies `done`; answers it.
    pub async fn wait_for(&self, expr: &str, within: Duration, done: impl Fn(Option<f64>) -> bool) -> Option<f64> {
        let done = |value: &Option<f64>| done(*value);
        crate::read_until(within, || self.value(expr), done)
            .await
            .unwrap_or_else(|last| panic!("{expr} read {last:?} for {within:?}:\n{}", self.log()))
    }

    /// `GET /api/v1/targets`' active targets.
    pub async fn targets(&self) -> Vec<Value> {
        let body: Value =
            self.client.get(format!("{}/api/v1/targets", self.base)).send().await.unwrap().json().await.unwrap();
        body["data"]["activeTargets"].as_array().cloned().unwrap_or_default()
    }

    /// `GET /api/v1/rules`' groups.
    pub async fn rule_groups(&self) -> Vec<Value> {
        let body: Value =
            self.client.get(format!("{}/api/v1/rules", self.base)).send().await.unwrap().json().await.unwrap();
        body["data"]["groups"].as_array().cloned().unwrap_or_default()
    }
}
