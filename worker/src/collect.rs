//! Collecting the object store: forget the captures no retention rule
//! keeps, then delete the objects nothing kept names.
//!
//! Live is every manifest document a kept capture, a session's head or a
//! snapshot names, every document of its delta chain, and every object of
//! the manifest it resolves to. An object is deleted only when it is not
//! live and was last written before the grace period, so one uploaded for
//! a capture not yet registered stays. While the sweep deletes it holds the
//! store's fence: no capture registers, and one whose objects were checked
//! before the fence checks them again. Killed at any point, it leaves only
//! dead objects behind and a fence that runs out.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use sluice_store::Store;
use sluice_store::clock::now_ms;
use sluice_store::collection::LiveManifest;

use crate::objects::{Objects, ObjectsError, StoredObject};
use crate::registrar::resolve_document;

/// How a collection runs.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// Objects written more recently than this are never deleted.
    pub grace: Duration,
    /// Report what would go, and delete nothing.
    pub dry_run: bool,
    /// How long the fence holds registrations off between renewals.
    pub hold: Duration,
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions { grace: Duration::from_secs(3600), dry_run: false, hold: Duration::from_secs(180) }
    }
}

/// What a collection did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collected {
    pub captures_forgotten: u64,
    pub objects_listed: u64,
    pub bytes_listed: u64,
    pub objects_live: u64,
    /// Dead, but written within the grace period.
    pub objects_young: u64,
    pub objects_deleted: u64,
    pub bytes_deleted: u64,
    /// Each session's stored bytes as recounted (its kept captures' need).
    pub sessions: BTreeMap<String, u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("the database: {0}")]
    Store(#[from] sluice_store::StoreError),
    #[error("the object store: {0}")]
    Objects(#[from] ObjectsError),
    #[error("another collection is deleting now")]
    Busy,
    #[error("the collection lost its hold on the store's fence: it stopped deleting")]
    LostHold,
}

/// How many deletions run at once, and how many between renewals.
const DELETE_CONCURRENCY: usize = 16;
const DELETE_BATCH: usize = 64;

/// One collection pass.
pub async fn collect(store: &Store, objects: &Objects, options: &CollectOptions) -> Result<Collected, CollectError> {
    let mut collected = Collected::default();
    let started = now_ms();
    // Retention first: what it forgets is dead below (a dry run only
    // leaves it out of what is live).
    let mut forgotten: HashSet<(String, u64)> = HashSet::new();
    for session in store.capture_session_ids().await? {
        let gone = store.forget_captures(&session, Default::default(), started, !options.dry_run).await?;
        collected.captures_forgotten += gone.len() as u64;
        forgotten.extend(gone.into_iter().map(|n| (session.clone(), n)));
    }
    // Listed before the fence: an object written after this is no candidate.
    let listed = objects.list().await?;
    if options.dry_run {
        sweep(store, objects, options, started, None, &forgotten, &listed, &mut collected).await?;
        return Ok(collected);
    }
    let mut attempts = 0;
    loop {
        attempts += 1;
        let until = now_ms() + options.hold.as_millis() as i64;
        let generation = store.begin_object_deletion(until).await?.ok_or(CollectError::Busy)?;
        let mut pass = Collected { captures_forgotten: collected.captures_forgotten, ..Default::default() };
        let result = sweep(store, objects, options, started, Some(generation), &forgotten, &listed, &mut pass).await;
        store.end_object_deletion(generation).await?;
        match result {
            // Reading what is live outlasted the fence before anything was
            // deleted: read it again under a new one.
            Err(CollectError::LostHold) if pass.objects_deleted == 0 && attempts < 3 => continue,
            other => return other.map(|()| pass),
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn sweep(
    store: &Store,
    objects: &Objects,
    options: &CollectOptions,
    started: i64,
    generation: Option<u64>,
    forgotten: &HashSet<(String, u64)>,
    listed: &[StoredObject],
    collected: &mut Collected,
) -> Result<(), CollectError> {
    // Read before what is live, so uploads from now on are counted on top.
    let counts = store.stored_counts().await?;
    let mut live_manifests = store.live_manifests().await?;
    live_manifests.retain(|m| match (&m.session_id, m.capture_n) {
        (Some(session), Some(n)) => !forgotten.contains(&(session.clone(), n)),
        _ => true,
    });
    let (live, by_session) = live_keys(objects, &live_manifests).await?;
    let sizes: HashMap<&str, u64> = listed.iter().map(|o| (o.key.as_str(), o.bytes)).collect();
    let cutoff = started - options.grace.as_millis() as i64;
    let mut dead: Vec<&StoredObject> = Vec::new();
    for object in listed {
        collected.objects_listed += 1;
        collected.bytes_listed += object.bytes;
        if live.contains(object.key.as_str()) {
            collected.objects_live += 1;
        } else if object.modified_ms >= cutoff {
            collected.objects_young += 1;
        } else {
            dead.push(object);
        }
    }
    for counted in &counts {
        let need: u64 = by_session
            .get(&counted.session_id)
            .map(|keys| keys.iter().map(|k| sizes.get(k.as_str()).copied().unwrap_or(0)).sum())
            .unwrap_or(0);
        collected.sessions.insert(counted.session_id.clone(), need);
    }
    let Some(generation) = generation else {
        collected.objects_deleted = dead.len() as u64;
        collected.bytes_deleted = dead.iter().map(|o| o.bytes).sum();
        return Ok(());
    };
    // Each batch begins with a renewal, and no deletion starts later than
    // half the hold after it: one in flight then still ends (its request is
    // bounded well inside the other half) before the fence could run out.
    let mut queue: std::collections::VecDeque<(String, u64)> = dead.iter().map(|o| (o.key.clone(), o.bytes)).collect();
    while !queue.is_empty() {
        let renewed = std::time::Instant::now();
        let until = now_ms() + options.hold.as_millis() as i64;
        if !store.renew_object_deletion(generation, until).await? {
            return Err(CollectError::LostHold);
        }
        let mut batch = queue.drain(..DELETE_BATCH.min(queue.len())).collect::<Vec<(String, u64)>>().into_iter();
        let mut unstarted: Vec<(String, u64)> = Vec::new();
        let mut in_flight = futures::stream::FuturesUnordered::new();
        loop {
            while in_flight.len() < DELETE_CONCURRENCY {
                let Some((key, bytes)) = batch.next() else { break };
                if renewed.elapsed() >= options.hold / 2 {
                    unstarted.push((key, bytes));
                    unstarted.extend(batch.by_ref());
                    break;
                }
                let objects = objects.clone();
                in_flight.push(async move { objects.delete(&key).await.map(|()| bytes) });
            }
            match in_flight.next().await {
                Some(deleted) => {
                    collected.bytes_deleted += deleted?;
                    collected.objects_deleted += 1;
                }
                None => break,
            }
        }
        // Out of time under this renewal: the rest go after the next one.
        for item in unstarted.into_iter().rev() {
            queue.push_front(item);
        }
    }
    for counted in &counts {
        store.recount_stored_bytes(counted, collected.sessions[&counted.session_id]).await?;
    }
    Ok(())
}

/// Every live key, and each session's (its documents and their objects).
async fn live_keys(
    objects: &Objects,
    manifests: &[LiveManifest],
) -> Result<(HashSet<String>, HashMap<String, HashSet<String>>), ObjectsError> {
    let mut live: HashSet<String> = HashSet::new();
    let mut by_session: HashMap<String, HashSet<String>> = HashMap::new();
    let mut resolved: HashMap<String, Vec<String>> = HashMap::new();
    for manifest in manifests {
        if !resolved.contains_key(&manifest.key) {
            // One that cannot be read stops the collection: what it names
            // is unknown, so nothing may be taken as dead.
            let (tree, mut keys) = resolve_document(objects, &manifest.key).await?;
            keys.extend(tree.object_keys().into_iter().map(str::to_owned));
            resolved.insert(manifest.key.clone(), keys);
        }
        let keys = &resolved[&manifest.key];
        live.extend(keys.iter().cloned());
        if let Some(session) = &manifest.session_id {
            by_session.entry(session.clone()).or_default().extend(keys.iter().cloned());
        }
    }
    Ok((live, by_session))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::{ObjectStoreUrl, object_key};
    use bytes::Bytes;
    use sluice_protocol::capture::CaptureClass;
    use sluice_protocol::registrar::{Entry, EntryKind, Manifest};
    use sluice_store::capture::{ManifestHead, NewCapture};
    use sluice_store::testing;

    /// Makes the object `key` read as last written a day ago.
    fn age(dir: &std::path::Path, key: &str) {
        let path = dir.join("objects").join(&key[..2]).join(key);
        let day_ago = std::time::SystemTime::now() - Duration::from_secs(86_400);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(day_ago).unwrap();
    }

    #[tokio::test]
    async fn only_old_objects_nothing_kept_names_are_deleted() {
        for db in testing::databases().await {
            let store = testing::open(&db).await;
            let dir = tempfile::tempdir().unwrap();
            let objects = Objects::open(&ObjectStoreUrl::Local(dir.path().into())).unwrap();
            let (kept, dead, young) =
                (Bytes::from_static(b"kept"), Bytes::from_static(b"dead"), Bytes::from_static(b"new"));
            for bytes in [&kept, &dead, &young] {
                objects.put(bytes.clone()).await.unwrap();
            }
            let entry = Entry {
                path: "tree/a".into(),
                kind: EntryKind::File,
                mode: 0o644,
                size: 4,
                mtime_ms: 0,
                objects: vec![object_key(&kept)],
                target: None,
                hard_link: None,
            };
            let document = crate::registrar::store_owned_manifest(&objects, &Manifest { entries: vec![entry] }, "t")
                .await
                .unwrap();
            let (session, _) = store.create_capture_session("alice", None, Default::default()).await.unwrap();
            store.claim_capture_session(&session.id, "run-a", "l", None).await.unwrap();
            let capture = NewCapture {
                epoch: 1,
                n: 1,
                run_id: "run-a".into(),
                launch: "l".into(),
                classes: vec![(CaptureClass::Small, ManifestHead { key: document.clone(), depth: 0 })],
                bytes: 4,
                used_bytes: 4,
                origin: sluice_protocol::Origin {
                    epoch: 1,
                    launch: "l".into(),
                    boot_id: "b".into(),
                    boot_generation: 1,
                    observation: 1,
                    head_n: None,
                },
                sweep_generation: store.object_sweep_generation().await.unwrap(),
                counts: Default::default(),
            };
            store.register_capture(&session.id, &capture).await.unwrap();
            for key in [object_key(&kept), object_key(&dead), document.clone()] {
                age(dir.path(), &key);
            }

            let options = CollectOptions { dry_run: true, ..Default::default() };
            let dry = collect(&store, &objects, &options).await.unwrap();
            assert_eq!((dry.objects_listed, dry.objects_live, dry.objects_young), (4, 2, 1), "{}", db.label);
            assert_eq!((dry.objects_deleted, dry.bytes_deleted), (1, 4));
            assert!(objects.missing(&[object_key(&dead)]).await.unwrap().is_empty(), "a dry run deletes nothing");

            let done = collect(&store, &objects, &CollectOptions::default()).await.unwrap();
            assert_eq!(done.objects_deleted, 1, "{}", db.label);
            let all = [object_key(&kept), object_key(&dead), object_key(&young), document.clone()];
            assert_eq!(objects.missing(&all).await.unwrap(), vec![object_key(&dead)], "{}", db.label);
            let need = done.sessions[&session.id];
            assert_eq!(store.capture_session(&session.id).await.unwrap().unwrap().stored_bytes, need);
            assert!(need > 4, "the object and its manifest document: {need}");

            // One collection deletes at a time.
            let held = store.begin_object_deletion(now_ms() + 60_000).await.unwrap().unwrap();
            let busy = collect(&store, &objects, &CollectOptions::default()).await.unwrap_err();
            assert!(matches!(busy, CollectError::Busy), "{}: {busy}", db.label);
            store.end_object_deletion(held).await.unwrap();
        }
    }
}
