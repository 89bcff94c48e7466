//! `sluice-bench`: each benchmark measures sluice next to a baseline
//! measured in the same run and prints the ratio (`scripts/bench*` build
//! and run it; `docs/benchmarks.md` has the figures). It drives the
//! `sluice` binary built beside it.

mod capture;
mod creates;
mod exec;
mod idle;
mod images;
mod reads;
mod ready;
mod routed;
mod sleep;
mod summary;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "sluice-bench", about = "sluice's benchmarks, each against a baseline measured in the same run")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create and replay throughput and latency against a bare insert baseline.
    Creates(creates::BenchArgs),
    /// Create → ready latency per runtime against starting the daemon bare.
    Ready(ready::BenchReadyArgs),
    /// What idle ready workspaces cost the server and their daemons.
    Idle(idle::BenchIdleArgs),
    /// An exec routed through the executor's worker against the same exec made on its host.
    Routed(routed::BenchRoutedArgs),
    /// Exec through the broker and the workspaces API against a bare fork+exec.
    Exec(exec::BenchExecArgs),
    /// Capture, incremental capture, restore and a no-change FINAL against restic.
    Capture(capture::BenchCaptureArgs),
    /// Image pulls against skopeo, create → ready on a cached image against the host's
    /// filesystem, and an unchanged template rebuild.
    Images(images::BenchImagesArgs),
    /// Reads and sweeps as a generated store grows, against the same at its first size.
    Reads(reads::BenchReadsArgs),
    /// A sleeping workspace's waking exec against a create, and ten forks against one restore.
    Sleep(sleep::BenchSleepArgs),
}

/// The `sluice` binary the benchmarks start: `SLUICE_BIN`, or the one
/// built beside this program.
pub(crate) fn sluice_binary() -> anyhow::Result<std::path::PathBuf> {
    if let Some(path) = std::env::var_os("SLUICE_BIN") {
        return Ok(path.into());
    }
    let beside = std::env::current_exe()?.with_file_name("sluice");
    anyhow::ensure!(beside.is_file(), "no sluice binary at {}: build it (cargo build -p sluice-cli)", beside.display());
    Ok(beside)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    // What the benchmarks write is private to them, as sluice's own files are.
    // SAFETY: umask only changes this process's file creation mask.
    unsafe { libc::umask(0o077) };
    // The benchmarks' own requests would drown their tables in request logs.
    let _tracing =
        sluice_telemetry::traces::init("warn", sluice_telemetry::traces::LogFormat::Text, None, "sluice-bench")
            .map_err(anyhow::Error::msg)?;
    match cli.command {
        Command::Creates(args) => creates::run(args).await,
        Command::Ready(args) => ready::run(args).await,
        Command::Idle(args) => idle::run(args).await,
        Command::Routed(args) => routed::run(args).await,
        Command::Exec(args) => exec::run(args).await,
        Command::Capture(args) => capture::run(args).await,
        Command::Reads(args) => reads::run(args).await,
        Command::Sleep(args) => sleep::run(args).await,
        Command::Images(args) => images::run_bench(args).await,
    }
}
