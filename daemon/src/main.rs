//! `sluiced`: serve an executor's control API.

use std::path::PathBuf;

use clap::Parser;

#[derive(Parser)]
#[command(name = "sluiced", version, about = "The sluice daemon inside an executor")]
struct Args {
    /// Address the control API listens on.
    #[arg(long, env = "SLUICED_LISTEN", default_value = "127.0.0.1:7421")]
    listen: String,
    /// The boot secret file the control plane delivered (JSON with controlToken).
    #[arg(long, env = "SLUICED_BOOT_SECRET_FILE")]
    boot_secret_file: PathBuf,
    /// A directory on the executor's own disk for the daemon's state.
    #[arg(long, env = "SLUICED_STATE_DIR")]
    state_dir: PathBuf,
    /// The launch identity this executor runs as.
    #[arg(long, env = "SLUICED_LAUNCH")]
    launch: String,
    /// The capture lease epoch.
    #[arg(long, env = "SLUICED_EPOCH", default_value_t = 0)]
    epoch: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let router = sluice_daemon::control_router(sluice_daemon::DaemonConfig {
        boot_secret_file: &args.boot_secret_file,
        state_dir: &args.state_dir,
        launch: args.launch,
        epoch: args.epoch,
    })?;
    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    eprintln!("sluiced control API on {}", listener.local_addr()?);
    sluice_daemon::serve(router, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
