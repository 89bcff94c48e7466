//! `sluice-bench reads`: whether reads and sweeps stay flat as the store
//! grows. A generator fills a store (the database writes the rows itself:
//! copies of one real workspace, its run and its events) up to each size
//! in turn; at each size the same reads are timed on workspaces picked
//! across the whole store (get, list 50 of an owner's, a workspace's
//! events, the feed's newest page) and the sweeps are timed with nothing
//! due (expiry, purge of ended workspaces, retention). Every figure is
//! printed against the same figure at the first size, measured in the
//! same run.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde_json::json;
use sluice_domain::ids::OwnerId;
use sluice_store::{Sealer, Store, testing};

use crate::summary::{Aim, millis, percentile, record};

#[derive(Args, Debug)]
pub struct BenchReadsArgs {
    /// The PostgreSQL server to fill (a fresh database is made on it);
    /// without it, SQLite in a temporary directory.
    #[arg(long, env = "SLUICE_BENCH_DATABASE_URL")]
    pub postgres_url: Option<String>,
    /// Measure SQLite even when a PostgreSQL server is given.
    #[arg(long)]
    pub sqlite: bool,
    /// PostgreSQL's sizes, in workspaces, measured in turn (the first is
    /// every figure's baseline).
    #[arg(long, value_delimiter = ',', default_value = "20000,1000000")]
    pub sizes: Vec<u64>,
    /// SQLite's sizes: the embedded store is for one host's workspaces.
    #[arg(long, value_delimiter = ',', default_value = "20000,100000")]
    pub sqlite_sizes: Vec<u64>,
    /// Events each generated workspace has.
    #[arg(long, default_value_t = 100)]
    pub events_per_workspace: u64,
    /// Owners the generated workspaces are spread over (few enough that
    /// each has more than a list's 50 at the first size).
    #[arg(long, default_value_t = 200)]
    pub owners: u64,
    /// Samples of each read at each size.
    #[arg(long, default_value_t = 300)]
    pub samples: usize,
    /// Where SQLite's file goes (default: a temporary directory).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
}

/// A read's or sweep's p50 and p99 at one size.
#[derive(Debug, Clone, Copy)]
struct Timing {
    p50: Duration,
    p99: Duration,
}

fn timing(samples: &[Duration]) -> Timing {
    Timing { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99) }
}

/// A small deterministic generator for which workspace each sample reads.
struct Picks(u64);

impl Picks {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Workspaces the generator writes in one transaction.
const FILL_CHUNK: u64 = 10_000;

async fn fill(
    store: &Store,
    template: &sluice_domain::ids::WorkspaceId,
    from: u64,
    to: u64,
    args: &BenchReadsArgs,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut at = from;
    while at < to {
        let end = (at + FILL_CHUNK).min(to);
        store.bench_fill(template, at, end, args.owners, args.events_per_workspace).await?;
        at = end;
        if (at - from).is_multiple_of(FILL_CHUNK * 10) || at == to {
            eprintln!(
                "  {at} workspaces, {} events ({:.0} s)",
                at * args.events_per_workspace,
                started.elapsed().as_secs_f64()
            );
        }
    }
    store.bench_analyze().await?;
    Ok(())
}

/// Times every read and sweep at the store's current size.
async fn measure(store: &Store, size: u64, args: &BenchReadsArgs) -> anyhow::Result<Vec<(&'static str, Timing)>> {
    let mut picks = Picks(0x2545_f491_4f6c_dd1d ^ size);
    let mut out = Vec::new();
    let mut samples = Vec::with_capacity(args.samples);
    // Warm the pool's connections and statements first.
    for _ in 0..20 {
        let n = picks.below(size);
        store
            .get_workspace(
                &sluice_store::bench::bench_owner(n, args.owners),
                &sluice_store::bench::bench_workspace_id(n),
            )
            .await?;
    }
    for _ in 0..args.samples {
        let n = picks.below(size);
        let (owner, id) =
            (sluice_store::bench::bench_owner(n, args.owners), sluice_store::bench::bench_workspace_id(n));
        let started = Instant::now();
        let view = store.get_workspace(&owner, &id).await?;
        samples.push(started.elapsed());
        anyhow::ensure!(
            view.is_some_and(|v| v.current_run.is_some()),
            "generated workspace {id} read back without its run"
        );
    }
    out.push(("get a workspace", timing(&samples)));
    samples.clear();
    for _ in 0..args.samples {
        let owner = OwnerId::from(format!("bench-owner-{}", picks.below(args.owners)));
        let filter = sluice_store::WorkspaceFilter { status: None, idempotency_key: None, limit: 50 };
        let started = Instant::now();
        let listed = store.list_workspaces(&owner, &filter).await?;
        samples.push(started.elapsed());
        anyhow::ensure!(
            listed.len() == 50.min((size / args.owners) as usize),
            "an owner's list read {} workspaces",
            listed.len()
        );
    }
    out.push(("list 50 of an owner's workspaces", timing(&samples)));
    samples.clear();
    for _ in 0..args.samples {
        let n = picks.below(size);
        let (owner, id) =
            (sluice_store::bench::bench_owner(n, args.owners), sluice_store::bench::bench_workspace_id(n));
        let after = picks.below(args.events_per_workspace.saturating_sub(50).max(1)) as i64;
        let started = Instant::now();
        let events =
            store.events_after(&owner, &id, after, 50).await?.context("a generated workspace is its owner's")?;
        samples.push(started.elapsed());
        anyhow::ensure!(!events.is_empty(), "workspace {id} has no events after {after}");
    }
    out.push(("50 of a workspace's events", timing(&samples)));
    samples.clear();
    let end = store.feed_end().await?;
    for _ in 0..args.samples {
        let back = picks.below(10_000) as i64;
        let cursor = sluice_store::event_feed::FeedCursor { tx: end.tx, position: (end.position - back).max(0) };
        let started = Instant::now();
        let page = store.feed_after(cursor, 100).await?;
        samples.push(started.elapsed());
        anyhow::ensure!(back < 1 || !page.is_empty(), "the feed read nothing after {cursor}");
    }
    out.push(("the feed, 100 from near its end", timing(&samples)));
    samples.clear();
    // The sweeps, with nothing due: their cost is what they pay to find that out.
    let now = sluice_store::clock::now_ms();
    use sluice_store::records::Record;
    let sweeps: [(&'static str, Option<Record>); 5] = [
        ("sweep: expired workspaces", None),
        ("sweep: purge ended workspaces", None),
        ("sweep: retention, events", Some(Record::Events)),
        ("sweep: retention, exec results", Some(Record::ExecResults)),
        ("sweep: retention, drain reports", Some(Record::DrainReports)),
    ];
    for (i, (name, record)) in sweeps.into_iter().enumerate() {
        for _ in 0..20 {
            let started = Instant::now();
            let did = match (i, record) {
                (_, Some(record)) => store.purge_records(record, 0, 1000).await?,
                (0, None) => store.stop_expired(now, 100).await?.len() as u64,
                _ => store.purge_ended_workspaces(now - 30 * 86_400_000, 100).await?,
            };
            samples.push(started.elapsed());
            anyhow::ensure!(did == 0, "{name} found {did} due in a store where nothing is");
        }
        out.push((name, timing(&samples)));
        samples.clear();
    }
    Ok(out)
}

async fn bench_backend(label: &str, store: Store, sizes: &[u64], args: &BenchReadsArgs) -> anyhow::Result<()> {
    println!("{label}: durability {}", store.durability().await?);
    // The template every generated row copies: a real create's rows.
    let mut new =
        sluice_store::NewWorkspace::of(&OwnerId::from("bench-template"), "template", "host", "bench/image", "1");
    new.spec = sluice_store::spec::Spec::parse(json!({"resources": {"cpus": 1}}))?;
    let template = match store.create_workspace(new).await? {
        sluice_store::CreateOutcome::Created(view) | sluice_store::CreateOutcome::Replayed(view) => view.workspace.id,
    };
    let mut sizes = sizes.to_vec();
    sizes.sort();
    sizes.dedup();
    let mut filled = 0;
    let mut first: Option<(u64, Vec<(&'static str, Timing)>)> = None;
    println!(
        "{:<8} {:<36} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "backend", "read", "size", "p50", "p99", "first p50", "ratio"
    );
    for size in sizes {
        eprintln!("{label}: filling to {size} workspaces and {} events…", size * args.events_per_workspace);
        fill(&store, &template, filled, size, args).await?;
        filled = size;
        let timings = measure(&store, size, args).await?;
        let events = size * args.events_per_workspace;
        for (i, (name, t)) in timings.iter().enumerate() {
            let (base_size, base) = match &first {
                Some((base_size, base)) => (*base_size, base[i].1),
                None => (size, *t),
            };
            let ratio = t.p50.as_secs_f64() / base.p50.as_secs_f64();
            println!(
                "{label:<8} {name:<36} {:>12} {:>10.3}ms {:>10.3}ms {:>10.3}ms {ratio:>7.2}x",
                format!("{size}/{events}"),
                millis(t.p50),
                millis(t.p99),
                millis(base.p50)
            );
            if first.is_some() {
                record(
                    &format!("{name}, p50, {label}, {size} workspaces and {events} events (vs {base_size})"),
                    &format!("{:.3} ms", millis(t.p50)),
                    &format!("{:.3} ms", millis(base.p50)),
                    ratio,
                    Aim::AtMost(1.5),
                );
            }
        }
        if first.is_none() {
            first = Some((size, timings));
        }
    }
    Ok(())
}

pub async fn run(args: BenchReadsArgs) -> anyhow::Result<()> {
    for (flag, sizes) in [("--sizes", &args.sizes), ("--sqlite-sizes", &args.sqlite_sizes)] {
        anyhow::ensure!(
            !sizes.is_empty() && sizes.iter().all(|s| *s >= args.owners * 50),
            "{flag}: each at least 50 workspaces for each of --owners"
        );
    }
    if args.postgres_url.is_none() || args.sqlite {
        let dir = match &args.dir {
            Some(dir) => dir.clone(),
            None => std::env::temp_dir().join(format!("sluice-bench-reads-{}", std::process::id())),
        };
        std::fs::create_dir_all(&dir)?;
        let url = format!("sqlite:{}", dir.join("reads.db").display());
        let store = Store::open(&url, Sealer::from_key([7; 32])).await?;
        let measured = bench_backend("SQLite", store.clone(), &args.sqlite_sizes, &args).await;
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
        measured?;
    }
    if let Some(admin) = &args.postgres_url {
        let url = testing::create_postgres_database(admin, "sluice_bench_reads")
            .await
            .context("create the bench database")?;
        let store = Store::open(&url, Sealer::from_key([7; 32])).await?;
        let measured = bench_backend("PostgreSQL", store.clone(), &args.sizes, &args).await;
        store.close().await;
        testing::drop_postgres_database(admin, &url).await.context("drop the bench database")?;
        measured?;
    }
    Ok(())
}
