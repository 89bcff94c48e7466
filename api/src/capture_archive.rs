//! A kept capture's tree streamed as a tar archive: the worktree as a
//! restore would make it (both classes; names as bytes, modes, times,
//! symlinks, hard links, fifos, empty directories, and holes left holes),
//! read from the object store an object at a time as the body is sent.

use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use sluice_capture_store::reader::{CaptureReader, CaptureTree};
use sluice_protocol::registrar::{Entry, EntryKind, worktree_path};
use sluice_protocol::tar::{self, Header, Member};

/// How many objects of a file are read ahead of the one being sent.
const READ_AHEAD: usize = 4;

type Chunk = Result<Bytes, std::io::Error>;
type Sender = futures::channel::mpsc::Sender<Chunk>;

/// Why the archive stopped before its end.
enum Stopped {
    /// The client went away: nothing more to say.
    Gone,
    /// An object could not be read or was not what the manifest says: the
    /// body is cut with an error, so no client takes it for whole.
    Failed(String),
}

/// The archive's body. Its members are sent as they are read; the body
/// ends with an error rather than short if the store fails mid-way.
pub fn body(tree: CaptureTree, reader: Arc<CaptureReader>) -> axum::body::Body {
    let (mut sender, receiver) = futures::channel::mpsc::channel::<Chunk>(2);
    tokio::spawn(async move {
        if let Err(Stopped::Failed(why)) = write_archive(&tree, &reader, &mut sender).await {
            tracing::warn!(error = %why, "a capture's archive was cut short");
            let _ = sender.send(Err(std::io::Error::other(why))).await;
        }
    });
    axum::body::Body::from_stream(receiver)
}

/// The entries in the order they are archived: each once, by worktree
/// path, hard links after every file (so a link's target comes first).
fn members(tree: &CaptureTree) -> Vec<(Vec<u8>, &Entry)> {
    let mut all: Vec<(Vec<u8>, &Entry)> = tree
        .small
        .entries
        .iter()
        .chain(&tree.bulk.entries)
        .filter_map(|e| worktree_path(&e.path).map(|p| (p, e)))
        .collect();
    all.sort_by(|a, b| (a.1.hard_link.is_some(), &a.0).cmp(&(b.1.hard_link.is_some(), &b.0)));
    all.dedup_by(|a, b| a.0 == b.0);
    all
}

async fn write_archive(tree: &CaptureTree, reader: &Arc<CaptureReader>, out: &mut Sender) -> Result<(), Stopped> {
    let members = members(tree);
    let files: std::collections::HashSet<&[u8]> = members
        .iter()
        .filter(|(_, e)| e.kind == EntryKind::File && e.hard_link.is_none())
        .map(|(p, _)| p.as_slice())
        .collect();
    for (path, entry) in &members {
        let link = entry.hard_link.as_ref().and_then(worktree_path).filter(|t| files.contains(t.as_slice()));
        let target = entry.target.as_ref().map_or(&[][..], |t| t.as_bytes());
        let header = |member| Header { path, mode: entry.mode, mtime_ms: entry.mtime_ms, member };
        match (entry.kind, &link) {
            (EntryKind::File, Some(link)) => send(out, header(Member::HardLink { target: link }).encode()).await?,
            (EntryKind::File, None) => write_file(path, entry, reader, out).await?,
            (EntryKind::Dir, _) => send(out, header(Member::Dir).encode()).await?,
            (EntryKind::Symlink, _) => send(out, header(Member::Symlink { target }).encode()).await?,
            (EntryKind::Fifo, _) => send(out, header(Member::Fifo).encode()).await?,
        }
    }
    send(out, tar::END.to_vec()).await
}

/// One file: its data, or for a file with holes, its data regions only.
async fn write_file(path: &[u8], entry: &Entry, reader: &Arc<CaptureReader>, out: &mut Sender) -> Result<(), Stopped> {
    let failed = |e: sluice_capture_store::objects::ObjectsError| Stopped::Failed(e.to_string());
    // Only a file of several objects can have a hole.
    let shapes =
        if entry.objects.len() > 1 { Some(reader.shapes(&entry.objects).await.map_err(failed)?) } else { None };
    let mut regions: Vec<(u64, u64)> = Vec::new();
    let mut at = 0u64;
    for shape in shapes.iter().flatten() {
        if !shape.zeros {
            match regions.last_mut() {
                Some((offset, len)) if *offset + *len == at => *len += shape.len,
                _ => regions.push((at, shape.len)),
            }
        }
        at += shape.len;
    }
    if shapes.is_some() && at != entry.size {
        return Err(Stopped::Failed(format!("{}: its objects hold {at} bytes, not {}", entry.path, entry.size)));
    }
    let holes = shapes.iter().flatten().any(|s| s.zeros);
    let member =
        if holes { Member::Sparse { size: entry.size, data: &regions } } else { Member::File { size: entry.size } };
    let header = Header { path, mode: entry.mode, mtime_ms: entry.mtime_ms, member };
    let data_len = header.data_len();
    send(out, header.encode()).await?;
    let keys: Vec<String> = match &shapes {
        Some(shapes) => entry.objects.iter().zip(shapes).filter(|(_, s)| !s.zeros).map(|(k, _)| k.clone()).collect(),
        None => entry.objects.clone(),
    };
    let read = |key: String| {
        let reader = reader.clone();
        async move { reader.object(&key).await }
    };
    let mut reads = futures::stream::iter(keys).map(read).buffered(READ_AHEAD);
    let mut sent = 0u64;
    while let Some(read) = reads.next().await {
        let bytes = read.map_err(failed)?;
        sent += bytes.len() as u64;
        if sent > data_len {
            break;
        }
        send(out, bytes).await?;
    }
    if sent != data_len {
        return Err(Stopped::Failed(format!("{}: its objects hold {sent} bytes, not {data_len}", entry.path)));
    }
    send(out, vec![0; tar::padding(data_len)]).await
}

async fn send(out: &mut Sender, bytes: Vec<u8>) -> Result<(), Stopped> {
    if bytes.is_empty() {
        return Ok(());
    }
    out.send(Ok(Bytes::from(bytes))).await.map_err(|_| Stopped::Gone)
}
