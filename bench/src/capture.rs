//! `sluice-bench capture`: sluice's capture path (the daemon's engine
//! shipping through a real registrar into a local object store, with the
//! session in SQLite) next to restic backing the same tree up into a local
//! repository, in the same run: an initial capture, an incremental one after
//! a small change, a restore into an empty directory, and a FINAL flush with
//! nothing changed. Then two larger trees of small files, each captured by
//! the engine in a process of its own: a FINAL flush with nothing changed on
//! the first, and the engine's peak memory on the second.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use sluice_daemon::capture::snap::SnapConfig;
use sluice_daemon::capture::{Capture, CaptureConfig, Stamper};
use sluice_domain::ids::OwnerId;
use sluice_protocol::Origin;
use sluice_protocol::capture::{FlushKind, FlushRequest};

#[derive(Args, Debug)]
pub struct BenchCaptureArgs {
    /// Small files (1–8 KiB), spread over `--folders` folders.
    #[arg(long, default_value_t = 20_000)]
    pub small_files: usize,
    #[arg(long, default_value_t = 500)]
    pub folders: usize,
    /// Large files of 16 MiB.
    #[arg(long, default_value_t = 20)]
    pub large_files: usize,
    /// Where the tree, the object store and the restic repository go.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Files of the tree a FINAL flush with nothing changed is timed on
    /// (0 skips it).
    #[arg(long, default_value_t = 200_000)]
    pub final_files: usize,
    /// Files of the tree the engine's peak memory is measured on (0 skips it).
    #[arg(long, default_value_t = 500_000)]
    pub memory_files: usize,
    /// Runs only the capture engine, on this worktree, against
    /// `--engine-socket` (the token in SLUICE_BENCH_TOKEN), and prints what
    /// it measured: the larger trees' child process.
    #[arg(long, hide = true, requires = "engine_socket")]
    pub engine_worktree: Option<PathBuf>,
    #[arg(long, hide = true)]
    pub engine_socket: Option<PathBuf>,
}

/// A deterministic byte stream (xorshift), so every run captures the same tree.
struct Bytes(u64);

impl Bytes {
    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            let word = self.0.to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    fn below(&mut self, n: u64) -> u64 {
        let mut word = [0u8; 8];
        self.fill(&mut word);
        u64::from_le_bytes(word) % n
    }
}

const LARGE: usize = 16 << 20;

fn generate(root: &Path, args: &BenchCaptureArgs) -> anyhow::Result<()> {
    let mut rng = Bytes(0x9e37_79b9_7f4a_7c15);
    for i in 0..args.small_files {
        let dir = root.join(format!("dir{:03}", i % args.folders));
        std::fs::create_dir_all(&dir)?;
        let mut data = vec![0u8; 1024 + rng.below(7 * 1024 + 1) as usize];
        rng.fill(&mut data);
        std::fs::write(dir.join(format!("file{i:05}.txt")), data)?;
    }
    std::fs::create_dir_all(root.join("large"))?;
    let mut data = vec![0u8; LARGE];
    for i in 0..args.large_files {
        rng.fill(&mut data);
        std::fs::write(root.join("large").join(format!("blob{i:02}.bin")), &data)?;
    }
    Ok(())
}

/// Changes 10 small files and overwrites 1 MiB in the middle of one large
/// file; answers the bytes changed.
fn change(root: &Path, args: &BenchCaptureArgs) -> anyhow::Result<u64> {
    use std::io::{Seek, Write};
    let mut rng = Bytes(0x1234_5678_9abc_def1);
    let mut changed = 0;
    for k in 0..10 {
        let i = (k * 1999 + 7) % args.small_files;
        let path = root.join(format!("dir{:03}", i % args.folders)).join(format!("file{i:05}.txt"));
        let mut data = vec![0u8; std::fs::metadata(&path)?.len() as usize];
        rng.fill(&mut data);
        std::fs::write(&path, &data)?;
        changed += data.len() as u64;
    }
    if args.large_files > 0 {
        let mut file = std::fs::OpenOptions::new().write(true).open(root.join("large/blob00.bin"))?;
        file.seek(std::io::SeekFrom::Start((LARGE / 2) as u64))?;
        let mut data = vec![0u8; 1 << 20];
        rng.fill(&mut data);
        file.write_all(&data)?;
        changed += data.len() as u64;
    }
    Ok(changed)
}

fn du(path: &Path) -> u64 {
    fn walk(path: &Path) -> u64 {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                std::fs::read_dir(path).map(|entries| entries.flatten().map(|e| walk(&e.path())).sum()).unwrap_or(0)
            }
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    walk(path)
}

/// Drops the page cache, so every tool reads the tree from disk alike
/// (only root can; otherwise both run warm).
fn drop_caches() {
    let _ = Command::new("sync").status();
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "3");
}

fn restic(repo: &Path, args: &[&str], dir: Option<&Path>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut command = Command::new("restic");
    command
        .arg("-r")
        .arg(repo)
        .args(args)
        .arg("--quiet")
        .env("RESTIC_PASSWORD", "bench")
        .env("RESTIC_CACHE_DIR", repo.with_extension("cache"));
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let status = command.status().context("restic is not installed (apt-get install restic)")?;
    anyhow::ensure!(status.success(), "restic {args:?} failed");
    Ok(started.elapsed())
}

/// One side's measurements.
#[derive(Default)]
struct Side {
    initial: Duration,
    initial_bytes: u64,
    incremental: Duration,
    incremental_bytes: u64,
    restore: Duration,
}

async fn engine(socket: &Path, token: &str, worktree: &Path, restore: bool) -> anyhow::Result<Capture> {
    let stamper: Stamper = Arc::new(|epoch, head_n| Origin {
        epoch,
        launch: "bench".into(),
        boot_id: "bench".into(),
        boot_generation: 1,
        observation: 0,
        head_n,
    });
    let capture = Capture::start(
        CaptureConfig {
            registrar_socket: socket.to_path_buf(),
            token: token.to_owned(),
            snap: SnapConfig { worktree: worktree.to_path_buf(), bulk_threshold: 4 << 20, bulk_paths: Vec::new() },
            interval: Duration::from_secs(3600),
            // Snaps come from flushes alone: no change listener.
            sweep: Duration::from_secs(3600),
            watch_max_dirs: 0,
            restore,
        },
        sluice_daemon::workload::FsWorker::spawn(None)?,
        std::sync::Arc::new(sluice_daemon::processes::Processes::spawned_only()),
        stamper,
    );
    let started = Instant::now();
    while !capture.ready() {
        anyhow::ensure!(started.elapsed() < Duration::from_secs(600), "the capture engine did not become ready");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(capture)
}

async fn flush(capture: &Capture, kind: FlushKind) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let status = capture.flush(FlushRequest { kind, ..Default::default() }, Duration::from_secs(3600)).await;
    let elapsed = started.elapsed();
    if status.pending != 0 || (kind == FlushKind::Final && status.complete != Some(true)) {
        bail!("the flush did not ship everything: {status:?}");
    }
    Ok(elapsed)
}

async fn sluice_side(root: &Path, tree: &Path, args: &BenchCaptureArgs) -> anyhow::Result<(Side, Duration, u64)> {
    std::fs::create_dir_all(root)?;
    let store = sluice_store::Store::open(
        &format!("sqlite:{}", root.join("bench.db").display()),
        sluice_store::Sealer::from_key([7; 32]),
    )
    .await?;
    let objects_dir = root.join("objects");
    let objects = sluice_capture_store::objects::Objects::open(
        &sluice_capture_store::objects::ObjectStoreUrl::Local(objects_dir.clone()),
        store.clone(),
    )?;
    let host = sluice_capture_store::registrar::RegistrarHost::new(store.clone(), objects, Default::default());
    let (session, token) = store.create_capture_session(&OwnerId::from("bench"), None, Default::default()).await?;
    let socket = |run: &str| root.join(format!("{run}.sock"));
    let bind = |run: &str| sluice_capture_store::registrar::Binding {
        run_id: run.into(),
        session_id: session.id.clone(),
        launch: "bench".into(),
    };
    host.ensure(bind("a"), || tokio::net::UnixListener::bind(socket("a")))?;
    let mut side = Side::default();

    let capture = engine(&socket("a"), token.expose(), tree, false).await?;
    drop_caches();
    side.initial = flush(&capture, FlushKind::Suspend).await?;
    side.initial_bytes = du(&objects_dir);
    let changed = change(tree, args)?;
    drop_caches();
    side.incremental = flush(&capture, FlushKind::Suspend).await?;
    side.incremental_bytes = du(&objects_dir) - side.initial_bytes;
    flush(&capture, FlushKind::Suspend).await?;
    // The median of five: the first one also records the seal.
    let mut finals = Vec::new();
    for _ in 0..5 {
        finals.push(flush(&capture, FlushKind::Final).await?);
    }
    finals.sort();
    let final_flush = finals[finals.len() / 2];

    let restored = root.join("restored-sluice");
    std::fs::create_dir_all(&restored)?;
    host.ensure(bind("b"), || tokio::net::UnixListener::bind(socket("b")))?;
    drop_caches();
    let started = Instant::now();
    let _restore = engine(&socket("b"), token.expose(), &restored, true).await?;
    side.restore = started.elapsed();
    verify_same(tree, &restored)?;
    Ok((side, final_flush, changed))
}

fn restic_side(root: &Path, tree: &Path, args: &BenchCaptureArgs) -> anyhow::Result<Side> {
    std::fs::create_dir_all(root)?;
    let repo = root.join("restic-repo");
    restic(&repo, &["init"], None)?;
    let mut side = Side::default();
    drop_caches();
    side.initial = restic(&repo, &["backup", "."], Some(tree))?;
    side.initial_bytes = du(&repo);
    change(tree, args)?;
    drop_caches();
    side.incremental = restic(&repo, &["backup", "."], Some(tree))?;
    side.incremental_bytes = du(&repo) - side.initial_bytes;
    let restored = root.join("restored-restic");
    drop_caches();
    side.restore = restic(&repo, &["restore", "latest", "--target", restored.to_str().context("path")?], None)?;
    verify_same(tree, &restored)?;
    Ok(side)
}

/// The restored tree holds what the source holds (files and contents).
fn verify_same(source: &Path, restored: &Path) -> anyhow::Result<()> {
    fn files(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                files(root, &path, out)?;
            } else {
                let digest = sluice_capture_store::objects::object_key(&std::fs::read(&path)?).into_bytes();
                out.push((path.strip_prefix(root).unwrap_or(&path).to_path_buf(), digest));
            }
        }
        Ok(())
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    files(source, source, &mut a)?;
    files(restored, restored, &mut b)?;
    a.sort();
    b.sort();
    anyhow::ensure!(a == b, "the restore of {} differs from the source", restored.display());
    Ok(())
}

/// A tree of `files` small files (64 bytes to 1 KiB) in folders of 500.
fn generate_small(root: &Path, files: usize) -> anyhow::Result<()> {
    let mut rng = Bytes(0x5151_2b2b_7777_0101);
    let mut data = vec![0u8; 1024];
    for i in 0..files {
        let dir = root.join(format!("d{:04}", i / 500));
        if i % 500 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let len = 64 + rng.below(961) as usize;
        rng.fill(&mut data[..len]);
        std::fs::write(dir.join(format!("f{i:06}")), &data[..len])?;
    }
    Ok(())
}

/// What the engine's own process measured on a larger tree.
#[derive(Debug)]
struct EngineRun {
    initial_ms: f64,
    final_median_ms: f64,
    peak_rss_kib: u64,
}

/// The child process: the engine alone, so its peak memory is its own.
async fn engine_child(socket: &Path, worktree: &Path) -> anyhow::Result<()> {
    let token = std::env::var("SLUICE_BENCH_TOKEN").context("SLUICE_BENCH_TOKEN")?;
    let capture = engine(socket, &token, worktree, false).await?;
    let initial = flush(&capture, FlushKind::Suspend).await?;
    flush(&capture, FlushKind::Suspend).await?;
    let mut finals = Vec::new();
    for _ in 0..5 {
        finals.push(flush(&capture, FlushKind::Final).await?);
    }
    finals.sort();
    let status = std::fs::read_to_string("/proc/self/status")?;
    let peak_rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .context("no VmHWM in /proc/self/status")?;
    let run = serde_json::json!({
        "initialMs": initial.as_secs_f64() * 1000.0,
        "finalMedianMs": finals[finals.len() / 2].as_secs_f64() * 1000.0,
        "peakRssKiB": peak_rss_kib,
    });
    println!("{run}");
    Ok(())
}

/// A tree of `files` small files captured by the engine in a child
/// process, against a registrar here.
async fn larger_tree(root: &Path, files: usize) -> anyhow::Result<EngineRun> {
    let tree = root.join("tree");
    eprintln!("generating {files} small files…");
    generate_small(&tree, files)?;
    let store = sluice_store::Store::open(
        &format!("sqlite:{}", root.join("bench.db").display()),
        sluice_store::Sealer::from_key([7; 32]),
    )
    .await?;
    let objects = sluice_capture_store::objects::Objects::open(
        &sluice_capture_store::objects::ObjectStoreUrl::Local(root.join("objects")),
        store.clone(),
    )?;
    let host = sluice_capture_store::registrar::RegistrarHost::new(store.clone(), objects, Default::default());
    let (session, token) = store.create_capture_session(&OwnerId::from("bench"), None, Default::default()).await?;
    let socket = root.join("engine.sock");
    let binding = sluice_capture_store::registrar::Binding {
        run_id: "big".into(),
        session_id: session.id,
        launch: "bench".into(),
    };
    host.ensure(binding, || tokio::net::UnixListener::bind(&socket))?;
    eprintln!("capturing {files} files…");
    let child = tokio::process::Command::new(std::env::current_exe()?)
        .arg("capture")
        .arg("--engine-worktree")
        .arg(&tree)
        .arg("--engine-socket")
        .arg(&socket)
        .env("SLUICE_BENCH_TOKEN", token.expose())
        .stderr(std::process::Stdio::inherit())
        .output()
        .await?;
    anyhow::ensure!(child.status.success(), "the engine's process failed on {files} files");
    let answer: serde_json::Value =
        serde_json::from_slice(&child.stdout).context("the engine's process answered no measurement")?;
    let number = |field: &str| answer[field].as_f64().with_context(|| format!("the engine's process gave no {field}"));
    let run = EngineRun {
        initial_ms: number("initialMs")?,
        final_median_ms: number("finalMedianMs")?,
        peak_rss_kib: number("peakRssKiB")? as u64,
    };
    store.close().await;
    Ok(run)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / f64::from(1 << 20))
}

/// Whether `value` meets `aim` (at most), as a mark.
fn meets(value: f64, aim: f64) -> &'static str {
    if value <= aim { "✓" } else { "✗" }
}

pub async fn run(args: BenchCaptureArgs) -> anyhow::Result<()> {
    if let Some(worktree) = &args.engine_worktree {
        return engine_child(args.engine_socket.as_deref().context("--engine-socket")?, worktree).await;
    }
    let root = args
        .dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("sluice-bench-capture-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root)?;
    let (tree_sluice, tree_restic) = (root.join("tree-sluice"), root.join("tree-restic"));
    eprintln!(
        "generating {} small files in {} folders and {} files of 16 MiB…",
        args.small_files, args.folders, args.large_files
    );
    generate(&tree_sluice, &args)?;
    generate(&tree_restic, &args)?;
    eprintln!("sluice…");
    let (ours, final_flush, changed) = sluice_side(&root.join("sluice"), &tree_sluice, &args).await?;
    eprintln!("restic…");
    let theirs = restic_side(&root.join("restic"), &tree_restic, &args)?;
    let final_run = match args.final_files {
        0 => None,
        n => Some(larger_tree(&root.join("final"), n).await?),
    };
    let _ = std::fs::remove_dir_all(root.join("final"));
    let memory_run = match args.memory_files {
        0 => None,
        n => Some(larger_tree(&root.join("memory"), n).await?),
    };

    println!("{:<26} {:>12} {:>12} {:>8}  aim", "step", "sluice", "restic", "ratio");
    let row = |step: &str, a: Duration, b: Duration, aim: Option<f64>| {
        let ratio = a.as_secs_f64() / b.as_secs_f64();
        let aim = aim.map(|aim| format!("≤ {aim}× {}", meets(ratio, aim))).unwrap_or_default();
        println!("{step:<26} {:>12} {:>12} {ratio:>7.2}x  {aim}", secs(a), secs(b));
    };
    let bytes_row = |step: &str, a: u64, b: u64| {
        println!("{step:<26} {:>12} {:>12} {:>7.2}x", mib(a), mib(b), a as f64 / b.max(1) as f64);
    };
    use crate::summary::{Aim, record};
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let capture_figure = |measure: &str, a: Duration, b: Duration, aim: f64| {
        record(&format!("{measure} (vs restic)"), &secs(a), &secs(b), ratio(a, b), Aim::AtMost(aim));
    };
    let tree = format!("initial capture, {} small + {} large files", args.small_files, args.large_files);
    capture_figure(&tree, ours.initial, theirs.initial, 0.6);
    capture_figure("incremental capture", ours.incremental, theirs.incremental, 0.3);
    record(
        "incremental bytes written (vs the bytes changed)",
        &mib(ours.incremental_bytes),
        &mib(changed),
        ours.incremental_bytes as f64 / changed as f64,
        Aim::AtMost(1.05),
    );
    capture_figure("restore into an empty worktree", ours.restore, theirs.restore, 0.5);
    // A FINAL's aims are times: the aim is the baseline it is held to.
    let final_figure = |files: usize, ms: f64, aim: f64| {
        record(
            &format!("FINAL with nothing changed, {files} files, median of 5 (vs its aim)"),
            &format!("{ms:.1} ms"),
            &format!("{aim} ms"),
            ms / aim,
            Aim::AtMost(1.0),
        );
    };
    final_figure(args.small_files + args.large_files, final_flush.as_secs_f64() * 1000.0, 25.0);
    if let Some(run) = &final_run {
        final_figure(args.final_files, run.final_median_ms, 150.0);
    }
    if let Some(run) = &memory_run {
        let per_file = run.peak_rss_kib as f64 * 1024.0 / args.memory_files as f64;
        record(
            &format!("capture engine's peak memory, {} files (vs 2 KiB a file)", args.memory_files),
            &format!("{per_file:.0} B a file"),
            &format!("{MEMORY_BOUND_PER_FILE} B"),
            per_file / MEMORY_BOUND_PER_FILE as f64,
            Aim::AtMost(1.0),
        );
    }
    row("initial capture", ours.initial, theirs.initial, Some(0.6));
    bytes_row("  bytes written", ours.initial_bytes, theirs.initial_bytes);
    row("incremental capture", ours.incremental, theirs.incremental, Some(0.3));
    bytes_row("  bytes written", ours.incremental_bytes, theirs.incremental_bytes);
    let over_changed = ours.incremental_bytes as f64 / changed as f64;
    println!(
        "{:<26} {:>12} {:>12} {over_changed:>7.2}x  ≤ 1.05× the bytes changed {}",
        "  bytes changed",
        mib(changed),
        "",
        meets(over_changed, 1.05)
    );
    row("restore (empty dir)", ours.restore, theirs.restore, Some(0.5));
    let ms = |d: f64| format!("{d:.1} ms");
    let final_ms = final_flush.as_secs_f64() * 1000.0;
    let files = args.small_files + args.large_files;
    println!(
        "{:<26} {:>12} {:>12} {:>8}  ≤ 25 ms {}",
        format!("FINAL, {files} files"),
        ms(final_ms),
        "",
        "",
        meets(final_ms, 25.0)
    );
    if let Some(run) = &final_run {
        println!(
            "{:<26} {:>12} {:>12} {:>8}  ≤ 150 ms {}",
            format!("FINAL, {} files", args.final_files),
            ms(run.final_median_ms),
            "",
            "",
            meets(run.final_median_ms, 150.0)
        );
        println!("{:<26} {:>12}", format!("  initial, {} files", args.final_files), ms(run.initial_ms));
    }
    if let Some(run) = &memory_run {
        let per_file = run.peak_rss_kib as f64 * 1024.0 / args.memory_files as f64;
        println!(
            "{:<26} {:>12} {:>12} {:>8}  {per_file:.0} bytes a file; ≤ {MEMORY_BOUND_PER_FILE} {}",
            format!("engine peak, {} files", args.memory_files),
            format!("{:.0} MiB", run.peak_rss_kib as f64 / 1024.0),
            "",
            "",
            meets(per_file, MEMORY_BOUND_PER_FILE as f64)
        );
        println!(
            "{:<26} {:>12}",
            format!("  initial, {} files", args.memory_files),
            secs(Duration::from_secs_f64(run.initial_ms / 1000.0))
        );
    }
    println!("(FINALs: nothing changed, the median of 5)");
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

/// The engine's stated memory bound, in bytes of peak memory for each file
/// of the tree it captures.
const MEMORY_BOUND_PER_FILE: u64 = 2048;
