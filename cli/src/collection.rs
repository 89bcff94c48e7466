//! `sluice gc`: collect the object store now, against the database and the
//! store directly (what the worker's scheduled collection does).

use anyhow::Context;
use clap::Args;
use indicatif::HumanBytes;

use sluice_server::config::StoreArgs;

#[derive(Args, Debug, Clone)]
pub struct GcArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Where captures are stored (as the worker's --object-store).
    #[arg(long, env = "SLUICE_OBJECT_STORE")]
    pub object_store: Option<String>,
    /// Print what would be forgotten and deleted, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Objects written within this many seconds are kept.
    #[arg(long, env = "SLUICE_COLLECT_GRACE_SECONDS", default_value_t = 3600)]
    pub grace_seconds: u64,
    /// How long the deletion fence holds registrations off between
    /// renewals (a collection killed holds them that long).
    #[arg(long, default_value_t = 180, hide = true, value_parser = clap::value_parser!(u64).range(2..))]
    pub fence_seconds: u64,
}

pub async fn run(args: GcArgs) -> anyhow::Result<()> {
    use sluice_capture_store::objects::{ObjectStoreUrl, Objects};
    let store = args.store.open_existing().await?;
    let url = match &args.object_store {
        Some(text) => ObjectStoreUrl::parse(text).map_err(|e| anyhow::anyhow!("--object-store: {e}"))?,
        None => ObjectStoreUrl::Local(std::path::absolute(args.store.data_dir.join("objects"))?),
    };
    let objects = Objects::open(&url, store.clone()).context("cannot open the object store")?;
    let options = sluice_capture_store::collection::CollectOptions {
        grace: std::time::Duration::from_secs(args.grace_seconds),
        dry_run: args.dry_run,
        hold: std::time::Duration::from_secs(args.fence_seconds),
    };
    let done = sluice_capture_store::collection::collect(&store, &objects, &options).await;
    store.close().await;
    let done = done?;
    println!("object store: {}", url.describe());
    println!(
        "objects: {} listed ({}), {} live, {} written within the grace",
        done.objects_listed,
        HumanBytes(done.bytes_listed),
        done.objects_live,
        done.objects_young
    );
    println!("packs: {} listed ({})", done.packs_listed, HumanBytes(done.pack_bytes_listed));
    let verb = if args.dry_run { "would be deleted" } else { "deleted" };
    println!(
        "{} objects and {} packs {verb}, {} packs rewritten: {} ({} bytes)",
        done.objects_deleted,
        done.packs_deleted,
        done.packs_rewritten,
        HumanBytes(done.bytes_deleted),
        done.bytes_deleted
    );
    let verb = if args.dry_run { "would be forgotten" } else { "forgotten" };
    println!("captures {verb} by retention: {}", done.captures_forgotten);
    for (session, need) in &done.sessions {
        println!("session {session}: its kept captures hold {} ({need} bytes)", HumanBytes(*need));
    }
    Ok(())
}
