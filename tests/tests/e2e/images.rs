//! Images on the local runtime, from a real registry (Debian's
//! `docker-registry` on loopback) holding images the test makes: each
//! workspace runs on the root filesystem its image names, with the
//! image's whiteouts, opaque directories and environment applied; a
//! tampered blob is refused; eight concurrent creates of an uncached image
//! fetch each layer once; a registry that is down fails the launch by name.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::registry::{Entry, Registry, busybox_layer, layer, oci_layout, push_test_images};
use sluice_tests::server::{DataDir, Options, Server};
use sluice_tests::*;

fn on(registry: &str, repository: &str, extra: Value) -> Value {
    let mut body = json!({
        "ownerUserId": "alice", "registryId": registry, "repository": repository, "tag": "1",
        "spec": {"command": ["sleep", "600"]},
    });
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    body
}

async fn exec(server: &Server, id: &str, argv: &[&str]) -> Value {
    server.exec_argv(id, argv).await
}

fn bubblewrap() -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    present("bubblewrap (images run inside it)", std::env::split_paths(&path).any(|d| d.join("bwrap").is_file()))
}

#[tokio::test]
async fn each_workspace_runs_on_the_root_its_image_names() {
    let dir = DataDir::new();
    let Some(registry) = Registry::start(dir.root()) else { return };
    if !bubblewrap() {
        return;
    }
    let a_layers = push_test_images(dir.root(), &registry).await;
    let mapping = format!("test=http://{}", registry.host());
    let server =
        Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local", "--registry", &mapping])).await;

    // Eight creates of the uncached image at once.
    let body = on("test", "a", json!({"waitFor": "ready"}));
    let creates = (0..8).map(|_| server.post("/v1/workspaces", &body));
    let created: Vec<String> = futures::future::join_all(creates)
        .await
        .into_iter()
        .map(|(status, a)| {
            assert_eq!((status, a["status"].as_str()), (202, Some("ready")), "{a}");
            a["workspaceId"].as_str().unwrap().to_owned()
        })
        .collect();
    let a_id = created[0].as_str();
    let (status, b) = server.post("/v1/workspaces", &on("test", "b", json!({"waitFor": "ready"}))).await;
    assert_eq!((status, b["status"].as_str()), (202, Some("ready")), "{b}");
    let b_id = b["workspaceId"].as_str().unwrap();

    let host = std::fs::read_to_string("/etc/os-release").unwrap();
    let read = exec(&server, a_id, &["cat", "/etc/os-release"]).await;
    assert_eq!(read["stdout"], "ID=image-a\n", "{read}");
    assert_ne!(read["stdout"].as_str().unwrap(), host);
    let read = exec(&server, b_id, &["cat", "/etc/os-release"]).await;
    assert_eq!(read["stdout"], "ID=image-b\n", "{read}");

    // The third layer's whiteout and opaque directory hold.
    let gone = exec(&server, a_id, &["test", "-e", "/etc/gone"]).await;
    assert_eq!(gone["exitCode"], 1, "{gone}");
    let listed = exec(&server, a_id, &["ls", "/data"]).await;
    assert_eq!(listed["stdout"], "new\n", "{listed}");
    // The image's environment and working directory apply; a command's
    // own cwd still wins, and image b, naming none, starts in the worktree.
    let env = exec(&server, a_id, &["env"]).await;
    assert!(env["stdout"].as_str().unwrap().contains("GREETING=from-image-a"), "{env}");
    let here = exec(&server, a_id, &["pwd"]).await;
    assert_eq!(here["stdout"], "/srv/app\n", "{here}");
    let (status, run) = server
        .post(
            &format!("/v1/workspaces/{a_id}/exec"),
            &json!({"ownerUserId": "alice", "commands": [{"argv": ["pwd"], "cwd": "/workspace"}]}),
        )
        .await;
    assert_eq!(status, 202, "{run}");
    let ended = server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(30)).await;
    assert_eq!(ended["commands"][0]["stdout"], "/workspace\n", "{ended}");
    let here = exec(&server, b_id, &["pwd"]).await;
    assert_eq!(here["stdout"], "/workspace\n", "{here}");
    // Writes go to the executor's own upper layer, not the cached image.
    let wrote = exec(&server, a_id, &["sh", "-c", "echo mine > /data/new && cat /data/new"]).await;
    let fresh = exec(&server, &created[1], &["cat", "/data/new"]).await;
    assert_eq!(fresh["stdout"], "3\n", "a second executor of the image sees the image, not another's writes: {wrote}");

    // The run records the image by its manifest digest.
    let (_, read) = server.get(&format!("/v1/workspaces/{a_id}?ownerUserId=alice")).await;
    let published = &read["publishedImage"];
    assert!(published["digest"].as_str().unwrap().starts_with("sha256:"), "{read}");
    // Each layer was fetched once, for all eight workspaces: two pulls.
    for digest in &a_layers {
        assert_eq!(registry.blob_gets(digest), 1, "layer {digest}");
    }
    // Each pull's progress is on the feed, under the workspace that waited
    // for it, ending with all of its bytes.
    let (status, fed) = server.read_stream("/v1/events/stream", None, 2000, Duration::from_secs(2)).await;
    assert_eq!(status, 200);
    let pulls: Vec<_> = fed.iter().filter(|e| e.event == "sluice.image.pulling").map(|e| &e.data).collect();
    // The last of a's reports is its end (earlier ones, a second apart, say how far it was).
    let a_done = pulls.iter().rev().find(|p| p["data"]["image"] == "test/a:1").expect("a's pull is reported");
    let total = a_done["data"]["totalBytes"].as_u64().unwrap();
    assert!(total > 1_000_000 && a_done["data"]["doneBytes"] == total, "{a_done}");
    assert!(created.iter().any(|id| a_done["workspaceId"] == id.as_str()), "{a_done}");
    let pulled = server.metric(r#"sluice_image_pulls_total{outcome="pulled",runtime="local"}"#).await;
    assert_eq!(pulled, Some(2.0));
    assert!(server.metric("sluice_image_pull_bytes_total").await.unwrap() > 1_000_000.0, "busybox went over the wire");
    let cached = wait_for(Duration::from_secs(30), || async {
        server.metric("sluice_image_cache_images").await.filter(|n| *n == 2.0)
    });
    assert!(cached.await.is_some(), "the cache gauge counts a and b");
}

#[tokio::test]
async fn a_tampered_blob_is_refused_and_a_registry_that_is_down_is_named() {
    let dir = DataDir::new();
    let Some(registry) = Registry::start(dir.root()) else { return };
    if !bubblewrap() {
        return;
    }
    let a_layers = push_test_images(dir.root(), &registry).await;
    // One byte of image a's last layer changed where the registry keeps it.
    let blob = registry.blob_file(a_layers.last().unwrap());
    let mut bytes = std::fs::read(&blob).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&blob, bytes).unwrap();
    let mapping = format!("test=http://{},gone=http://127.0.0.1:{}", registry.host(), free_port());
    let server =
        Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local", "--registry", &mapping])).await;

    let (status, a) = server.post("/v1/workspaces", &on("test", "a", json!({}))).await;
    assert_eq!(status, 202, "{a}");
    let failed = server
        .wait_for("alice", a["workspaceId"].as_str().unwrap(), Duration::from_secs(60), |w| w["status"] == "failed")
        .await;
    let error = failed["error"].to_string();
    assert!(error.contains("does not match its digest") && error.contains("layer 3"), "{failed}");
    assert_eq!(failed["error"]["code"], "image-digest-mismatch", "{failed}");
    let failures = server.metric(r#"sluice_image_pulls_total{outcome="failed",runtime="local"}"#).await;
    assert!(failures.unwrap() >= 1.0);

    let (status, gone) = server.post("/v1/workspaces", &on("gone", "a", json!({}))).await;
    assert_eq!(status, 202, "{gone}");
    let id = gone["workspaceId"].as_str().unwrap();
    let failed = server.wait_for("alice", id, Duration::from_secs(120), |w| w["status"] == "failed").await;
    assert!(failed["error"].to_string().contains("registry 127.0.0.1:"), "{failed}");
    let events = server.stored_events(id).await;
    let retried = events.iter().filter(|e| e["type"] == "attempt.queued").count();
    assert!(retried > 1, "the launch was tried again: {events:?}");
}

/// The images the API lists for the server's one host, once a heartbeat
/// carried them: (names, executors) by name.
async fn listed(server: &Server, want: impl Fn(&[(String, u64)]) -> bool) -> Vec<(String, u64)> {
    let mut last = Vec::new();
    for _ in 0..120 {
        let (status, images) = server.get("/v1/images").await;
        assert_eq!(status, 200, "{images}");
        last = images["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["names"][0].as_str().unwrap_or("").to_owned(), i["executors"].as_u64().unwrap()))
            .collect();
        last.sort();
        if want(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("the images listed never matched: {last:?}")
}

#[tokio::test]
async fn the_cache_bound_evicts_only_images_no_executor_runs_on() {
    let dir = DataDir::new();
    let Some(registry) = Registry::start(dir.root()) else { return };
    if !bubblewrap() {
        return;
    }
    push_test_images(dir.root(), &registry).await;
    let c = dir.root().join("image-c");
    oci_layout(&c, &[busybox_layer(), layer(&[Entry::File("etc/os-release", b"ID=image-c\n", 0o644)])], json!({}));
    registry.push(&c, "c:1");
    let mapping = format!("test=http://{}", registry.host());
    // A bound far below any image: every pull is followed by an eviction.
    let options =
        Options::serve().args(["--runtime", "local", "--registry", &mapping, "--image-cache-max-gib", "0.000001"]);
    let server = Server::start_with(&dir.path(), options).await;

    let ready = |repository: &str| on("test", repository, json!({"waitFor": "ready"}));
    let (_, a) = server.post("/v1/workspaces", &ready("a")).await;
    assert_eq!(a["status"], "ready", "{a}");
    let (_, b) = server.post("/v1/workspaces", &ready("b")).await;
    assert_eq!(b["status"], "ready", "{b}");
    // Both run: pulling b evicted neither.
    let both = listed(&server, |l| l.len() == 2).await;
    assert_eq!(both, vec![("test/a:1".to_owned(), 1), ("test/b:1".to_owned(), 1)]);
    let read = exec(&server, a["workspaceId"].as_str().unwrap(), &["cat", "/etc/os-release"]).await;
    assert_eq!(read["stdout"], "ID=image-a\n", "a's root is still there: {read}");

    // Once a's executor is gone, the next pull evicts a, and only a.
    let a_id = a["workspaceId"].as_str().unwrap();
    let (status, _) = server.post(&format!("/v1/workspaces/{a_id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    server.wait_for("alice", a_id, Duration::from_secs(60), |w| w["status"] == "stopped").await;
    let a_run = dir.executors().join(a["runId"].as_str().unwrap());
    assert!(wait_for_blocking(Duration::from_secs(30), || (!a_run.exists()).then_some(())).is_some());
    let (_, c) = server.post("/v1/workspaces", &ready("c")).await;
    assert_eq!(c["status"], "ready", "{c}");
    let after = listed(&server, |l| l.len() == 2 && l.iter().any(|(n, _)| n == "test/c:1")).await;
    assert_eq!(after, vec![("test/b:1".to_owned(), 1), ("test/c:1".to_owned(), 1)]);
    let read = exec(&server, b["workspaceId"].as_str().unwrap(), &["cat", "/etc/os-release"]).await;
    assert_eq!(read["stdout"], "ID=image-b\n", "{read}");

    // The CLI shows the same.
    let out = std::process::Command::new(sluice_binary())
        .args(["images", "--api-url", &server.base])
        .env("SLUICE_API_TOKEN", &server.token)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("test/b:1") && !text.contains("test/a:1"), "{text}");
}

#[tokio::test]
async fn a_registry_that_asks_for_a_sign_in_gets_the_one_the_operator_gave_and_no_log_shows_it() {
    const PASSWORD: &str = "s3cret-registry-password";
    let dir = DataDir::new();
    let Some(registry) = Registry::start_with_sign_in(dir.root(), "puller", PASSWORD) else { return };
    if !bubblewrap() {
        return;
    }
    push_test_images(dir.root(), &registry).await;
    let mapping = format!("test=http://{}", registry.host());

    // Without a sign-in the launch fails at once, saying so.
    let server =
        Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local", "--registry", &mapping])).await;
    let (_, refused) = server.post("/v1/workspaces", &on("test", "b", json!({}))).await;
    let id = refused["workspaceId"].as_str().unwrap();
    let failed = server.wait_for("alice", id, Duration::from_secs(60), |w| w["status"] == "failed").await;
    assert_eq!(failed["error"]["code"], "image-registry-auth", "{failed}");
    drop(server);

    // With Docker's config.json naming the registry's host, it pulls.
    let auth = dir.root().join("docker-config.json");
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("puller:{PASSWORD}"));
    std::fs::write(&auth, json!({"auths": {registry.host(): {"auth": encoded}}}).to_string()).unwrap();
    let options = Options::serve().args(["--runtime", "local", "--registry", &mapping, "--registry-auth-file"]);
    let server = Server::start_with(&dir.path(), options.arg(auth.to_str().unwrap())).await;
    let (_, b) = server.post("/v1/workspaces", &on("test", "b", json!({"waitFor": "ready"}))).await;
    assert_eq!(b["status"], "ready", "{b}");
    let read = exec(&server, b["workspaceId"].as_str().unwrap(), &["cat", "/etc/os-release"]).await;
    assert_eq!(read["stdout"], "ID=image-b\n", "{read}");
    let events = server.stored_events(b["workspaceId"].as_str().unwrap()).await;
    let log = server.stop();

    // `sluice images pull` signs in the same way: a into this host's
    // cache, then a again (asked of the registry, nothing fetched).
    let pull = || {
        let mut command = std::process::Command::new(sluice_binary());
        command.args(["images", "pull", "test/a:1", "--registry", &mapping, "--registry-auth-file"]).arg(&auth);
        command.arg("--data-dir").arg(dir.path()).output().unwrap()
    };
    let out = pull();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.contains("test/a:1") && said.contains("layers fetched (1 cached)"), "{said}");
    let out = pull();
    let again = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && again.contains("0 layers fetched (3 cached)"), "{again}");
    for text in [log, format!("{events:?}"), said] {
        assert!(!text.contains(PASSWORD) && !text.contains(&encoded), "the sign-in leaked");
    }
}

#[tokio::test]
async fn images_from_a_file_or_the_docker_engine_run_and_a_tampered_one_is_refused() {
    let dir = DataDir::new();
    if !bubblewrap() {
        return;
    }
    let layout = dir.root().join("layout");
    oci_layout(
        &layout,
        &[busybox_layer(), layer(&[Entry::File("etc/os-release", b"ID=imported\n", 0o644)])],
        json!({"Env": ["PATH=/bin"]}),
    );
    let archive = dir.root().join("layout.tar");
    let tar = std::process::Command::new("tar").arg("-C").arg(&layout).arg("-cf").arg(&archive).arg(".").status();
    assert!(tar.unwrap().success());
    let import_into = |data: &std::path::Path, file: &std::path::Path, name: Option<&str>| {
        let mut command = std::process::Command::new(sluice_binary());
        command.args(["images", "import"]).arg(file).arg("--data-dir").arg(data);
        if let Some(name) = name {
            command.args(["--name", name]);
        }
        command.output().unwrap()
    };
    let import = |file: &std::path::Path, name: Option<&str>| import_into(&dir.path(), file, name);
    let out = import(&archive, Some("sluice-test/imported:1"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("local/sluice-test/imported:1"));

    // One byte of a layer changed in the layout: a cache that lacks the
    // layer refuses it, and names nothing.
    let blobs: Vec<_> = std::fs::read_dir(layout.join("blobs/sha256")).unwrap().flatten().collect();
    let biggest = blobs.iter().max_by_key(|b| b.metadata().unwrap().len()).unwrap().path();
    let mut bytes = std::fs::read(&biggest).unwrap();
    bytes[1000] ^= 1;
    std::fs::write(&biggest, bytes).unwrap();
    let other = tempfile::tempdir().unwrap();
    let out = import_into(other.path(), &layout, Some("sluice-test/tampered:1"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("does not match its digest"), "{stderr}");
    assert_eq!(std::fs::read_dir(other.path().join("images/names")).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(other.path().join("images/tmp")).unwrap().count(), 0);

    let server = Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local"])).await;
    let (_, imported) =
        server.post("/v1/workspaces", &on("local", "sluice-test/imported", json!({"waitFor": "ready"}))).await;
    assert_eq!(imported["status"], "ready", "{imported}");
    let read = exec(&server, imported["workspaceId"].as_str().unwrap(), &["cat", "/etc/os-release"]).await;
    assert_eq!(read["stdout"], "ID=imported\n", "{read}");
    let (_, tampered) = server.post("/v1/workspaces", &on("local", "sluice-test/never-imported", json!({}))).await;
    let id = tampered["workspaceId"].as_str().unwrap();
    let failed = server.wait_for("alice", id, Duration::from_secs(60), |w| w["status"] == "failed").await;
    assert_eq!(failed["error"]["code"], "image-not-found", "{failed}");

    // By hand: an image an executor runs on stays; once none does, it goes.
    let images = |args: &[&str]| {
        let mut command = std::process::Command::new(sluice_binary());
        command.arg("images").args(args).arg("--data-dir").arg(dir.path()).output().unwrap()
    };
    let out = images(&["remove", "local/sluice-test/imported:1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("1 executors run on it"), "{stderr}");
    let imported_id = imported["workspaceId"].as_str().unwrap();
    let (status, _) =
        server.post(&format!("/v1/workspaces/{imported_id}/stop"), &json!({"ownerUserId": "alice"})).await;
    assert_eq!(status, 202);
    server.wait_for("alice", imported_id, Duration::from_secs(60), |w| w["status"] == "stopped").await;
    let run_dir = dir.executors().join(imported["runId"].as_str().unwrap());
    assert!(wait_for_blocking(Duration::from_secs(30), || (!run_dir.exists()).then_some(())).is_some());
    let out = images(&["prune"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("local/sluice-test/imported:1"));
    let out = images(&["remove", "local/sluice-test/imported:1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no image named"), "pruned already");
    assert_eq!(std::fs::read_dir(dir.path().join("images/rootfs")).unwrap().count(), 0);

    // Where the host has a Docker Engine, an image only it has is taken
    // from it; and a `docker save` archive of it imports by its own name.
    let Some(image) = docker_test_image() else { return };
    let (repository, tag) = image.split_once(':').unwrap();
    let mut body = on("local", repository, json!({"waitFor": "ready"}));
    body["tag"] = json!(tag);
    let (_, engined) = server.post("/v1/workspaces", &body).await;
    assert_eq!(engined["status"], "ready", "{engined}");
    let listed = exec(&server, engined["workspaceId"].as_str().unwrap(), &["ls", "/bin/busybox"]).await;
    assert_eq!(listed["exitCode"], 0, "{listed}");
    assert!(server.output().contains("image taken from the host's Docker Engine"));

    let saved = dir.root().join("saved.tar");
    let save = std::process::Command::new("docker").args(["save", "-o"]).arg(&saved).arg(image).status();
    assert!(save.unwrap().success());
    let fresh = tempfile::tempdir().unwrap();
    let out = import_into(fresh.path(), &saved, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("local/{image}")));
    assert_eq!(std::fs::read_dir(fresh.path().join("images/names")).unwrap().count(), 1);
}

/// Where the host cannot give an executor an overlay (here as root, told
/// `--image-roots copy`), an image runs on a copy of its tree of the run's
/// own, and `doctor` says so.
#[tokio::test]
async fn without_an_overlay_an_image_runs_on_a_copy_and_doctor_says_so() {
    let dir = DataDir::new();
    let Some(registry) = Registry::start(dir.root()) else { return };
    if !bubblewrap() || !root_for("an executor that could have an overlay") {
        return;
    }
    push_test_images(dir.root(), &registry).await;
    let mapping = format!("test=http://{}", registry.host());
    let flags = ["--runtime", "local", "--registry", &mapping, "--image-roots", "copy"];
    let server = Server::start_with(&dir.path(), Options::serve().args(flags)).await;
    let (status, b) = server.post("/v1/workspaces", &on("test", "b", json!({"waitFor": "ready"}))).await;
    assert_eq!((status, b["status"].as_str()), (202, Some("ready")), "{b}");
    let id = b["workspaceId"].as_str().unwrap();
    let read = exec(&server, id, &["cat", "/etc/os-release"]).await;
    assert_eq!(read["stdout"], "ID=image-b\n", "{read}");
    // The root is a tree of the run's own on the run's filesystem, not a
    // mount over the cache.
    use std::os::unix::fs::MetadataExt;
    let run_dir = dir.executors().join(b["runId"].as_str().unwrap());
    let root = std::fs::metadata(run_dir.join("root")).unwrap();
    assert_eq!(root.dev(), std::fs::metadata(&run_dir).unwrap().dev(), "no overlay is mounted");
    assert!(!run_dir.join("upper").exists());
    assert_eq!(std::fs::read_to_string(run_dir.join("root/etc/os-release")).unwrap(), "ID=image-b\n");
    drop(server);

    let out = std::process::Command::new(sluice_binary())
        .args(["doctor", "--image-roots", "copy", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}{}", String::from_utf8_lossy(&out.stderr));
    assert!(report.contains("image roots: a copy of the image per executor (--image-roots copy)"), "{report}");
}
