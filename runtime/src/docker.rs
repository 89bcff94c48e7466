//! The `docker` runtime: one container per executor, through the Docker
//! Engine API. The image is the workspace's; the daemon binary (built
//! statically) is bind-mounted read-only and is the container's entrypoint;
//! the engine's own init runs as PID 1 (reaping orphans) with the daemon as
//! its one child. Containers are named after their run, so a second create
//! for the same run is refused by the engine and the first is adopted.
//! Hardened by default: every capability dropped, no new privileges, a pids
//! limit, and no network unless the spec asks for it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as DockerError;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptions, DownloadFromContainerOptionsBuilder, InspectContainerOptions, ListContainersOptions,
    RemoveContainerOptions, StartContainerOptions, StopContainerOptions,
};
use sluice_store::{PublishedImage, RuntimeAdapter, RuntimeRecord, RuntimeStatus};

use super::identity::{Allocator, HOST_REGISTRY, UidRange};
use super::{
    Adapter, LaunchRequest, Launched, OwnedResource, Presence, RuntimeError, control_socket, is_root,
    refuse_unenforceable, run_dir,
};

const LABEL_RUN: &str = "sluice.run";
const LABEL_WORKSPACE: &str = "sluice.workspace";
const LABEL_LAUNCH: &str = "sluice.launch";
/// Which sluice install made the container (its executors directory), so
/// installs sharing an engine never sweep each other's containers.
const LABEL_INSTALL: &str = "sluice.install";
const STOP_GRACE_SECONDS: i32 = 5;
const DEFAULT_PIDS_LIMIT: i64 = 1024;
/// What the daemon (root in the container, with no other capability) keeps:
/// starting and signalling the workload under its own uid, and reading and
/// restoring the files the workload owns.
/// Why container disks are not limited.
const NO_DISK_QUOTA: &str = "sluice does not set the engine's storage quota (most storage drivers have none)";
const DAEMON_CAPS: [&str; 7] = ["SETUID", "SETGID", "KILL", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "CHOWN"];

pub struct DockerRuntime {
    docker: Docker,
    executors_dir: PathBuf,
    /// A statically linked sluiced, mounted into every container.
    daemon_binary: PathBuf,
    /// registryId → registry host prefixed to the repository.
    registries: HashMap<String, String>,
    /// Each container's workload uid, its own.
    identities: Allocator,
    /// How long a container may live (`runtime.deadline`); `None`: no limit.
    max_lifetime: Option<Duration>,
}

fn status_of(e: &DockerError) -> Option<u16> {
    match e {
        DockerError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

fn transient(what: &str, e: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::Transient(format!("{what}: {e}"))
}

fn container_name(run_id: &str) -> String {
    format!("sluice-{run_id}")
}

impl DockerRuntime {
    /// Connects to the engine at `socket` (or the local default) and checks
    /// that it answers.
    pub async fn connect(
        socket: Option<&str>,
        executors_dir: PathBuf,
        daemon_binary: PathBuf,
        registries: HashMap<String, String>,
        uids: UidRange,
    ) -> Result<Self, RuntimeError> {
        let docker = match socket {
            Some(path) => Docker::connect_with_unix(path, 120, bollard::API_DEFAULT_VERSION),
            None => Docker::connect_with_local_defaults(),
        }
        .map_err(|e| transient("docker engine", e))?;
        docker.ping().await.map_err(|e| transient("docker engine ping", e))?;
        std::fs::create_dir_all(&executors_dir).map_err(|e| transient("executors directory", e))?;
        // The host's registry where this process may write it (as root); a
        // user of the engine's group keeps one with its executors.
        let registry = if is_root() { Path::new(HOST_REGISTRY).to_path_buf() } else { executors_dir.join("uid-slots") };
        let identities = Allocator::new(uids, &registry).map_err(|e| transient("executor slots", e))?;
        Ok(DockerRuntime { docker, executors_dir, daemon_binary, registries, identities, max_lifetime: None })
    }

    /// Gives every container a lifetime: it ends this long after it starts
    /// (`runtime.deadline`).
    pub fn with_max_lifetime(mut self, max_lifetime: Option<Duration>) -> Self {
        self.max_lifetime = max_lifetime;
        self
    }

    fn posture_line(&self) -> String {
        format!(
            "docker: the daemon keeps only {}; the workload runs under a uid of its own per executor (from {}) with \
             none; no-new-privileges, pids limit, network off unless spec.network",
            DAEMON_CAPS.join(", ").to_lowercase(),
            self.identities.range().start
        )
    }

    fn install_label(&self) -> String {
        self.executors_dir.display().to_string()
    }

    fn image(&self, request: &LaunchRequest) -> String {
        match self.registries.get(&request.registry_id) {
            Some(host) => format!("{host}/{}:{}", request.repository, request.tag),
            None => format!("{}:{}", request.repository, request.tag),
        }
    }

    fn record(&self, run_id: &str, container_id: &str) -> RuntimeRecord {
        RuntimeRecord {
            adapter: RuntimeAdapter::Docker,
            resource_id: container_id.to_owned(),
            reference: container_name(run_id),
            status: RuntimeStatus::Running,
            endpoint: Some(format!("unix://{}", control_socket(&self.executors_dir, run_id).display())),
            deadline: super::deadline(&run_dir(&self.executors_dir, run_id)),
        }
    }

    async fn published(&self, image: &str, repository: &str) -> Result<PublishedImage, RuntimeError> {
        let inspected = self.docker.inspect_image(image).await.map_err(|e| match status_of(&e) {
            Some(404) => RuntimeError::Permanent {
                message: format!("image {image} is not on this Docker host"),
                code: "image-not-found",
            },
            _ => transient("inspecting the image", e),
        })?;
        let digest = inspected
            .repo_digests
            .unwrap_or_default()
            .iter()
            .find_map(|d| d.split_once('@').map(|(_, digest)| digest.to_owned()))
            .or(inspected.id)
            .ok_or_else(|| transient("inspecting the image", "the engine reported no image id"))?;
        Ok(PublishedImage { reference: image.to_owned(), digest_reference: format!("{repository}@{digest}"), digest })
    }
}

impl Adapter for DockerRuntime {
    fn adapter(&self) -> RuntimeAdapter {
        RuntimeAdapter::Docker
    }

    fn registrar_socket(&self, run_id: &str) -> PathBuf {
        crate::sockets::registrar_socket(&run_dir(&self.executors_dir, run_id))
    }

    fn posture(&self) -> String {
        self.posture_line()
    }

    fn recoverable(&self) -> bool {
        true
    }

    fn unenforceable(&self) -> Vec<(&'static str, String)> {
        vec![("resources.diskMiB", NO_DISK_QUOTA.to_owned())]
    }

    async fn launch(&self, request: &LaunchRequest) -> Result<Launched, RuntimeError> {
        let mut phases = Vec::new();
        let mut clock = std::time::Instant::now();
        let mut lap = |name: &'static str| {
            phases.push((name, clock.elapsed()));
            clock = std::time::Instant::now();
        };
        let image = self.image(request);
        let published = self.published(&image, &request.repository).await?;
        lap("image");
        refuse_unenforceable(request, &self.unenforceable())?;
        let dir = run_dir(&self.executors_dir, &request.run_id);
        let run_mount = dir.join("run");
        {
            use std::os::unix::fs::DirBuilderExt;
            // Root's alone: inside it is the daemon's (root in the container).
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&run_mount)
                .map_err(|e| transient("run directory", e))?;
        }
        let ids = self.identities.assign(&dir)?;
        if let Some(secret) = &request.boot_secret {
            super::write_secret_file(&run_mount.join("boot-secret.json"), secret.expose())
                .map_err(|e| transient("boot secret", e))?;
        }
        if let Some(pem) = &request.egress_authority {
            super::write_public_file(&run_mount.join(sluice_protocol::egress::AUTHORITY_NAME), pem)
                .map_err(|e| transient("egress authority", e))?;
        }

        let name = container_name(&request.run_id);
        let resources = &request.spec.resources;
        let nano_cpus = resources.cpus.map(|c| (c * 1e9) as i64);
        let memory = resources.memory_mib.map(|m| (m as i64).saturating_mul(1 << 20));
        let pids_limit = resources.pids.map_or(DEFAULT_PIDS_LIMIT, |p| p as i64);
        let egress = request.spec.egress.is_some();
        let mut proxy_env = if egress { sluice_protocol::egress::proxy_env() } else { Vec::new() };
        if request.egress_authority.is_some() {
            proxy_env.extend(sluice_protocol::egress::trust_env());
        }
        // The spec's own variables last: they win over the proxy's.
        let mut env: Vec<String> = proxy_env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        env.extend(request.spec.env.iter().map(|(k, v)| format!("{k}={v}")));
        env.push(format!("SLUICED_COMMAND={}", serde_json::to_string(&request.spec.command).unwrap_or_default()));
        env.push("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into());
        let labels = HashMap::from([
            (LABEL_RUN.to_owned(), request.run_id.clone()),
            (LABEL_WORKSPACE.to_owned(), request.workspace_id.clone()),
            (LABEL_LAUNCH.to_owned(), request.launch.clone()),
            (LABEL_INSTALL.to_owned(), self.install_label()),
        ]);
        let mut cmd: Vec<String> = [
            "--listen",
            "unix:/run/sluice/control.sock",
            "--boot-secret-file",
            "/run/sluice/boot-secret.json",
            "--state-dir",
            "/var/lib/sluice",
            "--workdir",
            "/workspace",
            &format!("--workload-uid={}", ids.workload),
            &format!("--workload-gid={}", ids.workload),
            "--registrar=unix:/run/sluice/registrar.sock",
            &format!("--capture-interval-ms={}", request.capture_interval_ms),
            // `=` joins the value, so no launch id can be read as an option.
            &format!("--launch={}", request.launch),
        ]
        .map(str::to_owned)
        .to_vec();
        if egress {
            cmd.push(format!("--egress-proxy=unix:{}", sluice_protocol::egress::SOCKET_IN_EXECUTOR));
        }
        if request.egress_authority.is_some() {
            cmd.push(format!("--egress-authority=/run/sluice/{}", sluice_protocol::egress::AUTHORITY_NAME));
        }
        let body = ContainerCreateBody {
            image: Some(image.clone()),
            entrypoint: Some(vec!["/run/sluiced".into()]),
            cmd: Some(cmd),
            working_dir: Some("/workspace".into()),
            env: Some(env),
            labels: Some(labels),
            hostname: Some("sluice".into()),
            host_config: Some(HostConfig {
                binds: Some(vec![
                    format!("{}:/run/sluiced:ro", self.daemon_binary.display()),
                    format!("{}:/run/sluice", run_mount.display()),
                ]),
                network_mode: Some(if request.spec.network { "bridge" } else { "none" }.into()),
                cap_drop: Some(vec!["ALL".into()]),
                cap_add: Some(DAEMON_CAPS.iter().map(|c| (*c).to_owned()).collect()),
                security_opt: Some(vec!["no-new-privileges".into()]),
                // The engine's minimal init as PID 1 reaps the zombies a
                // workspace's processes leave, and passes SIGTERM on to the daemon.
                init: Some(true),
                pids_limit: Some(pids_limit),
                nano_cpus,
                memory,
                ..Default::default()
            }),
            ..Default::default()
        };
        let options = CreateContainerOptions { name: Some(name.clone()), ..Default::default() };
        lap("prepare_container");
        let id = match self.docker.create_container(Some(options), body).await {
            Ok(created) => created.id,
            // The run's container exists already (an earlier launcher made
            // it): adopt it rather than make a second.
            Err(e) if status_of(&e) == Some(409) => self
                .docker
                .inspect_container(&name, None::<InspectContainerOptions>)
                .await
                .map_err(|e| transient("inspecting the existing container", e))?
                .id
                .ok_or_else(|| transient("inspecting the existing container", "no id"))?,
            Err(e) if status_of(&e) == Some(404) => {
                return Err(RuntimeError::Permanent {
                    message: format!("image {image} is not on this Docker host"),
                    code: "image-not-found",
                });
            }
            Err(e) => return Err(transient("creating the container", e)),
        };
        lap("create_container");
        match self.docker.start_container(&id, None::<StartContainerOptions>).await {
            // Started now (not adopted running): its lifetime starts.
            Ok(()) => super::start_lifetime(&dir, self.max_lifetime).map_err(|e| transient("executor lifetime", e))?,
            Err(e) if status_of(&e) == Some(304) => {}
            Err(e) => return Err(transient("starting the container", e)),
        }
        lap("start_container");
        Ok(Launched {
            record: self.record(&request.run_id, &id),
            published: Some(published),
            phases,
            pool: None,
            image_pull: None,
        })
    }

    async fn inspect(&self, run_id: &str, container_id: &str) -> Result<Presence, RuntimeError> {
        match self.docker.inspect_container(container_id, None::<InspectContainerOptions>).await {
            Ok(info) => {
                let mut running = info.state.and_then(|s| s.running).unwrap_or(false);
                if running && super::past_deadline(&run_dir(&self.executors_dir, run_id)) {
                    // Its lifetime is over: it ends, whatever anyone asks.
                    tracing::warn!(run = %run_id, "the container reached its deadline and is ended");
                    let stop = StopContainerOptions { t: Some(STOP_GRACE_SECONDS), signal: None };
                    match self.docker.stop_container(container_id, Some(stop)).await {
                        Ok(()) => running = false,
                        Err(e) if matches!(status_of(&e), Some(304 | 404)) => running = false,
                        Err(e) => return Err(transient("ending the container at its deadline", e)),
                    }
                }
                Ok(if running { Presence::Running } else { Presence::Exited })
            }
            Err(e) if status_of(&e) == Some(404) => Ok(Presence::Absent),
            Err(e) => Err(transient("inspecting the container", e)),
        }
    }

    /// Stops and removes the container (SIGTERM, SIGKILL after a grace) and
    /// its host run directory. Removing an absent container succeeds.
    async fn remove(&self, run_id: &str, container_id: &str) -> Result<(), RuntimeError> {
        let target = if container_id.is_empty() { container_name(run_id) } else { container_id.to_owned() };
        let stop = StopContainerOptions { t: Some(STOP_GRACE_SECONDS), signal: None };
        match self.docker.stop_container(&target, Some(stop)).await {
            Ok(()) => {}
            Err(e) if matches!(status_of(&e), Some(304 | 404)) => {}
            Err(e) => return Err(transient("stopping the container", e)),
        }
        let remove = RemoveContainerOptions { force: true, v: true, ..Default::default() };
        match self.docker.remove_container(&target, Some(remove)).await {
            Ok(()) => {}
            Err(e) if status_of(&e) == Some(404) => {}
            // Removal already in progress: look again next pass.
            Err(e) if status_of(&e) == Some(409) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                return Err(transient("removing the container", e));
            }
            Err(e) => return Err(transient("removing the container", e)),
        }
        let dir = run_dir(&self.executors_dir, run_id);
        let slot = self.identities.recorded(&dir);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(transient("removing the run directory", e)),
        }
        if let Some(ids) = slot {
            self.identities.release(ids.slot);
        }
        Ok(())
    }

    async fn export_disk(
        &self,
        _run_id: &str,
        container_id: &str,
    ) -> Result<super::archive::DiskArchive, RuntimeError> {
        use futures::StreamExt;
        match self.docker.inspect_container(container_id, None::<InspectContainerOptions>).await {
            Ok(_) => {}
            Err(e) if status_of(&e) == Some(404) => {
                return Err(RuntimeError::Permanent {
                    message: format!("container {container_id} is not on this engine"),
                    code: "no-disk",
                });
            }
            Err(e) => return Err(transient("inspecting the container", e)),
        }
        // The engine archives a container's path whether it runs or not;
        // its members sit under `workspace/`, as a local disk's do.
        let (sender, receiver) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(4);
        let (docker, container) = (self.docker.clone(), container_id.to_owned());
        tokio::spawn(async move {
            let options = DownloadFromContainerOptionsBuilder::new().path("/workspace").build();
            let mut archive = std::pin::pin!(docker.download_from_container(&container, Some(options)));
            while let Some(chunk) = archive.next().await {
                let chunk = chunk.map_err(std::io::Error::other);
                let failed = chunk.is_err();
                if sender.send(chunk).await.is_err() || failed {
                    return;
                }
            }
        });
        Ok(Box::pin(futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|chunk| (chunk, receiver))
        })))
    }

    async fn list_owned(&self) -> Result<Vec<OwnedResource>, RuntimeError> {
        let install = format!("{LABEL_INSTALL}={}", self.install_label());
        let filters = HashMap::from([("label".to_owned(), vec![LABEL_RUN.to_owned(), install])]);
        let options = ListContainersOptions { all: true, filters: Some(filters), ..Default::default() };
        let containers =
            self.docker.list_containers(Some(options)).await.map_err(|e| transient("listing containers", e))?;
        Ok(containers
            .into_iter()
            .filter_map(|c| {
                let run_id = c.labels.as_ref()?.get(LABEL_RUN)?.clone();
                Some(OwnedResource { run_id, resource_id: c.id? })
            })
            .collect())
    }
}
