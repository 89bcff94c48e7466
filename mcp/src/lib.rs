//! sluice's MCP server: the tools an agent drives workspaces with (create,
//! run a command, background processes, files, a preview, stop), each a
//! call of the HTTP API as one owner, with a token. Over stdio for an agent
//! that starts it, or streamable HTTP behind a bearer token of its own.
//!
//! What a tool answers is bounded (`Limits`), and every failure is a tool
//! error whose text says what went wrong and what to do next: the reader is
//! a model.

mod failure;
mod http;
mod tools;

pub use http::router;
pub use tools::{Limits, Settings, Workspaces};

/// Serves one MCP session over this process's standard input and output,
/// until the client ends it.
pub async fn serve_stdio(tools: Workspaces) -> Result<(), String> {
    use rmcp::ServiceExt;
    let running =
        tools.serve(rmcp::transport::stdio()).await.map_err(|e| format!("the MCP session did not start: {e}"))?;
    running.waiting().await.map_err(|e| format!("the MCP session failed: {e}"))?;
    Ok(())
}
