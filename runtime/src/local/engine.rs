//! Images from the host's Docker Engine: an image no registry id maps to,
//! not in the cache, is exported through the engine's API (as `docker
//! save` writes it) and imported, every blob verified as any import's.

use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use super::*;

impl LocalRuntime {
    /// Brings `name` (`repository:tag` in the engine) into the cache from
    /// the host's Docker Engine; `false` when there is no engine here or
    /// it has no such image.
    pub(super) async fn take_from_docker_engine(
        &self,
        cache: &sluice_images::ImageCache,
        name: &sluice_images::ImageName,
    ) -> Result<bool, RuntimeError> {
        let reachable = Path::new("/var/run/docker.sock").exists() || std::env::var_os("DOCKER_HOST").is_some();
        let Some(docker) = reachable.then(bollard::Docker::connect_with_socket_defaults).and_then(Result::ok) else {
            return Ok(false);
        };
        let in_engine = name.short();
        let _flight = cache.store().flight(&format!("engine:{name}")).await;
        if cache.store().lookup(&name.to_string()).is_some() {
            return Ok(true);
        }
        if docker.inspect_image(&in_engine).await.is_err() {
            return Ok(false);
        }
        let archive = cache.store().temp_path("engine");
        let exported = async {
            let mut file = tokio::fs::File::create(&archive).await?;
            let mut stream = docker.export_image(&in_engine);
            while let Some(chunk) = stream.next().await {
                file.write_all(&chunk.map_err(std::io::Error::other)?).await?;
            }
            file.flush().await
        };
        if let Err(e) = exported.await {
            let _ = std::fs::remove_file(&archive);
            return Err(transient("exporting the image from the Docker Engine", e));
        }
        let imported = cache.store().import(&archive, &name.registry_id, Some(&in_engine)).await;
        let _ = std::fs::remove_file(&archive);
        imported?;
        tracing::info!(image = %name, "image taken from the host's Docker Engine");
        Ok(true)
    }
}
