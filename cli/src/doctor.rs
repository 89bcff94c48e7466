//! `sluice doctor`: what works here, and how executors would be isolated.

use sluice_server::config::{StoreArgs, WorkerArgs};

/// `sluice doctor`: what works here, and how executors would be isolated.
pub async fn run(store_args: &StoreArgs, args: &WorkerArgs) -> anyhow::Result<()> {
    let store = store_args.open().await?;
    store.ping().await?;
    let (jobs, due) = store.job_counts().await?;
    println!("database   ok ({:?}); {jobs} jobs, {due} due", store.backend());
    match args.runtime(&store_args.data_dir).await {
        Ok((runtime, _)) => {
            // One line per part: the sandbox, who runs as whom, limits, disks.
            let posture = runtime.posture();
            let mut parts = posture.split("; ");
            println!("runtime    {}", parts.next().unwrap_or_default());
            for part in parts {
                println!("           {part}");
            }
            for (key, why) in runtime.unenforceable() {
                println!("refused    spec.{key}: {why}");
            }
            match args.template_builder(&store_args.data_dir, runtime.image_cache()).await {
                Ok(builder) => println!(
                    "templates  built with {} into this host's image cache",
                    match &builder.builder {
                        sluice_images::Builder::DockerEngine => "the host's Docker Engine".to_owned(),
                        sluice_images::Builder::Buildah { binary, .. } => format!("buildah ({})", binary.display()),
                    }
                ),
                Err(why) => println!("templates  cannot be built here: {why}"),
            }
            doctor_warm_pool(&store, args).await?;
        }
        Err(e) => {
            println!("runtime    NOT usable: {e:#}");
            store.close().await;
            anyhow::bail!("the runtime is not usable");
        }
    }
    store.close().await;
    Ok(())
}

/// The warm pool: what this configuration asks for, and each worker's
/// pool as it last reported it.
async fn doctor_warm_pool(store: &sluice_store::Store, args: &WorkerArgs) -> anyhow::Result<()> {
    for spec in &args.warm_pool {
        println!("warm pool  {} executors of {} asked", spec.size, spec.image);
    }
    for worker in store.workers().await? {
        for level in &worker.member.warm_pool {
            println!(
                "warm pool  {} on {} (worker {}): {} idle, {} starting, keeps {}",
                level.image, worker.member.host, worker.member.id, level.idle, level.starting, level.target
            );
        }
    }
    Ok(())
}
