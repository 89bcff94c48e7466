//! `sluice gateway`: the SSH gateway's flags, and starting it.

#[derive(clap::Args, Debug)]
pub struct GatewayArgs {
    /// Where SSH clients connect.
    #[arg(long, env = "SLUICE_GATEWAY_LISTEN", default_value = "127.0.0.1:2222")]
    pub listen: std::net::SocketAddr,
    /// The sluice API the gateway asks (keys, targets).
    #[arg(long, env = "SLUICE_API_URL", default_value = "http://127.0.0.1:7420")]
    pub api_url: String,
    /// A file holding one of the API's gateway tokens (the data directory's
    /// `gateway-token` for the embedded default).
    #[arg(long, env = "SLUICE_GATEWAY_TOKEN_FILE")]
    pub gateway_token_file: std::path::PathBuf,
    /// Where the gateway keeps its host key.
    #[arg(long, env = "SLUICE_GATEWAY_DATA_DIR", default_value = "sluice-gateway")]
    pub data_dir: std::path::PathBuf,
    /// A connection that has not signed in this long is ended.
    #[arg(long, env = "SLUICE_GATEWAY_SIGN_IN_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub sign_in_seconds: u64,
}

pub async fn run(args: GatewayArgs) -> anyhow::Result<()> {
    let token = std::fs::read_to_string(&args.gateway_token_file)
        .map_err(|e| anyhow::anyhow!("cannot read --gateway-token-file {}: {e}", args.gateway_token_file.display()))?
        .trim()
        .to_owned();
    anyhow::ensure!(!token.is_empty(), "--gateway-token-file {} is empty", args.gateway_token_file.display());
    let config = sluice_gateway::GatewayConfig {
        listen: args.listen,
        api_url: args.api_url,
        gateway_token: token,
        data_dir: args.data_dir,
        sign_in_within: std::time::Duration::from_secs(args.sign_in_seconds),
    };
    let stop = crate::stop_on_signals();
    sluice_gateway::serve(config, stop.cancelled_owned()).await
}
