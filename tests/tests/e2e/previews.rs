//! Preview URLs with real clients: `sluice serve` with a preview listener
//! (its self-signed certificate for `*.preview.test`), a workspace running
//! an HTTP and WebSocket server on a port, curl and a WebSocket client.
//! Without the signed visit a preview is refused; the visit leaves a cookie
//! for that host only; the workspace's server never sees the token; a
//! public port needs none; after a revoke, or a stop, it is gone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::{free_port, read_until};

pub(crate) const DOMAIN: &str = "preview.test";

/// An HTTP server on a port inside the workspace, from Python's standard
/// library: `GET` answers what it was sent (request line, cookies), `POST`
/// the length of its body, and a WebSocket upgrade echoes text frames.
pub(crate) const APP: &str = r#"
import base64, hashlib, http.server, json, sys
class App(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        self.reply({"path": self.path, "cookie": self.headers.get("Cookie"), "host": self.headers.get("Host")})
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        self.reply({"length": len(body), "sha256": hashlib.sha256(body).hexdigest()})
    def websocket(self):
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        while True:
            head = self.rfile.read(2)
            if len(head) < 2: return
            op, n = head[0] & 15, head[1] & 127
            if n == 126: n = int.from_bytes(self.rfile.read(2), "big")
            elif n == 127: n = int.from_bytes(self.rfile.read(8), "big")
            mask = self.rfile.read(4)
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op == 8:
                self.wfile.write(b"\x88\x00"); self.wfile.flush(); return
            reply = b"echo: " + data
            frame = bytes([0x81, len(reply)]) if len(reply) < 126 else bytes([0x81, 126]) + len(reply).to_bytes(2, "big")
            self.wfile.write(frame + reply)
            self.wfile.flush()
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), App).serve_forever()
"#;

/// curl against the preview listener, `host` resolved to it and its
/// certificate trusted: (HTTP status, headers, body).
pub(crate) fn curl(listen: u16, ca: &Path, jar: &Path, url: &str, extra: &[&str]) -> (u16, String, String) {
    let host = url.split("://").nth(1).unwrap().split(['/', ':']).next().unwrap().to_owned();
    let headers = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}"])
        .arg("--resolve")
        .arg(format!("{host}:{listen}:127.0.0.1"))
        .arg("--cacert")
        .arg(ca)
        .arg("-b")
        .arg(jar)
        .arg("-c")
        .arg(jar)
        .arg("-D")
        .arg(headers.path())
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or((&text, "0"));
    let headers = std::fs::read_to_string(headers.path()).unwrap_or_default();
    (status.trim().parse().unwrap_or(0), headers, body.to_owned())
}

/// `sluice serve` on `runtime`, serving previews on loopback's `listen`.
pub(crate) fn previewing(runtime: &str, listen: u16) -> Options {
    Options::serve()
        .arg("--runtime")
        .arg(runtime)
        .arg("--preview-listen")
        .arg(format!("127.0.0.1:{listen}"))
        .arg("--preview-domain")
        .arg(DOMAIN)
}

async fn post(server: &Server, path: &str, body: Value) -> (u16, Value) {
    server.post(path, &body).await
}

/// Revokes a grant through the API: the status answered.
async fn revoke(server: &Server, previews: &str, preview_id: &str) -> u16 {
    let url = format!("{}{previews}/{preview_id}?ownerUserId=alice", server.base);
    server.client.delete(url).bearer_auth(&server.token).send().await.unwrap().status().as_u16()
}

/// The WebSocket client: a TLS connection that trusts `ca`, then the
/// upgrade, one text message and its echo.
async fn websocket_echo(
    listen: u16,
    ca: &Path,
    host: &str,
    cookie: Option<&str>,
    text: &str,
) -> Result<String, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from_pem_file(ca).unwrap()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", listen)).await.map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.map_err(|e| e.to_string())?;
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(format!("wss://{host}/socket"))
            .map_err(|e| e.to_string())?;
    if let Some(cookie) = cookie {
        request.headers_mut().insert("cookie", cookie.parse().unwrap());
    }
    let (mut socket, _) = tokio_tungstenite::client_async(request, tls).await.map_err(|e| e.to_string())?;
    socket.send(tokio_tungstenite::tungstenite::Message::text(text)).await.map_err(|e| e.to_string())?;
    let answer =
        tokio::time::timeout(Duration::from_secs(10), socket.next()).await.map_err(|_| "no echo".to_owned())?;
    let answer = answer.ok_or("closed")?.map_err(|e| e.to_string())?;
    let _ = socket.close(None).await;
    Ok(answer.into_text().map_err(|e| e.to_string())?.to_string())
}

/// The cookie curl's jar holds for `host`: its value, and whether it is
/// bound to that host alone.
fn jar_cookie(jar: &Path, host: &str) -> Option<(String, bool)> {
    let text = std::fs::read_to_string(jar).ok()?;
    text.lines().map(|l| l.trim_start_matches("#HttpOnly_")).find_map(|line| {
        let fields: Vec<&str> = line.split('\t').collect();
        (fields.len() == 7 && fields[0] == host && fields[5] == "sluice_preview")
            .then(|| (fields[6].to_owned(), fields[1] == "FALSE"))
    })
}

#[tokio::test]
async fn a_preview_serves_http_and_websockets_to_its_signed_visitors_until_the_workspace_stops() {
    let listen = free_port();
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), previewing("local", listen)).await;
    let ca: PathBuf = dir.path().join("preview-tls").join(DOMAIN).join("cert.pem");
    assert!(ca.exists(), "the self-signed certificate is kept in the data directory");
    let app_port = free_port();
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "r", "tag": "1", "launchId": "preview-1",
        // The managed process: the app, once its file is there.
        "spec": {"command": ["sh", "-c", format!("until [ -s app.py ]; do sleep 0.1; done; exec python3 app.py {app_port}")]},
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "ready").await;
    // The app's code goes in as a file (a spec or an argv keeps no code).
    let write = "cat > app.tmp && mv app.tmp app.py";
    let (status, run) = server
        .post(
            &format!("/v1/workspaces/{id}/exec"),
            &json!({"ownerUserId": "alice", "commands": [{"argv": ["sh", "-c", write], "stdin": APP}]}),
        )
        .await;
    assert_eq!(status, 202, "{run}");
    let previews = format!("/v1/workspaces/{id}/previews");

    // Refusals a caller can read.
    for (body, field) in [
        (json!({"ownerUserId": "alice", "port": 0}), "port"),
        (json!({"ownerUserId": "alice", "port": 70000}), "port"),
        (json!({"ownerUserId": "alice", "port": 80, "ttlSeconds": 5}), "ttlSeconds"),
    ] {
        let (status, answer) = post(&server, &previews, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer.to_string().contains(field), "{answer}");
    }
    assert_eq!(post(&server, &previews, json!({"ownerUserId": "mallory", "port": app_port})).await.0, 404);

    let (status, grant) =
        post(&server, &previews, json!({"ownerUserId": "alice", "port": app_port, "ttlSeconds": 600})).await;
    assert_eq!(status, 201, "{grant}");
    let url = grant["url"].as_str().unwrap().to_owned();
    let host = format!("{app_port}-{id}.{DOMAIN}");
    assert!(url.starts_with(&format!("https://{host}:{listen}/?sluice_preview_token=")), "{url}");
    let token = url.rsplit_once('=').unwrap().1.to_owned();
    let bare = format!("https://{host}:{listen}/");
    let jar = dir.root().join("jar");
    let nothing = dir.root().join("no-jar");

    // Without the visit: refused (the app may still be starting; the
    // refusal comes first either way).
    let (status, _, body) = curl(listen, &ca, &nothing, &format!("{bare}page?x=1"), &[]);
    assert_eq!(status, 403, "{body}");
    // The visit: a cookie for this host only, and back to the page.
    let (status, headers, _) = curl(listen, &ca, &jar, &format!("{bare}page?x=1&sluice_preview_token={token}"), &[]);
    assert_eq!(status, 303, "{headers}");
    assert!(headers.to_ascii_lowercase().contains("location: /page?x=1"), "{headers}");
    let (cookie, host_only) = jar_cookie(&jar, &host).expect("the visit left a cookie");
    assert!(host_only, "the cookie is for {host} alone");
    assert_eq!(cookie, token);
    let set_cookie = headers.lines().find(|l| l.to_ascii_lowercase().starts_with("set-cookie")).unwrap().to_owned();
    for attribute in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    assert!(!set_cookie.to_ascii_lowercase().contains("domain="), "no Domain: host-only: {set_cookie}");

    // With the cookie: the app, once it listens.
    let read =
        || std::future::ready(curl(listen, &ca, &jar, &format!("{bare}page?x=1"), &["-H", "Cookie: theme=dark"]));
    let page = read_until(Duration::from_secs(20), read, |p| p.0 == 200).await.unwrap_or_else(|last| last);
    assert_eq!(page.0, 200, "{page:?}\n{}", server.output());
    let seen: Value = serde_json::from_str(&page.2).unwrap();
    assert_eq!(seen["path"], "/page?x=1");
    assert_eq!(seen["host"].as_str(), Some(format!("{host}:{listen}").as_str()));
    let cookies = seen["cookie"].as_str().unwrap_or_default();
    assert!(!cookies.contains(&token), "the app never sees the token: {cookies}");
    // HTTP/2 where the client offers it (ALPN), HTTP/1.1 where it does not.
    for (flag, version) in [("--http2", "HTTP/2 "), ("--http1.1", "HTTP/1.1 ")] {
        let (status, headers, body) = curl(listen, &ca, &jar, &format!("{bare}v?{flag}"), &[flag]);
        assert_eq!(status, 200, "{flag}: {body}");
        assert!(headers.starts_with(version), "{flag}: {headers}");
        assert!(body.contains(&format!("/v?{flag}")), "the app answered: {body}");
    }
    // A 2 MB body streamed through, byte for byte.
    let upload = dir.root().join("upload");
    let bytes: Vec<u8> = (0..2_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    std::fs::write(&upload, &bytes).unwrap();
    let (status, _, body) =
        curl(listen, &ca, &jar, &format!("{bare}upload"), &["--data-binary", &format!("@{}", upload.display())]);
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    use sha2::Digest;
    let digest: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!((answer["length"].as_u64(), answer["sha256"].as_str()), (Some(2_000_000), Some(digest.as_str())));

    // A WebSocket through the preview, with the cookie; without it, refused.
    let cookie = format!("sluice_preview={token}");
    let echo = websocket_echo(listen, &ca, &host, Some(&cookie), "hello through the preview").await;
    assert_eq!(echo.as_deref(), Ok("echo: hello through the preview"));
    assert!(websocket_echo(listen, &ca, &host, None, "no").await.is_err(), "no cookie: no upgrade");

    // Another port of the same workspace is not covered by this cookie;
    // made public, it needs none.
    let other = format!("https://{}-{id}.{DOMAIN}:{listen}/", app_port + 1);
    assert_eq!(curl(listen, &ca, &jar, &other, &[]).0, 403);
    let (status, public) =
        post(&server, &previews, json!({"ownerUserId": "alice", "port": app_port, "public": true})).await;
    assert_eq!(status, 201, "{public}");
    assert!(!public["url"].as_str().unwrap().contains("token"), "a public URL carries no token");
    assert_eq!(curl(listen, &ca, &nothing, &format!("{bare}open"), &[]).0, 200, "public: no cookie needed");

    // Listed; a revoke ends the public grant at once.
    let (status, listed) = server.get(&format!("{previews}?ownerUserId=alice")).await;
    assert_eq!(status, 200);
    assert_eq!(listed["items"].as_array().unwrap().len(), 2, "{listed}");
    assert!(!listed.to_string().contains(&token), "a listing never shows a token");
    let public_id = public["previewId"].as_str().unwrap();
    assert_eq!(revoke(&server, &previews, public_id).await, 204);
    assert_eq!(curl(listen, &ca, &nothing, &format!("{bare}open"), &[]).0, 403, "revoked");
    assert_eq!(curl(listen, &ca, &jar, &format!("{bare}still"), &[]).0, 200, "the private grant goes on");
    // A cookie whose grant was revoked is refused, unless the port is public.
    let private_id = grant["previewId"].as_str().unwrap();
    assert_eq!(revoke(&server, &previews, private_id).await, 204);
    assert_eq!(curl(listen, &ca, &jar, &format!("{bare}revoked"), &[]).0, 403, "the cookie's grant was revoked");
    let (status, _) = post(&server, &previews, json!({"ownerUserId": "alice", "port": app_port, "public": true})).await;
    assert_eq!(status, 201);
    assert_eq!(curl(listen, &ca, &jar, &format!("{bare}public-again"), &[]).0, 200, "public: the cookie is not needed");

    // A host that is no preview, and a certificate for the domain only.
    assert_eq!(curl(listen, &ca, &nothing, &format!("https://elsewhere.{DOMAIN}:{listen}/"), &[]).0, 404);

    // Stopped: gone, with the cookie and without.
    let (status, answer) = server.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert!(status == 202 || status == 200, "{answer}");
    server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "stopped").await;
    assert_eq!(curl(listen, &ca, &jar, &format!("{bare}page"), &[]).0, 410);
    assert_eq!(curl(listen, &ca, &nothing, &format!("{bare}page"), &[]).0, 410, "the public grant ended too");
    assert!(websocket_echo(listen, &ca, &host, Some(&cookie), "late").await.is_err());
    // Nothing of the token reached a log line.
    assert!(!server.output().contains(&token), "the token is never logged");
}

/// Behind a proxy that terminates TLS: the listener speaks plain HTTP, and
/// the URLs it grants still say https, on the port the proxy listens on.
#[tokio::test]
async fn a_plaintext_listener_serves_behind_a_tls_terminating_proxy() {
    let listen = free_port();
    let dir = DataDir::new();
    let options = previewing("local", listen).arg("--preview-plaintext").arg("--preview-url-port").arg("443");
    let server = Server::start_with(&dir.path(), options).await;
    assert!(!dir.path().join("preview-tls").exists(), "no certificate is made for a plaintext listener");
    let body = json!({"ownerUserId": "alice", "registryId": "host", "repository": "r", "tag": "1", "spec": {}});
    let (_, created) = server.post("/v1/workspaces", &body).await;
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, Duration::from_secs(60), |w| w["status"] == "ready").await;
    let (status, grant) =
        server.post(&format!("/v1/workspaces/{id}/previews"), &json!({"ownerUserId": "alice", "port": 9})).await;
    assert_eq!(status, 201, "{grant}");
    let url = grant["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("https://9-{id}.{DOMAIN}/?sluice_preview_token=")), "{url}");
    let host = format!("9-{id}.{DOMAIN}");
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "-H"])
        .arg(format!("Host: {host}"))
        .arg(format!("http://127.0.0.1:{listen}/"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403", "plain HTTP, and private");
    // The signed visit over plain HTTP reaches the grant; nothing listens
    // on port 9 inside, so the request after it is a 502.
    let token = url.rsplit_once('=').unwrap().1;
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "-H"])
        .arg(format!("Host: {host}"))
        .arg("-H")
        .arg(format!("Cookie: sluice_preview={token}"))
        .arg(format!("http://127.0.0.1:{listen}/"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "502", "{}", server.output());
}

/// A Docker executor's port, previewed: busybox httpd inside the
/// container, reached through the daemon's session like a local one.
#[tokio::test]
async fn a_docker_executors_port_is_previewed() {
    let Some(image) = sluice_tests::docker_test_image() else { return };
    let listen = free_port();
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), previewing("docker", listen)).await;
    let ca = dir.path().join("preview-tls").join(DOMAIN).join("cert.pem");
    let (repository, tag) = image.split_once(':').unwrap();
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": repository, "tag": tag, "launchId": "preview-d",
        "spec": {"command": ["httpd", "-f", "-p", "127.0.0.1:8000", "-h", "/workspace"]},
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["workspaceId"].as_str().unwrap().to_owned();
    server.wait_for("alice", &id, Duration::from_secs(90), |w| w["status"] == "ready").await;
    let (status, run) = server
        .post(
            &format!("/v1/workspaces/{id}/exec"),
            &json!({"ownerUserId": "alice", "commands": [{"argv": ["sh", "-c", "echo from-docker > /workspace/index.html"]}]}),
        )
        .await;
    assert_eq!(status, 202, "{run}");
    let (status, grant) = server
        .post(&format!("/v1/workspaces/{id}/previews"), &json!({"ownerUserId": "alice", "port": 8000, "public": true}))
        .await;
    assert_eq!(status, 201, "{grant}");
    let url = format!("https://8000-{id}.{DOMAIN}:{listen}/index.html");
    let jar = dir.root().join("jar");
    let read = || std::future::ready(curl(listen, &ca, &jar, &url, &[]));
    let answer = read_until(Duration::from_secs(10), read, |a| a.0 == 200).await.unwrap_or_else(|last| last);
    assert_eq!((answer.0, answer.2.as_str()), (200, "from-docker\n"), "{}", server.output());
}
