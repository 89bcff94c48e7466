//! The execution broker over HTTPS: a server with `--broker-listen`, its
//! operator commands, and a client that trusts only the server's own
//! certificate and follows no redirect.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::server::{Options, Server};

/// `sluice serve` with the broker listener on a free port.
pub struct Broker {
    pub server: Server,
    pub base: String,
    pub client: reqwest::Client,
}

pub fn options(port: u16) -> Options {
    Options::serve().arg("--broker-listen").arg(format!("127.0.0.1:{port}"))
}

impl Broker {
    pub async fn start(data_dir: &Path, options: Options, port: u16) -> Broker {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = Server::start_with(data_dir, options).await;
        let cert = std::fs::read(data_dir.join("broker-tls/cert.pem")).expect("the broker wrote its certificate");
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&cert).unwrap())
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(crate::CLIENT_IDLE)
            .build()
            .unwrap();
        Broker { server, base: format!("https://127.0.0.1:{port}/broker"), client }
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, token: Option<&str>, body: Option<&Value>) -> Answer {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        Answer::of(request.send().await.expect("the broker answers over TLS")).await
    }

    pub async fn get(&self, path: &str, token: &str) -> Answer {
        self.call(reqwest::Method::GET, path, Some(token), None).await
    }

    /// Polls `GET path` until `done` holds of its body; answers that body,
    /// or panics with the last one after `within`.
    pub async fn get_until(&self, path: &str, token: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let read = || async move { self.get(path, token).await.body };
        crate::read_until(within, read, done)
            .await
            .unwrap_or_else(|last| panic!("GET {path} never got there in {within:?}: {last}"))
    }
}

/// A broker answer: status, the headers every answer carries, and the body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub request_id: Option<String>,
    pub cache_control: Option<String>,
    pub retry_after: Option<String>,
    pub body: Value,
}

impl Answer {
    pub async fn of(response: reqwest::Response) -> Answer {
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let (request_id, cache_control, retry_after) =
            (header("x-request-id"), header("cache-control"), header("retry-after"));
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        Answer { status, request_id, cache_control, retry_after, body }
    }

    /// The error envelope's code, checking the envelope's shape.
    pub fn code(&self) -> &str {
        let error = &self.body["error"];
        assert!(
            error["message"].is_string() && error["retryable"].is_boolean() && error["details"].is_object(),
            "not the envelope: {self:?}"
        );
        error["code"].as_str().unwrap()
    }
}

/// Runs `sluice broker …` against the data directory; answers stdout.
pub fn operate(data_dir: &Path, args: &[&str]) -> String {
    operate_with(args, &["--data-dir", &data_dir.display().to_string()])
}

/// Runs `sluice broker …` with `store` naming the database (and key).
pub fn operate_with(args: &[&str], store: &[&str]) -> String {
    let out = Command::new(crate::sluice_binary())
        .arg("broker")
        .args(args)
        .args(store)
        .env("SLUICE_LOG", "warn")
        .env_remove("SLUICE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(out.status.success(), "sluice broker {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Issues a token for `instance`, with extra `issue` flags.
pub fn issue(data_dir: &Path, instance: &str, extra: &[&str]) -> String {
    let mut args = vec!["token", "issue", "--instance", instance];
    args.extend_from_slice(extra);
    operate(data_dir, &args).trim().to_owned()
}
