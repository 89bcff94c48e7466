//! A real OCI registry for the image tests: Debian's `docker-registry`
//! (the distribution registry) on loopback with its own storage, and
//! images the tests make themselves (OCI layouts pushed with `skopeo`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sha2::{Digest, Sha256};

/// Whether the registry and skopeo are here (see [`crate::present`]).
fn installed() -> bool {
    let here = Path::new("/usr/bin/docker-registry").is_file() && Path::new("/usr/bin/skopeo").is_file();
    crate::present("docker-registry and skopeo (the image tests)", here)
}

pub struct Registry {
    pub port: u16,
    /// The user and password it asks for (htpasswd), if any.
    credentials: Option<(String, String)>,
    /// The registry's storage directory (blobs under
    /// `docker/registry/v2/blobs/sha256/<2>/<hex>/data`).
    pub storage: PathBuf,
    log: PathBuf,
    child: Child,
}

impl Registry {
    /// Starts a registry in `dir`; `None` (a skip, a failure under CI)
    /// when `docker-registry` or `skopeo` is not installed.
    pub fn start(dir: &Path) -> Option<Registry> {
        installed().then(|| Registry::start_on(dir, crate::free_port(), None))
    }

    /// Starts one that lets in only `user` with `password` (HTTP basic,
    /// from an htpasswd file); `None` as [`Registry::start`], and when
    /// `htpasswd` (apache2-utils) is not installed.
    pub fn start_with_sign_in(dir: &Path, user: &str, password: &str) -> Option<Registry> {
        let here = Path::new("/usr/bin/htpasswd").is_file();
        if !installed() || !crate::present("htpasswd (apache2-utils, the registry sign-in test)", here) {
            return None;
        }
        Some(Registry::start_on(dir, crate::free_port(), Some((user, password))))
    }

    /// Starts (again) on a given port, with the same storage.
    pub fn start_on(dir: &Path, port: u16, sign_in: Option<(&str, &str)>) -> Registry {
        let storage = dir.join("registry-storage");
        std::fs::create_dir_all(&storage).unwrap();
        let config = dir.join("registry.yml");
        let mut yaml = format!(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    \
             rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            storage.display()
        );
        if let Some((user, password)) = sign_in {
            let out = Command::new("/usr/bin/htpasswd").args(["-Bbn", user, password]).output().unwrap();
            assert!(out.status.success());
            std::fs::write(dir.join("htpasswd"), &out.stdout).unwrap();
            yaml.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: sluice-test\n    path: {}\n",
                dir.join("htpasswd").display()
            ));
        }
        std::fs::write(&config, yaml).unwrap();
        let log = dir.join(format!("registry-{port}.log"));
        let out = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
        let child = Command::new("/usr/bin/docker-registry")
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let up = crate::wait_for_blocking(std::time::Duration::from_secs(20), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        assert!(up.is_some(), "the registry did not listen: {}", std::fs::read_to_string(&log).unwrap_or_default());
        let credentials = sign_in.map(|(u, p)| (u.to_owned(), p.to_owned()));
        Registry { port, credentials, storage, log, child }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Pushes an OCI layout to `name` (`repository:tag`) here.
    pub fn push(&self, layout: &Path, name: &str) {
        let mut skopeo = Command::new("/usr/bin/skopeo");
        skopeo.args(["copy", "--quiet", "--dest-tls-verify=false"]);
        if let Some((user, password)) = &self.credentials {
            skopeo.arg(format!("--dest-creds={user}:{password}"));
        }
        let out = skopeo
            .arg(format!("oci:{}:latest", layout.display()))
            .arg(format!("docker://{}/{name}", self.host()))
            .output()
            .unwrap();
        assert!(out.status.success(), "skopeo copy: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The layer digests of `repository:tag` as the registry serves them
    /// (skopeo compresses layers on the way in).
    pub async fn layers_of(&self, repository: &str, tag: &str) -> Vec<String> {
        let mut request = reqwest::Client::new().get(format!("http://{}/v2/{repository}/manifests/{tag}", self.host()));
        if let Some((user, password)) = &self.credentials {
            request = request.basic_auth(user, Some(password));
        }
        let manifest: serde_json::Value = request
            .header(
                "accept",
                "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json",
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        manifest["layers"].as_array().unwrap().iter().map(|l| l["digest"].as_str().unwrap().to_owned()).collect()
    }

    /// How many times a blob was fetched (GET) from the registry.
    pub fn blob_gets(&self, digest: &str) -> usize {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.lines().filter(|l| l.contains("\"GET /v2/") && l.contains(&format!("/blobs/{digest}"))).count()
    }

    /// The file the registry serves a blob from.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.storage.join("docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }

    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An entry of a layer the tests write.
pub enum Entry<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    /// `.wh.NAME` in the path's directory: NAME deleted.
    Whiteout(&'a str),
    /// `.wh..wh..opq` in the directory: what the layers below put there hidden.
    Opaque(&'a str),
}

pub fn layer(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_ustar();
        header.set_mtime(1_700_000_000);
        match entry {
            Entry::File(path, body, mode) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(*mode);
                header.set_size(body.len() as u64);
                builder.append_data(&mut header, path, *body).unwrap();
            }
            Entry::Dir(path) => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, path, &[][..]).unwrap();
            }
            Entry::Symlink(path, target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, path, target).unwrap();
            }
            Entry::Whiteout(path) | Entry::Opaque(path) => {
                let marker = match entry {
                    Entry::Whiteout(path) => {
                        let p = Path::new(path);
                        let name = p.file_name().unwrap().to_str().unwrap();
                        p.parent().unwrap().join(format!(".wh.{name}"))
                    }
                    _ => Path::new(path).join(".wh..wh..opq"),
                };
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                header.set_size(0);
                builder.append_data(&mut header, marker, &[][..]).unwrap();
            }
        }
    }
    builder.into_inner().unwrap()
}

/// A busybox-static root: `/bin/busybox` and its applets as symlinks.
pub fn busybox_layer() -> Vec<u8> {
    let busybox = std::fs::read("/bin/busybox").expect("busybox-static is installed");
    let applets = ["sh", "cat", "ls", "env", "pwd", "sleep", "test", "echo", "true", "id", "touch", "printf"];
    let mut entries = vec![Entry::Dir("bin"), Entry::File("bin/busybox", &busybox, 0o755)];
    let links: Vec<String> = applets.iter().map(|a| format!("bin/{a}")).collect();
    entries.extend(links.iter().map(|l| Entry::Symlink(l, "busybox")));
    entries.extend([Entry::Dir("etc"), Entry::Dir("tmp")]);
    layer(&entries)
}

fn sha256(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    format!("sha256:{}", hash.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Writes an OCI image layout of `layers` (plain tars, in order) with a
/// config whose `config` is `run` (Env, WorkingDir, …).
pub fn oci_layout(dir: &Path, layers: &[Vec<u8>], run: serde_json::Value) {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let digest = sha256(bytes);
        std::fs::write(blobs.join(digest.trim_start_matches("sha256:")), bytes).unwrap();
        digest
    };
    let layer_digests: Vec<String> = layers.iter().map(|l| put(l)).collect();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "amd64", "os": "linux", "config": run,
        "rootfs": {"type": "layers", "diff_ids": layer_digests},
    }))
    .unwrap();
    let config_digest = put(&config);
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
        "layers": layers.iter().zip(&layer_digests).map(|(l, d)| serde_json::json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": d, "size": l.len(),
        })).collect::<Vec<_>>(),
    }))
    .unwrap();
    let manifest_digest = put(&manifest);
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
            "size": manifest.len(), "annotations": {"org.opencontainers.image.ref.name": "latest"}}],
    });
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
}

/// Images `a:1` (three layers: busybox; files; a whiteout and an opaque
/// directory over them; `Env` and `WorkingDir`) and `b:1` (busybox and its
/// own os-release); answers a's layer digests as the registry has them.
pub async fn push_test_images(dir: &Path, registry: &Registry) -> Vec<String> {
    let files = layer(&[
        Entry::File("etc/os-release", b"ID=image-a\n", 0o644),
        Entry::File("etc/gone", b"deleted by the next layer\n", 0o644),
        Entry::File("data/old/one", b"1\n", 0o644),
        Entry::File("data/two", b"2\n", 0o644),
        Entry::Dir("srv"),
        Entry::Dir("srv/app"),
    ]);
    let over = layer(&[Entry::Whiteout("etc/gone"), Entry::Opaque("data"), Entry::File("data/new", b"3\n", 0o644)]);
    oci_layout(
        &dir.join("image-a"),
        &[busybox_layer(), files, over],
        serde_json::json!({"Env": ["PATH=/bin", "GREETING=from-image-a"], "WorkingDir": "/srv/app"}),
    );
    registry.push(&dir.join("image-a"), "a:1");
    oci_layout(
        &dir.join("image-b"),
        &[busybox_layer(), layer(&[Entry::File("etc/os-release", b"ID=image-b\n", 0o644)])],
        serde_json::json!({"Env": ["PATH=/bin"]}),
    );
    registry.push(&dir.join("image-b"), "b:1");
    registry.layers_of("a", "1").await
}
