//! Egress by name. The proxy alone, with curl as its client: an allowed
//! name is reached over HTTPS (CONNECT) and plain HTTP; another name, a raw
//! IP address and a TLS hello asking for another name than the CONNECT's
//! are refused and counted. Then `sluice serve` with an executor whose
//! spec lists names: from inside it, only those are reached, through the
//! proxy; no other name, raw address or DNS query leaves it.

use std::process::Command;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};
use sluice_domain::egress::Allowlist;
use sluice_runtime::egress::{EgressProxy, Resolver, serve};
use sluice_tests::origin::{http_server, https_server};
use sluice_tests::server::{DataDir, Options, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// curl through the proxy: (exit code, HTTP status, body).
async fn curl(proxy: u16, ca: &std::path::Path, extra: &[&str], url: &str) -> (i32, String, String) {
    let mut command = Command::new("curl");
    command
        .args(["-s", "--max-time", "10", "-w", "\n%{http_code}", "--proxy", &format!("http://127.0.0.1:{proxy}")])
        .arg("--cacert")
        .arg(ca)
        .args(extra)
        .arg(url);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or((&text, ""));
    (out.status.code().unwrap_or(-1), status.to_owned(), body.to_owned())
}

#[tokio::test]
async fn only_named_destinations_are_reached_and_every_refusal_is_counted() {
    let (tls_port, pem) = https_server().await;
    let plain_port = http_server().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pem).unwrap();
    let allowlist =
        Allowlist::parse([format!("allowed.test:{tls_port}").as_str(), format!("allowed.test:{plain_port}").as_str()])
            .unwrap();
    let resolver = Resolver::from_hosts("127.0.0.1 allowed.test denied.test\n").unwrap();
    let proxy = Arc::new(EgressProxy::new("ws_test".into(), allowlist, resolver));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    tokio::spawn(serve(listener, proxy.clone(), std::future::pending()));

    let (code, status, body) = curl(proxy_port, &ca, &[], &format!("https://allowed.test:{tls_port}/")).await;
    assert_eq!((code, status.as_str(), body.as_str()), (0, "200", "hello over tls"));
    let (_, status, body) = curl(proxy_port, &ca, &[], &format!("http://allowed.test:{plain_port}/p?q=1")).await;
    assert_eq!((status.as_str(), body.as_str()), ("200", "plain saw GET /p?q=1 HTTP/1.1"), "origin form upstream");
    assert_eq!(proxy.refused(), 0);

    // Another name, over TLS and plain HTTP.
    let (code, _, _) = curl(proxy_port, &ca, &[], &format!("https://denied.test:{tls_port}/")).await;
    assert_ne!(code, 0, "a name not on the list");
    let (_, status, _) = curl(proxy_port, &ca, &[], &format!("http://denied.test:{plain_port}/")).await;
    assert_eq!(status, "403");
    // A raw address, whatever it is.
    let (code, _, _) = curl(proxy_port, &ca, &["-k"], &format!("https://127.0.0.1:{tls_port}/")).await;
    assert_ne!(code, 0, "a raw IP address");
    // An allowed port of an allowed name, but another port than listed.
    let (code, _, _) = curl(proxy_port, &ca, &[], "https://allowed.test/").await;
    assert_ne!(code, 0, "port 443 is not listed for allowed.test here");
    // The CONNECT names allowed.test (and is let through), then the TLS
    // hello asks for denied.test: the tunnel is closed.
    let mut tunnel = tokio::net::TcpStream::connect(("127.0.0.1", proxy_port)).await.unwrap();
    let connect = format!("CONNECT allowed.test:{tls_port} HTTP/1.1\r\nHost: allowed.test:{tls_port}\r\n\r\n");
    tunnel.write_all(connect.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 39];
    tunnel.read_exact(&mut answer).await.unwrap();
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from_pem_file(&ca).unwrap()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("denied.test").unwrap();
    let handshake = tokio_rustls::TlsConnector::from(Arc::new(client)).connect(name, tunnel).await;
    assert!(handshake.is_err(), "a hello for another name than the CONNECT's");
    assert_eq!(proxy.refused(), 5, "every refusal counted");
}

/// Runs one command in the workspace and waits for it: (exit code, stdout, stderr).
async fn run_in(server: &Server, id: &str, argv: &[&str], stdin: Option<&str>) -> (i64, String, String) {
    let mut command = json!({"argv": argv});
    if let Some(stdin) = stdin {
        command["stdin"] = json!(stdin);
    }
    let (status, run) = server
        .post(&format!("/v1/workspaces/{id}/exec"), &json!({"ownerUserId": "alice", "commands": [command]}))
        .await;
    assert_eq!(status, 202, "{run}");
    let run = server.run_ended("alice", run["runId"].as_str().unwrap(), std::time::Duration::from_secs(60)).await;
    let command = &run["commands"][0];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (command["exitCode"].as_i64().unwrap_or(-1), text(&command["stdout"]), text(&command["stderr"]))
}

/// A local executor allowed `allowed.test` (named in `--egress-hosts`)
/// fetches from it over HTTPS and plain HTTP through its proxy; a name off
/// the list, a raw IP address through the proxy or around it, and a DNS
/// query all fail from inside; each refusal is logged without its path.
/// In bubblewrap, and (as root) without it, where sluice makes the
/// network namespace itself.
#[tokio::test]
async fn an_executor_reaches_only_the_names_its_spec_lists() {
    let root = unsafe { libc::geteuid() } == 0;
    let bubblewrap = std::process::Command::new("bwrap").arg("--version").output().is_ok_and(|o| o.status.success());
    if bubblewrap {
        reaches_only_listed_names(Options::serve()).await;
    }
    if root {
        // The sandbox probe is the only thing of the server's that needs the PATH.
        reaches_only_listed_names(Options::serve().env("PATH", "/nonexistent")).await;
    }
    if !bubblewrap && !root {
        // No network namespace: the create is refused (unit-tested where
        // the API and the runtime judge it); nothing here can run.
        eprintln!("neither bubblewrap nor root: egress cannot be enforced here");
    }
}

async fn reaches_only_listed_names(options: Options) {
    let (tls_port, pem) = https_server().await;
    let plain_port = http_server().await;
    let dir = DataDir::new();
    let hosts = dir.root().join("egress-hosts");
    std::fs::write(&hosts, "127.0.0.1 allowed.test denied.test\n").unwrap();
    let options = options.arg("--runtime").arg("local").arg("--egress-hosts").arg(hosts.display().to_string());
    let server = Server::start_with(&dir.path(), options).await;
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "r", "tag": "1", "launchId": "egress-1",
        "spec": {"network": {"egress": [format!("allowed.test:{tls_port}"), format!("allowed.test:{plain_port}")]}},
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    let ready = server.wait_for("alice", &id, std::time::Duration::from_secs(60), |w| w["status"] == "ready").await;
    assert_eq!(ready["status"], "ready", "{ready}");

    let (code, _, stderr) = run_in(&server, &id, &["sh", "-c", "cat > ca.pem"], Some(&pem)).await;
    assert_eq!(code, 0, "{stderr}");
    let curl = |url: String| {
        let server = &server;
        let id = &id;
        async move {
            let script = format!("curl -sS --max-time 10 --cacert ca.pem -w '\\n%{{http_code}}' '{url}'");
            run_in(server, id, &["sh", "-c", &script], None).await
        }
    };
    let (code, out, err) = curl(format!("https://allowed.test:{tls_port}/")).await;
    assert_eq!((code, out.as_str()), (0, "hello over tls\n200"), "{err}");
    let (code, out, err) = curl(format!("http://allowed.test:{plain_port}/secret-path")).await;
    assert_eq!((code, out.as_str()), (0, "plain saw GET /secret-path HTTP/1.1\n200"), "{err}");

    // A name off the list, over TLS and plain HTTP: the proxy refuses.
    let (code, _, _) = curl(format!("https://denied.test:{tls_port}/")).await;
    assert_ne!(code, 0, "denied.test over TLS");
    let (_, out, _) = curl(format!("http://denied.test:{plain_port}/other-secret-path")).await;
    assert!(out.ends_with("403"), "denied.test over plain HTTP: {out}");
    // A raw address through the proxy (NO_PROXY names loopback, so the
    // proxy is asked for explicitly), and around it.
    let through =
        format!("curl -sS --max-time 10 --noproxy '' -k -w '%{{http_connect}}' https://127.0.0.1:{tls_port}/");
    let (code, out, _) = run_in(&server, &id, &["sh", "-c", &through], None).await;
    assert!(code != 0 && out.ends_with("403"), "a raw IP address through the proxy: {code} {out}");
    let around = "curl -sS --max-time 5 --noproxy '*' http://192.0.2.1/";
    let (code, _, err) = run_in(&server, &id, &["sh", "-c", around], None).await;
    assert_ne!(code, 0, "a raw IP address around the proxy: {err}");
    // Names do not resolve inside, and no DNS query can be sent: there is
    // no route out of the executor's network namespace. A UDP send to a
    // documentation address (192.0.2.53) fails at once, before any packet.
    let (code, out, _) = run_in(&server, &id, &["sh", "-c", "getent hosts allowed.test"], None).await;
    assert_ne!(code, 0, "allowed.test resolves only in the proxy: {out}");
    let dns = "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
               try:\n    s.sendto(b'query', ('192.0.2.53', 53))\n    print('sent')\n\
               except OSError as e:\n    print('refused', e.errno)\n";
    let (_, out, err) = run_in(&server, &id, &["python3", "-c", dns], None).await;
    assert!(out.starts_with("refused"), "a DNS query left the executor: {out} {err}");

    // Every refusal is logged with its name and port, never its path.
    let log = server.output();
    assert!(log.matches("egress refused").count() >= 3, "{log}");
    assert!(log.contains("denied.test"), "{log}");
    assert!(!log.contains("other-secret-path") && !log.contains("secret-path"), "no URL path is logged");

    // Stopped, its proxy goes too.
    let (status, answer) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert!(status == 202 || status == 200, "{answer}");
    let socket = dir.executors();
    server.wait_for("alice", &id, std::time::Duration::from_secs(60), |w| w["status"] == "stopped").await;
    let leftover: Vec<_> = walk_sockets(&socket);
    assert!(leftover.is_empty(), "{leftover:?}");
}

/// A Docker executor (`--network none`) with an allowlist: a request
/// written by busybox's nc to the proxy's address reaches the listed name,
/// and nothing else leaves. (Debian's static busybox wget cannot run here:
/// it crashes looking any address up.)
#[tokio::test]
async fn a_docker_executor_reaches_only_the_names_its_spec_lists() {
    let Some(image) = sluice_tests::docker_test_image() else { return };
    let plain_port = http_server().await;
    let dir = DataDir::new();
    let hosts = dir.root().join("egress-hosts");
    std::fs::write(&hosts, "127.0.0.1 allowed.test denied.test\n").unwrap();
    let options =
        Options::serve().arg("--runtime").arg("docker").arg("--egress-hosts").arg(hosts.display().to_string());
    let server = Server::start_with(&dir.path(), options).await;
    let (repository, tag) = image.split_once(':').unwrap();
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": repository, "tag": tag, "launchId": "egress-d",
        "spec": {"network": {"egress": [format!("allowed.test:{plain_port}")]}},
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, std::time::Duration::from_secs(90), |w| w["status"] == "ready").await;

    // Through the proxy the workload's variables name.
    let request = |name: &str| {
        format!(
            "p=${{HTTP_PROXY#http://}}; \
             printf 'GET http://{name}:{plain_port}/from-docker HTTP/1.1\\r\\nHost: {name}:{plain_port}\\r\\n\\r\\n' \
             | nc -w 10 ${{p%:*}} ${{p##*:}}"
        )
    };
    let (code, out, err) = run_in(&server, &id, &["sh", "-c", &request("allowed.test")], None).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("HTTP/1.1 200") && out.ends_with("plain saw GET /from-docker HTTP/1.1"), "{out}");
    let (_, out, _) = run_in(&server, &id, &["sh", "-c", &request("denied.test")], None).await;
    assert!(out.starts_with("HTTP/1.1 403"), "denied.test: {out}");
    // Around it: no route out of the container.
    let (code, _, err) = run_in(&server, &id, &["sh", "-c", "nc -w 3 192.0.2.1 80 </dev/null"], None).await;
    assert_ne!(code, 0, "a raw IP address around the proxy: {err}");
    assert!(server.output().contains("egress refused"), "the refusal is logged");
}

/// The egress sockets left under `dir`.
fn walk_sockets(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk_sockets(&path));
        } else if path.file_name().is_some_and(|n| n == "egress.sock") {
            found.push(path);
        }
    }
    found
}

/// A listed name the host's resolver answers with an internal address
/// (here `localhost`) is refused and counted: a public name pointed at the
/// host would otherwise open its own services to the workload.
#[tokio::test]
async fn names_resolving_to_internal_addresses_are_refused() {
    let plain_port = http_server().await;
    let allowlist = Allowlist::parse([format!("localhost:{plain_port}").as_str()]).unwrap();
    let proxy = Arc::new(EgressProxy::new("ws_test".into(), allowlist, Resolver::System));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    tokio::spawn(serve(listener, proxy.clone(), std::future::pending()));
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("none.pem");
    std::fs::write(&ca, "").unwrap();
    let (_, status, _) = curl(proxy_port, &ca, &[], &format!("http://localhost:{plain_port}/")).await;
    assert_eq!(status, "403", "localhost is on the list, but it is the host");
    assert_eq!(proxy.refused(), 1);
}
