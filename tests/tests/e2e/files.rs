//! The live worktree's files through the workspaces API, against a real
//! `serve` and its executor: a 100 MiB file round-trips byte for byte, a
//! range reads a part, directories are listed, made, moved and removed,
//! files are the workload's, and every way out of the worktree (an
//! absolute path, `..`, a NUL, a symlink to /etc or to a file outside) is
//! refused with nothing outside changed.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Server};

struct Files<'a> {
    server: &'a Server,
    id: String,
}

impl Files<'_> {
    fn url(&self, path: &str, query: &str) -> String {
        let path = urlencoding(path);
        format!("{}/v1/workspaces/{}/files?ownerUserId=alice&path={path}{query}", self.server.base, self.id)
    }

    async fn put(&self, path: &str, query: &str, bytes: Vec<u8>) -> (u16, Value) {
        let request = self.server.client.put(self.url(path, query)).bearer_auth(&self.server.token);
        let answer = request.header("content-type", "application/octet-stream").body(bytes).send().await.unwrap();
        sluice_tests::read(answer).await
    }

    async fn get(&self, path: &str, range: Option<&str>) -> reqwest::Response {
        let mut request = self.server.client.get(self.url(path, "")).bearer_auth(&self.server.token);
        if let Some(range) = range {
            request = request.header("range", range);
        }
        request.send().await.unwrap()
    }

    async fn post(&self, op: &str, body: Value) -> (u16, Value) {
        self.server.post(&format!("/v1/workspaces/{}/files/{op}", self.id), &body).await
    }

    async fn list(&self, path: &str, depth: u32) -> Value {
        let path = urlencoding(path);
        let (status, listed) = self
            .server
            .get(&format!("/v1/workspaces/{}/files/list?ownerUserId=alice&path={path}&depth={depth}", self.id))
            .await;
        assert_eq!(status, 200, "{listed}");
        listed
    }

    async fn sh(&self, script: &str) -> String {
        let body = json!({"ownerUserId": "alice", "commands": [{"argv": ["sh", "-c", script]}]});
        let (status, run) = self.server.post(&format!("/v1/workspaces/{}/exec", self.id), &body).await;
        assert_eq!(status, 202, "{run}");
        let ended = self.server.run_ended("alice", run["runId"].as_str().unwrap(), Duration::from_secs(30)).await;
        assert_eq!(ended["commands"][0]["exitCode"], 0, "{ended}");
        ended["commands"][0]["stdout"].as_str().unwrap().to_owned()
    }
}

fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// A tree as (path, kind, mode, contents or link target), sorted.
fn tree(root: &std::path::Path) -> Vec<(String, &'static str, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let mode = meta.permissions().mode() & 0o777;
            if meta.file_type().is_symlink() {
                found.push((name, "link", 0, std::fs::read_link(&path).unwrap().display().to_string().into_bytes()));
            } else if meta.is_dir() {
                found.push((name, "dir", mode, Vec::new()));
                stack.push(path);
            } else {
                found.push((name, "file", mode, std::fs::read(&path).unwrap()));
            }
        }
    }
    found.sort();
    found
}

/// Bytes no two runs of a simple pattern would match by chance.
fn noise(len: usize) -> Vec<u8> {
    let mut state = 0x9e3779b97f4a7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[tokio::test]
async fn worktree_files_move_in_and_out_and_never_outside() {
    let dir = DataDir::new();
    let server = Server::start_with(&dir.path(), Options::serve().args(["--runtime", "local"])).await;
    let body = json!({
        "ownerUserId": "alice", "registryId": "host", "repository": "sluice-test/busybox", "tag": "1",
        "spec": {"command": ["sleep", "600"]}, "waitFor": "ready",
    });
    let (status, created) = server.post("/v1/workspaces", &body).await;
    assert_eq!((status, created["status"].as_str()), (202, Some("ready")), "{created}");
    let files = Files { server: &server, id: created["workspaceId"].as_str().unwrap().to_owned() };

    // 100 MiB in and out, byte for byte; a range reads its part.
    let big = noise(100 << 20);
    let (status, written) = files.put("data/big.bin", "&parents=true&mode=640", big.clone()).await;
    assert_eq!(status, 200, "{written}");
    assert_eq!(
        (written["size"].as_u64(), written["mode"].as_u64(), written["kind"].as_str()),
        (Some(100 << 20), Some(0o640), Some("file"))
    );
    let answer = files.get("data/big.bin", None).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["content-length"], (100u64 << 20).to_string().as_str());
    let read = answer.bytes().await.unwrap();
    assert!(read.len() == big.len() && read[..] == big[..], "the file came back as it went");
    let part = files.get("data/big.bin", Some("bytes=1000-1999")).await;
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"], format!("bytes 1000-1999/{}", 100u64 << 20).as_str());
    assert_eq!(part.bytes().await.unwrap()[..], big[1000..2000]);
    let tail = files.get("data/big.bin", Some("bytes=-5")).await;
    assert_eq!(tail.bytes().await.unwrap()[..], big[big.len() - 5..]);
    assert_eq!(files.get("data/big.bin", Some(&format!("bytes={}-", 100u64 << 20))).await.status(), 416);
    drop(read);

    // The workload's file, where the workload sees it.
    let (owner, seen) = (files.sh("id -u").await, files.sh("stat -c %u data/big.bin; wc -c < data/big.bin").await);
    assert_eq!(seen.lines().collect::<Vec<_>>(), [owner.trim(), (100u64 << 20).to_string().as_str()]);

    // Listed, made, moved, removed.
    assert_eq!(files.post("mkdir", json!({"ownerUserId": "alice", "path": "a/b/c", "parents": true})).await.0, 204);
    assert_eq!(files.put("a/b/note.txt", "", b"note".to_vec()).await.0, 200);
    let listed = files.list("a", 3).await;
    let names: Vec<&str> = listed["entries"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["b", "b/c", "b/note.txt"], "{listed}");
    let moved = files.post("move", json!({"ownerUserId": "alice", "from": "a/b/note.txt", "to": "note.txt"})).await;
    assert_eq!(moved.0, 204, "{}", moved.1);
    assert_eq!(files.get("note.txt", None).await.bytes().await.unwrap()[..], b"note"[..]);
    assert_eq!(files.put("other.txt", "", b"other".to_vec()).await.0, 200);
    let clash = files.post("move", json!({"ownerUserId": "alice", "from": "note.txt", "to": "other.txt"})).await;
    assert_eq!((clash.0, clash.1["code"].as_str()), (409, Some("file-exists")), "{}", clash.1);
    let full = files.post("remove", json!({"ownerUserId": "alice", "path": "a"})).await;
    assert_eq!((full.0, full.1["code"].as_str()), (409, Some("directory-not-empty")), "{}", full.1);
    assert_eq!(files.post("remove", json!({"ownerUserId": "alice", "path": "a", "recursive": true})).await.0, 204);
    let gone = files.get("a/b/c", None).await;
    assert_eq!(gone.status(), 404);
    let (status, missing) = sluice_tests::read(files.get("no/such/file", None).await).await;
    assert_eq!((status, missing["_tag"].as_str()), (404, Some("WorktreeFileNotFoundError")));
    assert_eq!(files.get("data", None).await.status(), 409, "a directory is not read as a file");

    // A watch sees an exec's create, change, rename and removal, in order.
    assert_eq!(
        files.post("mkdir", json!({"ownerUserId": "alice", "path": "watched/in", "parents": true})).await.0,
        204
    );
    let watch_url =
        format!("{}/v1/workspaces/{}/files/watch?ownerUserId=alice&path=watched&recursive=true", server.base, files.id);
    let watching = server.client.get(watch_url).bearer_auth(&server.token).send().await.unwrap();
    assert_eq!(watching.status(), 200);
    let mut changes = sluice_tests::server::SseReader::new(watching);
    files.sh("echo a > watched/in/f; echo b >> watched/in/f; mv watched/in/f watched/in/g; rm watched/in/g").await;
    let mut seen = Vec::new();
    while let Some(change) = changes.next(Duration::from_secs(10)).await {
        seen.push((
            change.event.clone(),
            change.data["path"].as_str().unwrap_or("").to_owned(),
            change.data["from"].as_str().map(str::to_owned),
        ));
        if change.event == "removed" {
            break;
        }
    }
    let wanted = [
        ("created", "in/f", None),
        ("modified", "in/f", None),
        ("renamed", "in/g", Some("in/f")),
        ("removed", "in/g", None),
    ];
    let mut at = 0;
    for change in &seen {
        if at < wanted.len() && (change.0.as_str(), change.1.as_str(), change.2.as_deref()) == wanted[at] {
            at += 1;
        }
    }
    assert_eq!(at, wanted.len(), "in order: {seen:?}");
    drop(changes);

    // A tar of a tree (made and read back by GNU tar) unpacks and packs
    // back to the same tree; a hostile one is refused whole.
    let src = dir.root().join("tree");
    std::fs::create_dir_all(src.join("sub/deeper")).unwrap();
    std::fs::write(src.join("sub/deeper/file.txt"), b"deep").unwrap();
    std::fs::write(src.join("top.bin"), noise(300_000)).unwrap();
    std::os::unix::fs::symlink("sub/deeper/file.txt", src.join("link")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(src.join("top.bin"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let archive = dir.root().join("tree.tar");
    let made =
        std::process::Command::new("tar").arg("-cf").arg(&archive).arg("-C").arg(&src).arg(".").status().unwrap();
    assert!(made.success());
    let archive_url =
        |path: &str| format!("{}/v1/workspaces/{}/files/archive?ownerUserId=alice&path={path}", server.base, files.id);
    let unpacked = server
        .client
        .put(archive_url("unpacked/here"))
        .bearer_auth(&server.token)
        .body(std::fs::read(&archive).unwrap());
    let (status, counts) = sluice_tests::read(unpacked.send().await.unwrap()).await;
    assert_eq!(status, 200, "{counts}");
    assert_eq!((counts["files"].as_u64(), counts["symlinks"].as_u64()), (Some(2), Some(1)), "{counts}");
    let packed = server.client.get(archive_url("unpacked/here")).bearer_auth(&server.token).send().await.unwrap();
    assert_eq!(packed.headers()["content-type"], "application/x-tar");
    let back = dir.root().join("back");
    std::fs::create_dir_all(&back).unwrap();
    std::fs::write(dir.root().join("back.tar"), packed.bytes().await.unwrap()).unwrap();
    let read_back = std::process::Command::new("tar")
        .arg("-xf")
        .arg(dir.root().join("back.tar"))
        .arg("-C")
        .arg(&back)
        .status()
        .unwrap();
    assert!(read_back.success());
    assert_eq!(tree(&back), tree(&src), "the same tree came back");
    let hostile = dir.root().join("hostile.tar");
    let script = format!(
        "import io, tarfile\nwith tarfile.open('{}', 'w') as t:\n for name in ['fine.txt', '../../escape.txt']:\n  i = tarfile.TarInfo(name); i.size = 1; t.addfile(i, io.BytesIO(b'x'))\n",
        hostile.display()
    );
    assert!(std::process::Command::new("python3").arg("-c").arg(&script).status().unwrap().success());
    let refused =
        server.client.put(archive_url("hostile")).bearer_auth(&server.token).body(std::fs::read(&hostile).unwrap());
    let (status, refused) = sluice_tests::read(refused.send().await.unwrap()).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(files.list("hostile", 1).await["entries"], json!([]), "nothing of it was written");

    // Every way out is refused, and nothing outside changes.
    let outside = dir.root().join("outside.txt");
    std::fs::write(&outside, b"untouched").unwrap();
    files
        .sh(&format!(
            "ln -s /etc etc-link; ln -s {} outside-link; ln -s {} outside-dir",
            outside.display(),
            dir.root().display()
        ))
        .await;
    for (path, field) in [("../escape.txt", "path"), ("/etc/escape", "path"), ("a\0b", "path")] {
        let (status, refused) = files.put(path, "", b"x".to_vec()).await;
        assert_eq!(status, 400, "{path:?}: {refused}");
        assert!(refused["message"].as_str().unwrap().starts_with(field), "{refused}");
        assert_eq!(files.get(path, None).await.status(), 400, "{path:?}");
    }
    for path in ["etc-link/passwd", "outside-link", "outside-dir/outside.txt"] {
        let (status, refused) = sluice_tests::read(files.get(path, None).await).await;
        assert_eq!(status, 400, "{path}: {refused}");
        assert!(refused["message"].as_str().unwrap().contains("out of the worktree"), "{refused}");
    }
    for path in ["etc-link/passwd", "outside-dir/outside.txt"] {
        assert_eq!(files.put(path, "", b"overwritten".to_vec()).await.0, 400, "{path}");
    }
    // A write names the link itself: it replaces the link, inside.
    assert_eq!(files.put("outside-link", "", b"inside now".to_vec()).await.0, 200);
    assert_eq!(files.sh("cat outside-link").await, "inside now");
    assert_eq!(files.put("etc-link/sluice-escape", "", b"x".to_vec()).await.0, 400);
    assert!(!std::path::Path::new("/etc/sluice-escape").exists());
    let (status, _) =
        files.post("move", json!({"ownerUserId": "alice", "from": "note.txt", "to": "outside-dir/moved.txt"})).await;
    assert_eq!(status, 400);
    let (status, _) =
        files.post("mkdir", json!({"ownerUserId": "alice", "path": "outside-dir/made", "parents": true})).await;
    assert_eq!(status, 400);
    // Removing a link removes the link, not what it points at.
    assert_eq!(
        files.post("remove", json!({"ownerUserId": "alice", "path": "outside-dir", "recursive": true})).await.0,
        204
    );
    assert!(dir.root().join("outside.txt").exists());
    assert_eq!(std::fs::read(&outside).unwrap(), b"untouched");
    assert!(!dir.root().join("moved.txt").exists() && !dir.root().join("made").exists());
    server.stop();
}
