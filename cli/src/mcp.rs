//! `sluice mcp`: the MCP server for agents, over stdio (an agent client
//! starts it) or streamable HTTP (`--listen`), acting for one owner
//! through the API.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use sluice_mcp::{Limits, Settings, Workspaces};
use tokio_util::sync::CancellationToken;

use crate::api_client::{Api, ApiClientArgs};

#[derive(Args, Debug)]
pub struct McpArgs {
    /// The owner every tool acts for: the agent sees and makes only this
    /// owner's workspaces.
    #[arg(long = "owner", env = "SLUICE_OWNER")]
    pub owner_user_id: String,
    /// The image `create_workspace` uses when the agent names none
    /// (`repository:tag`).
    #[arg(long, env = "SLUICE_MCP_IMAGE")]
    pub image: Option<String>,
    /// The registry images are named in.
    #[arg(long, env = "SLUICE_MCP_REGISTRY", default_value = "local")]
    pub registry: String,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// With --listen: a file holding the bearer token MCP clients must send
    /// (not the API token, which they never see).
    #[arg(long, env = "SLUICE_MCP_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// With --listen: the `Host` names clients reach it by, besides
    /// localhost and loopback addresses (repeat the flag).
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// The most bytes of output, or of a file, one tool call answers.
    #[arg(long, default_value_t = 32 * 1024, value_parser = clap::value_parser!(u32).range(1024..=1024 * 1024))]
    pub max_output_bytes: u32,
    #[command(flatten)]
    pub api: ApiClientArgs,
}

pub async fn run(args: McpArgs) -> anyhow::Result<()> {
    let api = Api::new(&args.api)?;
    let limits = Limits { output_bytes: args.max_output_bytes as usize, ..Limits::default() };
    let settings = Settings { owner: args.owner_user_id, registry: args.registry, image: args.image, limits };
    let tools = Workspaces::new(api.client, settings);
    let Some(listen) = args.listen else {
        return sluice_mcp::serve_stdio(tools).await.map_err(anyhow::Error::msg);
    };
    let Some(token_file) = args.token_file else {
        bail!("--listen needs --token-file (or SLUICE_MCP_TOKEN_FILE): the token MCP clients must send");
    };
    let token = std::fs::read_to_string(&token_file)
        .with_context(|| format!("cannot read the MCP token file {}", token_file.display()))?;
    let token = token.trim();
    if token.len() < 16 {
        bail!("the MCP token in {} is shorter than 16 characters", token_file.display());
    }
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.push(listen.ip().to_string());
    hosts.extend(args.allowed_hosts);
    let shutdown = CancellationToken::new();
    let router = sluice_mcp::router(tools, token, hosts, shutdown.clone());
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("cannot listen on {listen}"))?;
    tracing::warn!(address = %listener.local_addr()?, "serving MCP over streamable HTTP at /mcp");
    let stopping = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stopping.cancel();
    });
    axum::serve(listener, router).with_graceful_shutdown(shutdown.cancelled_owned()).await?;
    Ok(())
}
