//! `sluice mcp` driven by a real MCP client (the Python `mcp` package,
//! tests/agents/mcp_session.py) against a real `serve`: over stdio, the
//! whole session an agent has (tools listed, a workspace created, a command
//! run, a file written and read, a server started and reached through its
//! preview, bad arguments answered, the workspace stopped); over streamable
//! HTTP, the listener's token and Host checks, then a short session.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use sluice_tests::server::{DataDir, Options, Server};

use crate::previews::DOMAIN;

fn mcp_client_available() -> bool {
    let here = Command::new("python3").args(["-c", "import mcp, httpx2"]).output();
    sluice_tests::present("pip's mcp (the MCP server's test; see .ci/run)", here.is_ok_and(|o| o.status.success()))
}

/// The agent's session (`mode` and its arguments), with the server's API
/// in its environment: the summary it printed last.
async fn session(server: &Server, args: &[&str]) -> Value {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("agents/mcp_session.py");
    let run = tokio::process::Command::new("python3")
        .arg(&driver)
        .args(args)
        .env("SLUICE_API_URL", &server.base)
        .env("SLUICE_API_TOKEN", &server.token)
        .env("SLUICE_OWNER", "alice")
        .env("SLUICE_MCP_IMAGE", "sluice-test/busybox:1")
        .env("SLUICE_MCP_REGISTRY", "host")
        .kill_on_drop(true)
        .output();
    let run = tokio::time::timeout(Duration::from_secs(240), run).await.expect("the session ends").unwrap();
    let printed = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    let tail: String = printed.chars().rev().take(6000).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(run.status.success(), "the MCP session failed:\n{tail}\nserver:\n{}", server.output());
    let last = String::from_utf8_lossy(&run.stdout).lines().last().unwrap_or("").to_owned();
    serde_json::from_str(&last).unwrap_or_else(|e| panic!("no summary ({e}): {tail}"))
}

async fn status_of(server: &Server, owner: &str, id: &str) -> (u16, Value) {
    server.get(&format!("/v1/workspaces/{id}?ownerUserId={owner}")).await
}

#[tokio::test]
async fn an_agent_drives_a_workspace_through_the_mcp_server() {
    if !mcp_client_available() {
        return;
    }
    let dir = DataDir::new();
    let listen = sluice_tests::free_port();
    let preview = format!("127.0.0.1:{listen}");
    let options =
        Options::serve().args(["--runtime", "local", "--preview-listen", &preview, "--preview-domain", DOMAIN]);
    let server = Server::start_with(&dir.path(), options).await;
    let ca = dir.path().join("preview-tls").join(DOMAIN).join("cert.pem");

    // Over stdio: the client starts `sluice mcp` itself.
    let binary = sluice_tests::sluice_binary();
    let summary =
        session(&server, &["stdio", binary.to_str().unwrap(), &listen.to_string(), ca.to_str().unwrap()]).await;
    assert_eq!(summary["preview_status"], 200, "{summary}");
    assert_eq!(summary["forked"], 2, "an agent forks a workspace: {summary}");
    let said = |key: &str| summary[key].as_str().unwrap_or_default().to_owned();
    assert!(said("wrong_type").contains("argv: invalid type"), "a wrongly typed argument, named: {summary}");
    assert!(said("unknown_argument").contains("unknown field `lenght`"), "a misspelt argument: {summary}");
    assert!(said("neither").contains("`command`"), "a command missing: {summary}");
    assert!(said("escape").contains("400") && said("escape").contains("path"), "a path out: {summary}");
    assert!(said("unknown_workspace").contains("404") && said("unknown_workspace").contains("list_workspaces"));
    let id = said("workspace_id");
    let (status, workspace) = status_of(&server, "alice", &id).await;
    assert_eq!((status, workspace["status"].as_str()), (200, Some("stopped")), "{workspace}");
    assert!(workspace["spec"]["source"]["sessionId"].is_string(), "its files were saved as they changed: {workspace}");
    let (status, _) = status_of(&server, "bob", &id).await;
    assert_eq!(status, 404, "the workspace is the server's owner's, and only theirs");

    // Over streamable HTTP, behind a token of its own.
    let token = "mcp-token-0123456789abcdef";
    let token_file = dir.root().join("mcp-token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let port = sluice_tests::free_port();
    let log = std::fs::File::create(dir.root().join("mcp.log")).unwrap();
    let mut mcp = Command::new(&binary)
        .args(["mcp", "--listen", &format!("127.0.0.1:{port}"), "--token-file"])
        .arg(&token_file)
        .env("SLUICE_API_URL", &server.base)
        .env("SLUICE_API_TOKEN", &server.token)
        .env("SLUICE_OWNER", "alice")
        .env("SLUICE_MCP_IMAGE", "sluice-test/busybox:1")
        .env("SLUICE_MCP_REGISTRY", "host")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let http = reqwest::Client::new();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;
    let ask = |token: Option<&str>, host: Option<&str>| {
        let mut request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(host) = host {
            request = request.header("host", host);
        }
        request.send()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let anonymous = loop {
        match ask(None, None).await {
            Ok(answer) => break answer,
            Err(e) if tokio::time::Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("sluice mcp --listen never answered: {e}"),
        }
    };
    assert_eq!(anonymous.status(), 401, "no token, no session");
    assert_eq!(ask(Some("not-the-token"), None).await.unwrap().status(), 401, "a wrong token");
    assert_eq!(ask(Some(&server.token), None).await.unwrap().status(), 401, "the API token is not the MCP token");
    let rebound = ask(Some(token), Some("attacker.example")).await.unwrap();
    assert_eq!(rebound.status(), 403, "a Host not allowed (DNS rebinding)");
    assert_eq!(ask(Some(token), None).await.unwrap().status(), 200, "the token opens a session");

    let summary = session(&server, &["http", &url, token]).await;
    let id = summary["workspace_id"].as_str().unwrap().to_owned();
    let (_, workspace) = status_of(&server, "alice", &id).await;
    assert_eq!(workspace["status"], "stopped", "{workspace}");

    let _ = mcp.kill();
    let _ = mcp.wait();
    let logged = std::fs::read_to_string(dir.root().join("mcp.log")).unwrap();
    for secret in [token, server.token.as_str()] {
        assert!(!logged.contains(secret), "a token in the MCP server's log: {logged}");
    }
    server.stop();
}
