//! Command-line and environment configuration (`SLUICE_*`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use sluice_api::TokenSet;
use sluice_store::seal::{new_token, write_private_file};
use sluice_store::{Sealer, Store};

#[derive(Args, Debug, Clone)]
pub struct StoreArgs {
    /// Where sluice keeps its files: the SQLite database, keys and tokens.
    #[arg(long, env = "SLUICE_DATA_DIR", default_value = "sluice-data")]
    pub data_dir: PathBuf,
    /// PostgreSQL instead of the embedded SQLite: postgres://user@host:port/db
    #[arg(long, env = "SLUICE_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// The 32-byte key (64 hex characters) that seals secrets at rest;
    /// generated into DATA_DIR/seal-key when not given.
    #[arg(long, env = "SLUICE_SEAL_KEY_FILE")]
    pub seal_key_file: Option<PathBuf>,
}

impl StoreArgs {
    /// Creates the data directory, private to its owner, when it does not exist.
    pub fn ensure_data_dir(&self) -> anyhow::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        if self.data_dir.is_dir() {
            return Ok(());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.data_dir)
            .with_context(|| format!("cannot create {}", self.data_dir.display()))
    }

    /// Opens the store of a server that exists already: its seal key must
    /// be there (a new one would hash tokens no server accepts), and no
    /// data directory is made.
    pub async fn open_existing(&self) -> anyhow::Result<Store> {
        let key_path = self.seal_key_file.clone().unwrap_or_else(|| self.data_dir.join("seal-key"));
        anyhow::ensure!(
            key_path.is_file(),
            "no seal key at {}: point --data-dir at the server's data directory, or pass --seal-key-file",
            key_path.display()
        );
        self.open().await
    }

    pub async fn open(&self) -> anyhow::Result<Store> {
        if self.database_url.is_none() || self.seal_key_file.is_none() {
            self.ensure_data_dir()?;
        }
        let key_path = self.seal_key_file.clone().unwrap_or_else(|| self.data_dir.join("seal-key"));
        let sealer = Sealer::load_or_create(&key_path).with_context(|| format!("seal key {}", key_path.display()))?;
        let url = match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite:{}", self.data_dir.join("sluice.db").display()),
        };
        Store::open(&url, sealer).await.context("cannot open the database")
    }
}

/// Which runtime executors run on.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeKind {
    /// Host processes in their own directories, sandboxed by bubblewrap where it works.
    Local,
    /// Containers on a Docker Engine.
    Docker,
}

/// Where images come from: registry ids mapped to hosts, and how to sign
/// in to them.
#[derive(Args, Debug, Clone)]
pub struct RegistryArgs {
    /// Registry hosts by registryId, comma-separated ID=HOST pairs (ID=http://HOST for plain
    /// HTTP: loopback, or a host named in --insecure-registry). On the local runtime an unmapped
    /// id finds images in the image cache; on docker, the bare repository. `host` is the
    /// host's own filesystem.
    #[arg(long = "registry", env = "SLUICE_REGISTRIES", value_delimiter = ',')]
    pub registries: Vec<String>,
    /// Sign-ins for registries, in Docker's config.json format (`auths` by host: `auth`, or
    /// `username` and `password`, or `registrytoken`); read once at start, never logged.
    #[arg(long, env = "SLUICE_REGISTRY_AUTH_FILE")]
    pub registry_auth_file: Option<PathBuf>,
    /// Registry hosts (host[:port]) that may be spoken to over plain HTTP although not loopback.
    #[arg(long = "insecure-registry", env = "SLUICE_INSECURE_REGISTRIES", value_delimiter = ',')]
    pub insecure_registries: Vec<String>,
}

impl RegistryArgs {
    pub fn registries(&self) -> anyhow::Result<sluice_images::Registries> {
        let registries = sluice_images::Registries::parse(&self.registries, &self.insecure_registries)
            .map_err(anyhow::Error::msg)?;
        let Some(path) = &self.registry_auth_file else { return Ok(registries) };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--registry-auth-file {}: cannot read it", path.display()))?;
        let credentials = sluice_images::docker_credentials(&text)
            .map_err(|e| anyhow::anyhow!("--registry-auth-file {}: {e}", path.display()))?;
        Ok(registries.with_credentials(&credentials))
    }
}

/// How executors get their image's root.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageRoots {
    Auto,
    Copy,
}

/// What builds template images.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateBuilderChoice {
    Auto,
    Docker,
    Buildah,
    None,
}

#[derive(Args, Debug, Clone)]
pub struct WorkerArgs {
    /// The runtime executors run on.
    #[arg(long, env = "SLUICE_RUNTIME", value_enum, default_value = "local")]
    pub runtime: RuntimeKind,
    /// Where executors' run directories live; DATA_DIR/executors by default.
    #[arg(long, env = "SLUICE_EXECUTORS_DIR")]
    pub executors_dir: Option<PathBuf>,
    /// The sluiced binary the local runtime starts; by default this binary, as `sluice daemon`.
    #[arg(long, env = "SLUICE_DAEMON_BINARY")]
    pub daemon_binary: Option<PathBuf>,
    /// What `daemon_binary` is given before the daemon's own arguments
    /// (`daemon` when it is a sluice binary); set by programs, not a flag.
    #[arg(skip)]
    pub daemon_subcommand: Vec<String>,
    /// A statically linked sluiced for containers; `sluiced-static` beside this binary, or
    /// the x86_64-unknown-linux-gnu build of the same profile, by default.
    #[arg(long, env = "SLUICE_DOCKER_DAEMON_BINARY")]
    pub docker_daemon_binary: Option<PathBuf>,
    /// The Docker Engine socket; the local default when not given.
    #[arg(long, env = "SLUICE_DOCKER_SOCKET")]
    pub docker_socket: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// How an executor gets its image's root: `auto` (an overlay of the cached image where
    /// sluice is root and the kernel has overlayfs, else a copy) or `copy` (always a copy on
    /// the executor's own disk: for hosts whose filesystem cannot take an overlay's upper).
    #[arg(long, env = "SLUICE_IMAGE_ROOTS", value_enum, default_value = "auto")]
    pub image_roots: ImageRoots,
    /// What builds template images: `auto` (the host's Docker Engine when it answers, else
    /// buildah when installed), `docker`, `buildah`, or `none`. Builds go into the local
    /// runtime's image cache.
    #[arg(long, env = "SLUICE_TEMPLATE_BUILDER", value_enum, default_value = "auto")]
    pub template_builder: TemplateBuilderChoice,
    /// Bounds the local runtime's image cache (GiB): least recently used images no executor runs
    /// on are removed past it after each pull.
    #[arg(long, env = "SLUICE_IMAGE_CACHE_MAX_GIB")]
    pub image_cache_max_gib: Option<f64>,
    /// The host this worker's executors run on, as the fleet names it; the
    /// machine's host name by default. Workers of one host share its data
    /// directory and runtime.
    #[arg(long, env = "SLUICE_HOST_NAME", value_parser = parse_host_name)]
    pub host_name: Option<String>,
    /// How many executors this host may hold; a host at its limit gets no
    /// new ones. No limit when not given.
    #[arg(long, env = "SLUICE_MAX_EXECUTORS", value_parser = clap::value_parser!(i64).range(1..))]
    pub max_executors: Option<i64>,
    /// A hosts file (`ADDRESS NAME…` per line) the egress proxies look names
    /// up in instead of the host's resolver: for installs with no DNS, and
    /// tests.
    #[arg(long, env = "SLUICE_EGRESS_HOSTS")]
    pub egress_hosts: Option<PathBuf>,
    /// Certificates (PEM) the hosts the egress proxies add credentials for
    /// may be signed by, besides the system's roots: for a private API
    /// behind an internal authority, and tests.
    #[arg(long, env = "SLUICE_EGRESS_TRUST", value_name = "FILE")]
    pub egress_trust: Option<PathBuf>,
    /// How long a host's workers may miss their heartbeat before the host
    /// is unreachable, in seconds.
    #[arg(long, env = "SLUICE_HOST_GRACE_SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub host_grace_seconds: u64,
    /// Serve this host's executors to the rest of sluice (the API, the
    /// broker, other hosts) over HTTPS at HOST:PORT, callers authenticated
    /// by the install's cluster credential. Needed once executors run on
    /// more than one host.
    #[arg(long, env = "SLUICE_INTERNAL_LISTEN")]
    pub internal_listen: Option<String>,
    /// The https:// URL the rest of sluice reaches --internal-listen at;
    /// https://HOST:PORT of --internal-listen by default (which must then
    /// name an address others can reach, not 0.0.0.0).
    #[arg(long, env = "SLUICE_ADVERTISE_URL", requires = "internal_listen")]
    pub advertise_url: Option<String>,
    /// How many jobs this worker runs at once.
    #[arg(long, env = "SLUICE_WORKER_CONCURRENCY", default_value_t = 16)]
    pub worker_concurrency: usize,
    /// Job lease length in seconds (renewed by a heartbeat while a job runs).
    #[arg(long, env = "SLUICE_LEASE_SECONDS", default_value_t = 60)]
    pub lease_seconds: u64,
    /// The most the claim loop waits between claims when idle, in milliseconds.
    #[arg(long, env = "SLUICE_CLAIM_BACKOFF_CAP_MS", default_value_t = 2000)]
    pub claim_backoff_cap_ms: u64,
    /// How long a launched executor's daemon may take to answer, in seconds.
    #[arg(long, env = "SLUICE_READY_TIMEOUT_SECONDS", default_value_t = 60)]
    pub ready_timeout_seconds: u64,
    /// Launch attempts per workspace start (the first plus retries).
    #[arg(long, env = "SLUICE_MAX_LAUNCH_ATTEMPTS", default_value_t = 3)]
    pub max_launch_attempts: i64,
    /// Cron schedule (with seconds) of the expiry reaper.
    #[arg(long, env = "SLUICE_REAPER_SCHEDULE", default_value = "*/5 * * * * *")]
    pub reaper_schedule: String,
    /// Cron schedule (with seconds) of the orphaned-executor sweep.
    #[arg(long, env = "SLUICE_ORPHAN_SCHEDULE", default_value = "0 * * * * *")]
    pub orphan_schedule: String,
    /// Fault injection for crash tests: pause after an executor is made and
    /// before its launch is recorded, in milliseconds.
    #[arg(long, env = "SLUICE_FAULT_PAUSE_AFTER_LAUNCH_MS", hide = true)]
    pub fault_pause_after_launch_ms: Option<u64>,
    /// Fault injection for crash tests: pause between taking a pooled
    /// executor and assigning it its run, in milliseconds.
    #[arg(long, env = "SLUICE_FAULT_PAUSE_AFTER_TAKE_MS", hide = true)]
    pub fault_pause_after_take_ms: Option<u64>,
    /// Host uids for executors when sluice runs as root, `START-END`: each
    /// executor takes two (its daemon's and its workload's). No account of
    /// this host may have an id inside.
    #[arg(long, env = "SLUICE_EXECUTOR_UIDS")]
    pub executor_uids: Option<String>,
    /// Keeps N executors of an image started and idle, `REPOSITORY:TAG=N`
    /// (repeatable, or comma-separated): a create of that image whose spec
    /// fits takes one (the local runtime only).
    #[arg(long, env = "SLUICE_WARM_POOL", value_delimiter = ',', value_parser = parse_pool)]
    pub warm_pool: Vec<sluice_runtime::pool::PoolSpec>,
    /// The disk size (MiB) of local executors whose spec names no
    /// `resources.diskMiB`, where this host can enforce one.
    #[arg(long, env = "SLUICE_DEFAULT_DISK_MIB", value_parser = clap::value_parser!(u64).range(16..=(1 << 24)))]
    pub default_disk_mib: Option<u64>,
    /// Where captures are stored: `s3://BUCKET[/PREFIX]` (endpoint, region,
    /// keys and path-style from the usual AWS_* variables) or a directory.
    /// Default: DATA_DIR/objects.
    #[arg(long, env = "SLUICE_OBJECT_STORE")]
    pub object_store: Option<String>,
    /// How often daemons snap capture-sourced worktrees, in milliseconds.
    #[arg(long, env = "SLUICE_CAPTURE_INTERVAL_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub capture_interval_ms: u64,
    /// How long a capture-sourced workspace may go unused before it sleeps
    /// (its work saved, its runtime released; the next use wakes it), in
    /// seconds, unless its spec's `idle.sleepAfterSeconds` says. Default:
    /// only those whose spec says sleep.
    #[arg(long, env = "SLUICE_SLEEP_AFTER_SECONDS", value_parser = clap::value_parser!(u64).range(1..=2_592_000))]
    pub sleep_after_seconds: Option<u64>,
    /// The longest an executor may live, in seconds: the runtime ends it
    /// then (`runtime.deadline`). Default: no limit.
    #[arg(long, env = "SLUICE_EXECUTOR_MAX_LIFETIME_SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub executor_max_lifetime_seconds: Option<u64>,
    /// How long before an executor's deadline its final drain starts, in
    /// seconds.
    #[arg(long, env = "SLUICE_PRESERVATION_LEAD_SECONDS", default_value_t = 300)]
    pub preservation_lead_seconds: u64,
    /// How many times a job may fail (or lose its worker) before it is
    /// parked for an operator (`sluice jobs failed`, `sluice jobs retry`).
    #[arg(long, env = "SLUICE_MAX_JOB_ATTEMPTS", default_value_t = 10, value_parser = clap::value_parser!(i64).range(1..))]
    pub max_job_attempts: i64,
    /// The bound each FINAL flush of a drain gets, in milliseconds.
    #[arg(long, env = "SLUICE_DRAIN_FLUSH_DEADLINE_MS", default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub drain_flush_deadline_ms: u64,
    /// The pause before a retained executor's first recovery attempt, in
    /// seconds; it doubles per attempt up to --recovery-cap-seconds.
    #[arg(long, env = "SLUICE_RECOVERY_BASE_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub recovery_base_seconds: u64,
    #[arg(long, env = "SLUICE_RECOVERY_CAP_SECONDS", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..))]
    pub recovery_cap_seconds: u64,
    /// How often a kept drain is looked at again, in milliseconds.
    #[arg(long, env = "SLUICE_KEPT_POLL_MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(50..))]
    pub kept_poll_ms: u64,
    /// How often a ready executor whose watch stream is open is looked at
    /// anyway (the safety sweep), in seconds.
    #[arg(long, env = "SLUICE_SWEEP_SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub sweep_seconds: u64,
    /// Cron schedule (with seconds) of the object store's collection.
    #[arg(long, env = "SLUICE_COLLECT_SCHEDULE", default_value = "0 17 * * * *")]
    pub collect_schedule: String,
    /// Objects written within this many seconds are never collected.
    #[arg(long, env = "SLUICE_COLLECT_GRACE_SECONDS", default_value_t = 3600)]
    pub collect_grace_seconds: u64,
    /// Events older than this many days are forgotten (at least 1).
    #[arg(long, env = "SLUICE_EVENT_RETENTION_DAYS", default_value_t = 180, value_parser = clap::value_parser!(u64).range(1..))]
    pub event_retention_days: u64,
    /// Finished exec runs (their output with them) older than this many days
    /// are forgotten (at least 1).
    #[arg(long, env = "SLUICE_EXEC_RESULT_RETENTION_DAYS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub exec_result_retention_days: u64,
    /// The drain reports of executors removed from their runtime are
    /// forgotten after this many days (at least 1).
    #[arg(long, env = "SLUICE_DRAIN_REPORT_RETENTION_DAYS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub drain_report_retention_days: u64,
    /// Delete workspaces that ended (stopped, failed or cancelled, no
    /// runtime left) more than this many days ago, as their owner's DELETE
    /// would (at least 1; kept until deleted when not set).
    #[arg(long, env = "SLUICE_PURGE_ENDED_AFTER_DAYS", value_parser = clap::value_parser!(u64).range(1..))]
    pub purge_ended_after_days: Option<u64>,
    /// Fault injection for crash tests: pause before removing an executor,
    /// in milliseconds.
    #[arg(long, env = "SLUICE_FAULT_PAUSE_BEFORE_REMOVE_MS", hide = true)]
    pub fault_pause_before_remove_ms: Option<u64>,
}

fn days(days: u64) -> std::time::Duration {
    std::time::Duration::from_secs(days.saturating_mul(24 * 3600))
}

impl WorkerArgs {
    pub fn executors_dir(&self, data_dir: &Path) -> PathBuf {
        self.executors_dir.clone().unwrap_or_else(|| data_dir.join("executors"))
    }

    /// Where captures are stored.
    pub fn object_store(&self, data_dir: &Path) -> anyhow::Result<sluice_capture_store::objects::ObjectStoreUrl> {
        use sluice_capture_store::objects::ObjectStoreUrl;
        match &self.object_store {
            Some(text) => ObjectStoreUrl::parse(text).map_err(|e| anyhow::anyhow!("--object-store: {e}")),
            None => Ok(ObjectStoreUrl::Local(std::path::absolute(data_dir.join("objects"))?)),
        }
    }

    fn image_cache_max_bytes(&self) -> anyhow::Result<Option<u64>> {
        match self.image_cache_max_gib {
            Some(gib) if !(gib > 0.0 && gib.is_finite()) => {
                anyhow::bail!("--image-cache-max-gib: expected a positive number of GiB")
            }
            gib => Ok(gib.map(|gib| (gib * (1u64 << 30) as f64) as u64)),
        }
    }

    /// The statically linked daemon the docker runtime mounts into every
    /// container: given, or found beside this binary; refused, saying
    /// exactly what is missing, when there is none or it is not static.
    fn docker_daemon_binary(&self) -> anyhow::Result<PathBuf> {
        const BUILD: &str = "build one with `scripts/build-static-daemon --release` (cargo and glibc's static \
                             libraries, Debian's libc6-dev) or pass --docker-daemon-binary";
        let path = match &self.docker_daemon_binary {
            Some(path) => path.clone(),
            None => {
                let exe = std::env::current_exe()?;
                let dir = exe.parent().context("this binary has no directory")?;
                let profile = dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug");
                let candidates = [
                    dir.join("sluiced-static"),
                    dir.join("..").join("x86_64-unknown-linux-gnu").join(profile).join("sluiced"),
                ];
                let found = candidates.iter().find(|p| p.is_file()).cloned();
                found.with_context(|| {
                    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
                    format!(
                        "the docker runtime mounts a statically linked sluiced into each container, and there is \
                         none at {}: {BUILD}",
                        looked.join(" or ")
                    )
                })?
            }
        };
        let statically = sluice_runtime::local::statically_linked(&path)
            .with_context(|| format!("cannot read the daemon binary {}", path.display()))?;
        anyhow::ensure!(
            statically,
            "{} is dynamically linked: a container has no loader for it; {BUILD}",
            path.display()
        );
        Ok(path)
    }

    fn uid_range(&self) -> anyhow::Result<sluice_runtime::identity::UidRange> {
        use sluice_runtime::identity::UidRange;
        match &self.executor_uids {
            Some(text) => UidRange::parse(text).map_err(|e| anyhow::anyhow!("--executor-uids {text:?}: {e}")),
            None => Ok(UidRange::DEFAULT),
        }
    }

    /// Opens the configured runtime.
    /// Opens the configured runtime; answers it with whether its executors
    /// go unsandboxed (a local runtime without bubblewrap).
    pub async fn runtime(&self, data_dir: &Path) -> anyhow::Result<(std::sync::Arc<dyn sluice_worker::Runtime>, bool)> {
        use sluice_runtime::docker::DockerRuntime;
        use sluice_runtime::local::LocalRuntime;
        let executors = self.executors_dir(data_dir);
        Ok(match self.runtime {
            RuntimeKind::Local => {
                let (daemon, prefix) = match &self.daemon_binary {
                    Some(path) => (path.clone(), self.daemon_subcommand.clone()),
                    None => (std::env::current_exe()?, vec!["daemon".to_owned()]),
                };
                anyhow::ensure!(daemon.is_file(), "the daemon binary {} does not exist", daemon.display());
                let executors = std::path::absolute(&executors)?;
                let daemon = std::fs::canonicalize(&daemon)?;
                let images = sluice_images::ImageCache::open(
                    &std::path::absolute(data_dir.join("images"))?,
                    self.registry.registries()?,
                    sluice_runtime::is_root(),
                )?;
                let local = LocalRuntime::new(executors, daemon, prefix, self.uid_range()?, self.default_disk_mib)
                    .await?
                    .with_image_roots_copied(self.image_roots == ImageRoots::Copy)
                    .with_images(std::sync::Arc::new(images), self.image_cache_max_bytes()?)
                    .with_max_lifetime(self.max_lifetime())
                    .with_warm_pool(self.warm_pool.clone(), self.capture_interval_ms)
                    .with_pause_after_take(self.fault_pause_after_take_ms.map(std::time::Duration::from_millis));
                let unsandboxed = matches!(local.sandbox(), sluice_runtime::local::Sandbox::None(_));
                (std::sync::Arc::new(local), unsandboxed)
            }
            RuntimeKind::Docker => {
                anyhow::ensure!(
                    self.warm_pool.is_empty(),
                    "--warm-pool: the docker runtime has no warm pool yet (the local runtime has)"
                );
                let daemon = std::fs::canonicalize(self.docker_daemon_binary()?)?;
                let executors = std::path::absolute(&executors)?;
                let docker = DockerRuntime::connect(
                    self.docker_socket.as_deref(),
                    executors,
                    daemon,
                    self.registry.registries()?.hosts(),
                    self.uid_range()?,
                )
                .await?
                .with_max_lifetime(self.max_lifetime());
                (std::sync::Arc::new(docker), false)
            }
        })
    }

    /// How this host builds template images, given the runtime's image
    /// cache: the builder, or why there is none.
    pub async fn template_builder(
        &self,
        data_dir: &Path,
        cache: Option<std::sync::Arc<sluice_images::ImageCache>>,
    ) -> Result<std::sync::Arc<sluice_worker::templates::TemplateBuilder>, String> {
        use sluice_images::BuilderChoice;
        let Some(cache) = cache else {
            return Err("the runtime has no image cache (templates build for the local runtime)".into());
        };
        let choice = match self.template_builder {
            TemplateBuilderChoice::Auto => BuilderChoice::Auto,
            TemplateBuilderChoice::Docker => BuilderChoice::Docker,
            TemplateBuilderChoice::Buildah => BuilderChoice::Buildah,
            TemplateBuilderChoice::None => BuilderChoice::None,
        };
        let storage = std::path::absolute(data_dir.join("buildah")).map_err(|e| e.to_string())?;
        let builder = sluice_images::Builder::detect(choice, &storage).await?;
        Ok(std::sync::Arc::new(sluice_worker::templates::TemplateBuilder { builder, cache }))
    }

    /// Where the rest of sluice reaches this worker's internal API: its
    /// URL and the host part of it (the name its certificate carries).
    pub fn advertised(&self) -> anyhow::Result<Option<(String, String)>> {
        let Some(listen) = &self.internal_listen else { return Ok(None) };
        let url = match &self.advertise_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let address: std::net::SocketAddr =
                    listen.parse().with_context(|| format!("--internal-listen {listen:?} is not HOST:PORT"))?;
                anyhow::ensure!(
                    !address.ip().is_unspecified(),
                    "--internal-listen {listen} is reachable at no one address: give --advertise-url"
                );
                format!("https://{address}")
            }
        };
        let rest = url
            .strip_prefix("https://")
            .with_context(|| format!("--advertise-url must start with https:// (it is {url:?})"))?;
        let authority = rest.split('/').next().unwrap_or_default();
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
        };
        anyhow::ensure!(
            !host.is_empty() && rest.len() == authority.len(),
            "--advertise-url must be https://HOST[:PORT]"
        );
        Ok(Some((url.clone(), host.to_owned())))
    }

    fn max_lifetime(&self) -> Option<std::time::Duration> {
        self.executor_max_lifetime_seconds.map(std::time::Duration::from_secs)
    }

    pub fn worker_config(&self) -> anyhow::Result<sluice_worker::WorkerConfig> {
        let defaults = sluice_worker::WorkerConfig::default();
        let egress_resolver = match &self.egress_hosts {
            None => sluice_runtime::egress::Resolver::System,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("--egress-hosts {}: {e}", path.display()))?;
                sluice_runtime::egress::Resolver::from_hosts(&text)
                    .map_err(|e| anyhow::anyhow!("--egress-hosts {}: {e}", path.display()))?
            }
        };
        let egress_trust = match &self.egress_trust {
            None => Vec::new(),
            Some(path) => std::fs::read(path).map_err(|e| anyhow::anyhow!("--egress-trust {}: {e}", path.display()))?,
        };
        Ok(sluice_worker::WorkerConfig {
            egress_resolver,
            egress_trust,
            lease: std::time::Duration::from_secs(self.lease_seconds.max(1)),
            concurrency: self.worker_concurrency.max(1),
            claim_cap: std::time::Duration::from_millis(self.claim_backoff_cap_ms.max(1)),
            policy: sluice_domain::reconcile::Policy {
                ready_timeout_ms: (self.ready_timeout_seconds * 1000) as i64,
                max_launch_attempts: self.max_launch_attempts.max(1),
                kept_poll_ms: self.kept_poll_ms as i64,
                sweep_ms: (self.sweep_seconds * 1000) as i64,
                recovery_base_ms: (self.recovery_base_seconds * 1000) as i64,
                recovery_cap_ms: (self.recovery_cap_seconds.max(self.recovery_base_seconds) * 1000) as i64,
                ..defaults.policy
            },
            preservation_lead: std::time::Duration::from_secs(self.preservation_lead_seconds),
            drain_flush_deadline: std::time::Duration::from_millis(self.drain_flush_deadline_ms),
            pause_before_remove: self.fault_pause_before_remove_ms.map(std::time::Duration::from_millis),
            reaper_schedule: self.reaper_schedule.clone(),
            orphan_schedule: self.orphan_schedule.clone(),
            collect_schedule: self.collect_schedule.clone(),
            collect_grace: std::time::Duration::from_secs(self.collect_grace_seconds),
            record_retention: sluice_worker::RecordRetention {
                events: days(self.event_retention_days),
                exec_results: days(self.exec_result_retention_days),
                drain_reports: days(self.drain_report_retention_days),
            },
            purge_ended_after: self.purge_ended_after_days.map(days),
            pause_after_launch: self.fault_pause_after_launch_ms.map(std::time::Duration::from_millis),
            capture_interval: std::time::Duration::from_millis(self.capture_interval_ms),
            sleep_after: self.sleep_after_seconds.map(std::time::Duration::from_secs),
            max_job_attempts: self.max_job_attempts,
            host: self.host_name.clone().unwrap_or(defaults.host.clone()),
            internal_url: self.advertised().ok().flatten().map(|(url, _)| url),
            capacity: self.max_executors,
            host_grace: std::time::Duration::from_secs(self.host_grace_seconds),
            ..defaults
        })
    }
}

/// A preview domain: a DNS name of at least two labels, lowercased.
fn parse_preview_domain(domain: &str) -> Result<String, String> {
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if domain.len() > 200 || !domain.contains('.') || !domain.split('.').all(label_ok) {
        return Err("a preview domain is a DNS name of at least two labels (previews.example.com)".into());
    }
    Ok(domain)
}

/// A host name as the fleet stores it: 1 to 253 characters of letters,
/// digits, `.`, `-` and `_`.
fn parse_host_name(name: &str) -> Result<String, String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    if name.is_empty() || name.len() > 253 || !name.chars().all(allowed) {
        return Err("a host name is 1 to 253 letters, digits, '.', '-' or '_'".into());
    }
    Ok(name.to_owned())
}

/// Where Prometheus scrapes this process.
#[derive(Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve `GET /metrics` with no token on HOST:PORT of its own, for a
    /// network only the scrapers reach (the API listener serves it to the
    /// API token as well).
    #[arg(long, env = "SLUICE_METRICS_LISTEN", value_name = "HOST:PORT")]
    pub metrics_listen: Option<String>,
}

/// Where webhooks are delivered, and how failures end.
#[derive(Args, Debug, Clone)]
pub struct WebhookArgs {
    /// Let webhook endpoints point at loopback, private and link-local
    /// addresses (receivers inside the install's own network). Refused by
    /// default, by address and by what names resolve to.
    #[arg(long, env = "SLUICE_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: bool,
    /// Failed deliveries in a row after which an endpoint is disabled.
    #[arg(long, env = "SLUICE_WEBHOOK_FAILURE_LIMIT", default_value_t = sluice_domain::webhooks::DEFAULT_FAILURE_LIMIT,
        value_parser = clap::value_parser!(i64).range(1..))]
    pub webhook_failure_limit: i64,
    /// The certificate authorities (PEM) https endpoints are checked against.
    #[arg(long, env = "SLUICE_WEBHOOK_CA_FILE", default_value = sluice_worker::webhooks::SYSTEM_ROOTS)]
    pub webhook_ca_file: PathBuf,
}

impl WebhookArgs {
    pub fn policy(&self) -> sluice_worker::webhooks::WebhookPolicy {
        sluice_worker::webhooks::WebhookPolicy {
            allow_private: self.webhook_allow_private,
            failure_limit: self.webhook_failure_limit,
            roots: self.webhook_ca_file.clone(),
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ApiArgs {
    /// Address the HTTP API listens on.
    #[arg(long, env = "SLUICE_LISTEN", default_value = "127.0.0.1:7420")]
    pub listen: String,
    /// Also serve the execution broker protocol, over HTTPS only, at
    /// `https://HOST:PORT/broker/v1/…`.
    #[arg(long, env = "SLUICE_BROKER_LISTEN")]
    pub broker_listen: Option<String>,
    /// The broker's certificate chain (PEM). Without it (and --tls-key), a
    /// self-signed one is generated into DATA_DIR/broker-tls/.
    #[arg(long, env = "SLUICE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The broker's private key (PEM).
    #[arg(long, env = "SLUICE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve previews of workspaces' ports at HOST:PORT (needs
    /// --preview-domain): `https://PORT-WORKSPACEID.DOMAIN/`.
    #[arg(long, env = "SLUICE_PREVIEW_LISTEN", requires = "preview_domain")]
    pub preview_listen: Option<String>,
    /// The domain previews are served under; its wildcard names this
    /// listener (`*.DOMAIN` must resolve to it).
    #[arg(long, env = "SLUICE_PREVIEW_DOMAIN", requires = "preview_listen", value_parser = parse_preview_domain)]
    pub preview_domain: Option<String>,
    /// Serve previews over plain HTTP, behind a proxy that terminates TLS
    /// (URLs still say https).
    #[arg(long, env = "SLUICE_PREVIEW_PLAINTEXT")]
    pub preview_plaintext: bool,
    /// The previews' certificate chain for `*.DOMAIN` (PEM). Without it
    /// (and --preview-tls-key), a self-signed one is generated into
    /// DATA_DIR/preview-tls/DOMAIN/.
    #[arg(long, env = "SLUICE_PREVIEW_TLS_CERT", requires = "preview_tls_key")]
    pub preview_tls_cert: Option<PathBuf>,
    /// The previews' private key (PEM).
    #[arg(long, env = "SLUICE_PREVIEW_TLS_KEY", requires = "preview_tls_cert")]
    pub preview_tls_key: Option<PathBuf>,
    /// The port preview URLs name, where a proxy in front listens on
    /// another than --preview-listen's (443 and 80 are left out of URLs).
    #[arg(long, env = "SLUICE_PREVIEW_URL_PORT")]
    pub preview_url_port: Option<u16>,
    /// A file of accepted API tokens, one per line.
    #[arg(long, env = "SLUICE_API_TOKENS_FILE")]
    pub api_tokens_file: Option<PathBuf>,
    /// Accepted API tokens, comma-separated.
    #[arg(long, env = "SLUICE_API_TOKENS", hide_env_values = true, value_delimiter = ',')]
    pub api_tokens: Vec<String>,
    /// A file of accepted SSH gateway tokens, one per line.
    #[arg(long, env = "SLUICE_GATEWAY_TOKENS_FILE")]
    pub gateway_tokens_file: Option<PathBuf>,
    /// Accepted SSH gateway tokens, comma-separated.
    #[arg(long, env = "SLUICE_GATEWAY_TOKENS", hide_env_values = true, value_delimiter = ',')]
    pub gateway_tokens: Vec<String>,
    /// Lifetime of workspaces whose create names no ttlSeconds.
    #[arg(long, env = "SLUICE_DEFAULT_TTL_SECONDS", value_parser = clap::value_parser!(i64).range(1..))]
    pub default_ttl_seconds: Option<i64>,
    /// How many of its newest captures a capture session keeps when its
    /// create names no retention (0: no count rule).
    #[arg(long, env = "SLUICE_CAPTURE_KEEP_LAST", default_value_t = 20)]
    pub capture_keep_last: u64,
    /// How long a capture session keeps every capture when its create names
    /// no retention, in seconds (0: no age rule).
    #[arg(long, env = "SLUICE_CAPTURE_KEEP_WITHIN_SECONDS", default_value_t = 7 * 86_400)]
    pub capture_keep_within_seconds: u64,
    /// The most bytes a capture session may hold in the object store when
    /// its create names no quotaBytes (0: no limit).
    #[arg(long, env = "SLUICE_CAPTURE_QUOTA_BYTES", default_value_t = 20 << 30)]
    pub capture_quota_bytes: u64,
    /// How long a client may take to send a request's line and headers.
    #[arg(long, env = "SLUICE_HEADER_READ_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout_ms: u64,
    /// How long a connection may carry no bytes before it is closed.
    #[arg(long, env = "SLUICE_IDLE_TIMEOUT_MS", default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_ms: u64,
    /// Connections served at once; more wait to be accepted.
    #[arg(long, env = "SLUICE_MAX_CONNECTIONS", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: u64,
    /// The largest request body accepted.
    #[arg(long, env = "SLUICE_MAX_BODY_BYTES", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1024..=(1 << 30)))]
    pub max_body_bytes: u64,
}

impl ApiArgs {
    /// The install's capture session defaults.
    pub fn capture_defaults(&self) -> sluice_api::CaptureDefaults {
        sluice_api::CaptureDefaults {
            retention: sluice_store::capture::Retention {
                keep_last: (self.capture_keep_last > 0).then_some(self.capture_keep_last),
                keep_within_ms: (self.capture_keep_within_seconds > 0)
                    .then(|| self.capture_keep_within_seconds.saturating_mul(1000)),
            },
            quota_bytes: (self.capture_quota_bytes > 0).then_some(self.capture_quota_bytes),
        }
    }

    pub fn http_limits(&self) -> sluice_api::HttpLimits {
        sluice_api::HttpLimits {
            header_read_timeout: std::time::Duration::from_millis(self.header_read_timeout_ms),
            idle_timeout: std::time::Duration::from_millis(self.idle_timeout_ms),
            max_connections: self.max_connections as usize,
            max_body_bytes: self.max_body_bytes as usize,
        }
    }

    pub fn api_tokens(&self, data_dir: &Path) -> anyhow::Result<TokenSet> {
        tokens("API", self.api_tokens_file.as_deref(), &self.api_tokens, &data_dir.join("api-token"))
    }

    pub fn gateway_tokens(&self, data_dir: &Path) -> anyhow::Result<TokenSet> {
        tokens(
            "SSH gateway",
            self.gateway_tokens_file.as_deref(),
            &self.gateway_tokens,
            &data_dir.join("gateway-token"),
        )
    }
}

/// Tokens from a file or a list; with neither, the data directory's token
/// file, generated (mode 0600) on first start.
fn tokens(what: &str, file: Option<&Path>, list: &[String], default_file: &Path) -> anyhow::Result<TokenSet> {
    let mut accepted: Vec<String> = list.iter().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect();
    let file = match (file, accepted.is_empty()) {
        (Some(f), _) => Some(f.to_path_buf()),
        (None, true) => {
            if !default_file.exists() {
                write_private_file(default_file, new_token().expose())
                    .with_context(|| format!("cannot write {}", default_file.display()))?;
            }
            Some(default_file.to_path_buf())
        }
        (None, false) => None,
    };
    if let Some(file) = file {
        let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        accepted
            .extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned));
        tracing::info!(file = %file.display(), "{what} tokens are read from this file");
    }
    let set = TokenSet::new(accepted.iter().map(String::as_str));
    anyhow::ensure!(!set.is_empty(), "no {what} token is configured");
    Ok(set)
}

/// Reads one `--warm-pool` entry.
fn parse_pool(text: &str) -> Result<sluice_runtime::pool::PoolSpec, String> {
    sluice_runtime::pool::PoolSpec::parse(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_token_file_is_generated_private_when_nothing_is_configured() {
        let dir = tempfile::tempdir().unwrap();
        let default_file = dir.path().join("api-token");
        let set = tokens("API", None, &[], &default_file).unwrap();
        let token = std::fs::read_to_string(&default_file).unwrap();
        assert_eq!(token.trim().len(), 64);
        assert!(set.accepts(token.trim()));
        assert_eq!(std::fs::metadata(&default_file).unwrap().permissions().mode() & 0o777, 0o600);
        // A second start reads the same token.
        assert!(tokens("API", None, &[], &default_file).unwrap().accepts(token.trim()));
    }

    #[test]
    fn listed_tokens_and_token_files_are_used_instead() {
        let dir = tempfile::tempdir().unwrap();
        let default_file = dir.path().join("api-token");
        let set = tokens("API", None, &["one".into(), " two ".into()], &default_file).unwrap();
        assert!(set.accepts("one") && set.accepts("two") && !set.accepts("three"));
        assert!(!default_file.exists(), "no token file is generated when tokens are given");
        let file = dir.path().join("tokens");
        std::fs::write(&file, "# comment\nalpha\n\nbeta\n").unwrap();
        let set = tokens("API", Some(&file), &[], &default_file).unwrap();
        assert!(set.accepts("alpha") && set.accepts("beta") && !set.accepts("# comment"));
        std::fs::write(&file, "\n").unwrap();
        assert!(tokens("API", Some(&file), &[], &default_file).is_err(), "an empty token file is refused");
    }

    fn worker_args(args: &[&str]) -> WorkerArgs {
        let args = std::iter::once("probe").chain(args.iter().copied());
        <WorkerArgsProbe as clap::Parser>::try_parse_from(args).unwrap().worker
    }

    #[test]
    fn a_worker_is_advertised_where_others_reach_it() {
        let advertised = |args: &[&str]| worker_args(args).advertised().map_err(|e| e.to_string());
        assert_eq!(advertised(&[]).unwrap(), None, "no internal API");
        assert_eq!(
            advertised(&["--internal-listen", "10.0.0.11:7421"]).unwrap(),
            Some(("https://10.0.0.11:7421".into(), "10.0.0.11".into()))
        );
        let named = ["--internal-listen", "0.0.0.0:7421", "--advertise-url", "https://exec-01.internal:7421/"];
        assert_eq!(
            advertised(&named).unwrap(),
            Some(("https://exec-01.internal:7421".into(), "exec-01.internal".into()))
        );
        let v6 = ["--internal-listen", "[::]:7421", "--advertise-url", "https://[fd00::11]:7421"];
        assert_eq!(advertised(&v6).unwrap(), Some(("https://[fd00::11]:7421".into(), "fd00::11".into())));
        // Nowhere in particular, plain HTTP, or a path: each refused, naming the flag.
        assert!(advertised(&["--internal-listen", "0.0.0.0:7421"]).unwrap_err().contains("--advertise-url"));
        let plain = ["--internal-listen", "0.0.0.0:7421", "--advertise-url", "http://exec-01:7421"];
        assert!(advertised(&plain).unwrap_err().contains("https://"));
        let path = ["--internal-listen", "0.0.0.0:7421", "--advertise-url", "https://exec-01:7421/x"];
        assert!(advertised(&path).unwrap_err().contains("--advertise-url"));
        // A host name the fleet cannot store is refused where it is given.
        let bad = <WorkerArgsProbe as clap::Parser>::try_parse_from(["probe", "--host-name", "a b"]);
        assert!(bad.is_err());
    }

    #[derive(clap::Parser)]
    struct WorkerArgsProbe {
        #[command(flatten)]
        worker: WorkerArgs,
    }
}
