//! `sluiced`: start the managed process and serve an executor's control API.

use clap::Parser;

#[derive(Parser)]
#[command(name = "sluiced", version, about = "The sluice daemon inside an executor")]
struct Cli {
    #[command(flatten)]
    args: sluice_daemon::cli::Args,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if sluice_daemon::sftp_server_requested() {
        sluice_daemon::serve_sftp().await;
        return Ok(());
    }
    sluice_daemon::cli::run(Cli::parse().args).await
}
