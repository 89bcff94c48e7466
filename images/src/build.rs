//! Images built from a Dockerfile: through the host's Docker Engine (its
//! build API, the classic builder) or, where there is none, buildah. The
//! result is an archive (`docker save`, or an OCI archive) the cache
//! imports as any import, every blob verified.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// The name the Dockerfile is given inside the build's context, apart
/// from any file of the context.
const DOCKERFILE_NAME: &str = ".sluice-template.Dockerfile";
/// The longest a build may take.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How images are built on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Builder {
    /// The host's Docker Engine, at its default socket (or `DOCKER_HOST`).
    DockerEngine,
    /// buildah, with its storage under this directory.
    Buildah { binary: PathBuf, storage: PathBuf },
}

/// Which builder an operator asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuilderChoice {
    /// The Docker Engine when it answers, else buildah when it is installed.
    Auto,
    Docker,
    Buildah,
    None,
}

/// One build.
pub struct BuildRequest<'a> {
    /// The image's name in the builder (`name:tag`).
    pub tag: &'a str,
    pub dockerfile: &'a str,
    /// A tar of the context (`None`: the Dockerfile alone).
    pub context: Option<&'a [u8]>,
    /// Where the built image's archive goes.
    pub archive: &'a Path,
}

async fn engine() -> Option<bollard::Docker> {
    let reachable = Path::new("/var/run/docker.sock").exists() || std::env::var_os("DOCKER_HOST").is_some();
    let docker = reachable.then(bollard::Docker::connect_with_socket_defaults)?.ok()?;
    tokio::time::timeout(Duration::from_secs(5), docker.ping()).await.ok()?.ok()?;
    Some(docker)
}

fn buildah_binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|dir| dir.join("buildah")).find(|p| p.is_file())
}

impl Builder {
    /// The builder `choice` names, found on this host; `Err` says why
    /// there is none.
    pub async fn detect(choice: BuilderChoice, storage: &Path) -> Result<Builder, String> {
        let buildah = || {
            buildah_binary()
                .map(|binary| Builder::Buildah { binary, storage: storage.to_path_buf() })
                .ok_or_else(|| "buildah is not on the PATH".to_owned())
        };
        match choice {
            BuilderChoice::None => Err("building templates is turned off (--template-builder none)".into()),
            BuilderChoice::Docker => {
                engine().await.map(|_| Builder::DockerEngine).ok_or_else(|| "no Docker Engine answers here".into())
            }
            BuilderChoice::Buildah => buildah(),
            BuilderChoice::Auto => match engine().await {
                Some(_) => Ok(Builder::DockerEngine),
                None => buildah().map_err(|e| format!("no Docker Engine answers here and {e}")),
            },
        }
    }

    /// `docker` or `buildah`.
    pub fn name(&self) -> &'static str {
        match self {
            Builder::DockerEngine => "docker",
            Builder::Buildah { .. } => "buildah",
        }
    }

    /// Builds the image, each line of the builder's output sent to
    /// `output`, and writes its archive; `Err` says why it failed.
    pub async fn build(&self, request: &BuildRequest<'_>, output: &mpsc::Sender<String>) -> Result<(), String> {
        let building = async {
            match self {
                Builder::DockerEngine => build_with_engine(request, output).await,
                Builder::Buildah { binary, storage } => build_with_buildah(binary, storage, request, output).await,
            }
        };
        match tokio::time::timeout(BUILD_TIMEOUT, building).await {
            Ok(result) => result,
            Err(_) => Err(format!("the build took longer than {} minutes", BUILD_TIMEOUT.as_secs() / 60)),
        }
    }
}

/// The context with the Dockerfile added under [`DOCKERFILE_NAME`].
fn context_with_dockerfile(request: &BuildRequest<'_>) -> Result<Vec<u8>, String> {
    let mut builder = tar::Builder::new(Vec::new());
    if let Some(context) = request.context {
        let mut archive = tar::Archive::new(context);
        let entries = archive.entries().map_err(|e| format!("context: not a tar archive: {e}"))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| format!("context: not a readable tar archive: {e}"))?;
            let mut header = entry.header().clone();
            let path = entry.path().map_err(|e| format!("context: {e}"))?.into_owned();
            if path.as_os_str() == DOCKERFILE_NAME {
                continue;
            }
            builder.append_data(&mut header, &path, &mut entry).map_err(|e| format!("context: {e}"))?;
        }
    }
    let mut header = tar::Header::new_gnu();
    header.set_size(request.dockerfile.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    builder
        .append_data(&mut header, DOCKERFILE_NAME, request.dockerfile.as_bytes())
        .map_err(|e| format!("context: {e}"))?;
    builder.into_inner().map_err(|e| format!("context: {e}"))
}

async fn build_with_engine(request: &BuildRequest<'_>, output: &mpsc::Sender<String>) -> Result<(), String> {
    use bollard::query_parameters::BuildImageOptions;
    let docker = engine().await.ok_or("the Docker Engine does not answer")?;
    let context = context_with_dockerfile(request)?;
    let options = BuildImageOptions {
        dockerfile: DOCKERFILE_NAME.into(),
        t: Some(request.tag.to_owned()),
        rm: true,
        forcerm: true,
        ..Default::default()
    };
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(context.into())));
    while let Some(item) = stream.next().await {
        let info = item.map_err(|e| match e {
            bollard::errors::Error::DockerStreamError { error } => error,
            bollard::errors::Error::DockerResponseServerError { message, .. } => message,
            other => other.to_string(),
        })?;
        if let Some(error) = info.error_detail.and_then(|d| d.message).or(info.error) {
            let _ = output.send(format!("{error}\n")).await;
            return Err(error.trim().to_owned());
        }
        if let Some(text) = info.stream.or(info.status) {
            let _ = output.send(text).await;
        }
    }
    let mut file = tokio::fs::File::create(request.archive).await.map_err(|e| format!("the image's archive: {e}"))?;
    let mut exported = docker.export_image(request.tag);
    while let Some(chunk) = exported.next().await {
        let chunk = chunk.map_err(|e| format!("exporting the image from the engine: {e}"))?;
        file.write_all(&chunk).await.map_err(|e| format!("the image's archive: {e}"))?;
    }
    file.flush().await.map_err(|e| format!("the image's archive: {e}"))
}

async fn build_with_buildah(
    binary: &Path,
    storage: &Path,
    request: &BuildRequest<'_>,
    output: &mpsc::Sender<String>,
) -> Result<(), String> {
    let work = request.archive.with_extension("context");
    let _ = crate::tree::remove_tree(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("the build's context: {e}"))?;
    let result = async {
        // Unpacked by the tar reader, which keeps every path inside `work`.
        let context = context_with_dockerfile(request)?;
        tar::Archive::new(context.as_slice()).unpack(&work).map_err(|e| format!("context: {e}"))?;
        let common = |command: &mut tokio::process::Command| {
            command
                .arg("--root")
                .arg(storage.join("root"))
                .arg("--runroot")
                .arg(storage.join("runroot"))
                .args(["--storage-driver", "vfs"]);
        };
        let mut bud = tokio::process::Command::new(binary);
        common(&mut bud);
        bud.args(["bud", "--isolation", "chroot", "--layers", "-f"]).arg(work.join(DOCKERFILE_NAME));
        bud.args(["-t", request.tag]).arg(&work);
        run_streamed(bud, output).await?;
        let mut push = tokio::process::Command::new(binary);
        common(&mut push);
        push.arg("push").arg(request.tag).arg(format!("oci-archive:{}", request.archive.display()));
        run_streamed(push, output).await
    }
    .await;
    let _ = crate::tree::remove_tree(&work);
    result
}

/// Runs a builder command, each line of its output (both streams) sent to
/// `output`; `Err` with its last line when it fails.
async fn run_streamed(mut command: tokio::process::Command, output: &mpsc::Sender<String>) -> Result<(), String> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| format!("cannot start the builder: {e}"))?;
    let stdout = tokio::io::BufReader::new(child.stdout.take().expect("piped")).lines();
    let stderr = tokio::io::BufReader::new(child.stderr.take().expect("piped")).lines();
    let lines = futures::stream::select(tokio_stream_lines(stdout), tokio_stream_lines(stderr));
    futures::pin_mut!(lines);
    let mut last = String::new();
    while let Some(line) = lines.next().await {
        if !line.trim().is_empty() {
            last = line.clone();
        }
        let _ = output.send(format!("{line}\n")).await;
    }
    let status = child.wait().await.map_err(|e| format!("the builder: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("the builder failed ({status}): {}", last.trim())) }
}

fn tokio_stream_lines<R: tokio::io::AsyncBufRead + Unpin>(
    lines: tokio::io::Lines<R>,
) -> impl futures::Stream<Item = String> {
    futures::stream::unfold(lines, |mut lines| async move {
        match lines.next_line().await {
            Ok(Some(line)) => Some((line, lines)),
            _ => None,
        }
    })
}
