//! `sluice-bench images`: images on the local runtime, each next to a
//! baseline measured in the same run, with Debian's `docker-registry` on
//! loopback and an image the Docker Engine builds here:
//!
//! - pull: `sluice images pull` of a five-layer image of about 200 MiB
//!   (random bytes, so no layer compresses away) into an empty cache,
//!   against `skopeo copy` of the same image to a directory;
//! - create → ready of a workspace on a cached image against one on the
//!   host's own filesystem (`registryId: "host"`), through `sluice serve`;
//! - a template rebuild with nothing changed: the request to its answer,
//!   against `docker build` of the same Dockerfile with its cache.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::ready::Serve;
use crate::summary::{Aim, json_of, millis, percentile, record};

#[derive(Args, Debug)]
pub struct BenchImagesArgs {
    /// Pulls measured (each into an empty cache, each against a skopeo copy).
    #[arg(long, default_value_t = 3)]
    pub pulls: usize,
    /// The image's size, MiB (five layers of a fifth each).
    #[arg(long, default_value_t = 200)]
    pub image_mib: usize,
    /// Creates measured per kind (on the image, on the host).
    #[arg(long, default_value_t = 20)]
    pub creates: usize,
    /// Template rebuilds measured.
    #[arg(long, default_value_t = 5)]
    pub rebuilds: usize,
}

struct Registry {
    port: u16,
    child: Child,
}

impl Registry {
    fn start(dir: &Path) -> anyhow::Result<Registry> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let config = dir.join("registry.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  \
                 addr: 127.0.0.1:{port}\n",
                dir.join("registry-storage").display()
            ),
        )?;
        let child = Command::new("/usr/bin/docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("docker-registry (apt-get install docker-registry)")?;
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(Registry { port, child });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("docker-registry did not listen")
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a command to its end, refusing a failure with what it said.
fn run(command: &mut Command) -> anyhow::Result<()> {
    let out = command.stdin(Stdio::null()).output().with_context(|| format!("{command:?}"))?;
    if !out.status.success() {
        bail!("{command:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Builds `tag` in the Docker Engine from `dockerfile` in `dir`.
fn docker_build(dir: &Path, dockerfile: &str, tag: &str) -> anyhow::Result<()> {
    std::fs::write(dir.join("Dockerfile"), dockerfile)?;
    run(Command::new("docker").args(["build", "-q", "-t", tag]).arg(dir))
}

/// A context of busybox (static), so `RUN` has a shell.
fn busybox_context(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::copy("/bin/busybox", dir.join("busybox")).context("busybox-static (apt-get install busybox-static)")?;
    Ok(())
}

const BUSYBOX_BASE: &str =
    "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";

fn ms(d: Duration) -> String {
    format!("{:.1} ms", millis(d))
}

pub async fn run_bench(args: BenchImagesArgs) -> anyhow::Result<()> {
    let root = std::env::temp_dir().join(format!("sluice-bench-images-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    let outcome = measure(&args, &root).await;
    let _ = std::fs::remove_dir_all(&root);
    outcome
}

async fn measure(args: &BenchImagesArgs, root: &Path) -> anyhow::Result<()> {
    let registry = Registry::start(root)?;
    let context = root.join("context");
    busybox_context(&context)?;

    // The pull's image: busybox and five layers of random bytes, built by
    // the engine and copied to the registry.
    let layer_mib = (args.image_mib / 5).max(1);
    let mut dockerfile = BUSYBOX_BASE.to_owned();
    for i in 1..=5 {
        dockerfile.push_str(&format!("RUN head -c {}m /dev/urandom > /layer{i}\n", layer_mib));
    }
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let big = format!("sluice-bench/big:{nonce}");
    docker_build(&context, &dockerfile, &big)?;
    let pushed = format!("{}/bench/big:1", registry.host());
    run(Command::new("skopeo")
        .args(["copy", "--quiet", "--dest-tls-verify=false"])
        .arg(format!("docker-daemon:{big}"))
        .arg(format!("docker://{pushed}")))?;
    let _ = Command::new("docker").args(["rmi", "-f", &big]).output();

    let sluice = crate::sluice_binary()?;
    let mapping = format!("bench=http://{}", registry.host());
    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for round in 0..args.pulls {
        let target = root.join(format!("skopeo-{round}"));
        let started = Instant::now();
        run(Command::new("skopeo")
            .args(["copy", "--quiet", "--src-tls-verify=false"])
            .arg(format!("docker://{pushed}"))
            .arg(format!("dir:{}", target.display())))?;
        baseline.push(started.elapsed());
        std::fs::remove_dir_all(&target)?;

        let data = root.join(format!("pull-{round}"));
        let started = Instant::now();
        run(Command::new(&sluice)
            .args(["images", "pull", "bench/bench/big:1", "--registry", &mapping])
            .arg("--data-dir")
            .arg(&data))?;
        ours.push(started.elapsed());
        remove_cache(&data);
    }
    let (p50, base50) = (percentile(&ours, 0.5), percentile(&baseline, 0.5));
    let ratio = p50.as_secs_f64() / base50.as_secs_f64();
    println!(
        "pull of a 5-layer {} MiB image (p50 of {}): sluice images pull {} (download, verify, unpack), skopeo copy \
         {} (download, verify): {ratio:.2}x (aim <= 1.2x)",
        layer_mib * 5,
        args.pulls,
        ms(p50),
        ms(base50)
    );
    record("image pull p50", &ms(p50), &ms(base50), ratio, Aim::AtMost(1.2));

    // Create → ready on a cached image, against the host's filesystem.
    let small = format!("sluice-bench/small:{nonce}");
    docker_build(&context, &format!("{BUSYBOX_BASE}ENV PATH=/bin\n"), &small)?;
    run(Command::new("skopeo")
        .args(["copy", "--quiet", "--dest-tls-verify=false"])
        .arg(format!("docker-daemon:{small}"))
        .arg(format!("docker://{}/bench/small:1", registry.host())))?;
    let _ = Command::new("docker").args(["rmi", "-f", &small]).output();
    let serve = Serve::spawn(root.join("serve"), &["--runtime", "local", "--registry", &mapping]).await?;
    let client = reqwest::Client::new();
    let image = json!({"registryId": "bench", "repository": "bench/small", "tag": "1"});
    let host = json!({"registryId": "host", "repository": "bench", "tag": "1"});
    // Once, untimed: the image into the cache.
    create_ready(&client, &serve, &image).await?;
    let (mut on_image, mut on_host) = (Vec::new(), Vec::new());
    for _ in 0..args.creates {
        on_host.push(create_ready(&client, &serve, &host).await?);
        on_image.push(create_ready(&client, &serve, &image).await?);
    }
    for (p, name) in [(0.5, "p50"), (0.99, "p99")] {
        let (ours, base) = (percentile(&on_image, p), percentile(&on_host, p));
        let ratio = ours.as_secs_f64() / base.as_secs_f64();
        println!(
            "create -> ready {name} ({} each): cached image {}, host filesystem {}: {ratio:.2}x (aim <= 1.2x)",
            args.creates,
            ms(ours),
            ms(base)
        );
        record(&format!("create -> ready on a cached image {name}"), &ms(ours), &ms(base), ratio, Aim::AtMost(1.2));
    }

    // A template rebuild with nothing changed, against the engine's own
    // cached rebuild of the same Dockerfile.
    let template = format!("{BUSYBOX_BASE}RUN echo {nonce} > /built\n");
    let request = json!({"name": "bench", "dockerfile": template, "context": context_tar(&context)?});
    let built = build_template(&client, &serve, &request).await?;
    anyhow::ensure!(built["state"] == "succeeded", "the template did not build: {built}");
    let (mut rebuilds, mut docker) = (Vec::new(), Vec::new());
    let tag = format!("sluice-bench/rebuild:{nonce}");
    docker_build(&context, &template, &tag)?;
    for _ in 0..args.rebuilds {
        let started = Instant::now();
        let again = build_template(&client, &serve, &request).await?;
        rebuilds.push(started.elapsed());
        anyhow::ensure!(again["cacheHit"] == true, "an unchanged rebuild was not a hit: {again}");
        let started = Instant::now();
        docker_build(&context, &template, &tag)?;
        docker.push(started.elapsed());
    }
    let _ = Command::new("docker").args(["rmi", "-f", &tag]).output();
    let (ours, base) = (percentile(&rebuilds, 0.5), percentile(&docker, 0.5));
    let ratio = ours.as_secs_f64() / base.as_secs_f64();
    println!(
        "template rebuild, nothing changed (p50 of {}): sluice {} (aim <= 1 s), docker build with its cache {}: {ratio:.2}x",
        args.rebuilds,
        ms(ours),
        ms(base)
    );
    record("template rebuild, nothing changed p50", &ms(ours), &ms(base), ratio, Aim::None);
    Ok(())
}

/// Removes a cache an ordinary `remove_dir_all` may not (read-only
/// directories of an unpacked image).
fn remove_cache(dir: &Path) {
    let _ = Command::new("chmod").args(["-R", "u+w"]).arg(dir).output();
    let _ = std::fs::remove_dir_all(dir);
}

fn context_tar(dir: &Path) -> anyhow::Result<String> {
    use base64::Engine as _;
    let out = Command::new("tar").arg("-C").arg(dir).args(["-cf", "-", "busybox"]).output()?;
    anyhow::ensure!(out.status.success(), "tar of the context failed");
    Ok(base64::engine::general_purpose::STANDARD.encode(out.stdout))
}

/// Creates a workspace on `image` and polls it (every 5 ms, as the ready
/// benchmark does) until it is ready; answers the time it took, then stops
/// it (untimed).
async fn create_ready(client: &reqwest::Client, serve: &Serve, image: &Value) -> anyhow::Result<Duration> {
    let mut body = json!({"ownerUserId": "bench", "spec": {"command": ["sleep", "3600"]}});
    body.as_object_mut().unwrap().extend(image.as_object().unwrap().clone());
    let started = Instant::now();
    let created =
        json_of(client.post(format!("{}/v1/workspaces", serve.base)).bearer_auth(&serve.token).json(&body)).await?;
    let id = created["workspaceId"].as_str().context("no workspaceId")?;
    let url = format!("{}/v1/workspaces/{id}?ownerUserId=bench", serve.base);
    let took = loop {
        let view = json_of(client.get(&url).bearer_auth(&serve.token)).await?;
        match view["status"].as_str() {
            Some("ready") => break started.elapsed(),
            Some("failed") => bail!("workspace {id} failed: {}", view["error"]),
            _ if started.elapsed() > Duration::from_secs(120) => bail!("workspace {id} never became ready"),
            _ => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    };
    let stop = client.post(format!("{}/v1/workspaces/{id}/stop", serve.base)).bearer_auth(&serve.token);
    json_of(stop.json(&json!({"ownerUserId": "bench"}))).await?;
    Ok(took)
}

/// Asks for a template build and waits for its end; answers the build.
async fn build_template(client: &reqwest::Client, serve: &Serve, request: &Value) -> anyhow::Result<Value> {
    let asked = client.post(format!("{}/v1/templates", serve.base)).bearer_auth(&serve.token).json(request);
    let mut build = json_of(asked).await?;
    let deadline = Instant::now() + Duration::from_secs(600);
    while build["state"] == "queued" || build["state"] == "building" {
        anyhow::ensure!(Instant::now() < deadline, "the build did not end: {build}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let path = format!("{}/v1/templates/bench/builds/{}", serve.base, build["id"].as_str().unwrap_or_default());
        build = json_of(client.get(path).bearer_auth(&serve.token)).await?;
    }
    Ok(build)
}
