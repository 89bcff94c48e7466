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
//!
//! Packs go by [`sluice_domain::packing::plan`]: one with nothing live is
//! deleted, one mostly dead (or small, with others) has its live members
//! written into a new pack first. The new pack holds them before the old
//! one lets them go, in one transaction, so no kill loses one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use sluice_domain::packing::{self, PackFate, PackView};
use sluice_store::Store;
use sluice_store::clock::now_ms;
use sluice_store::collection::LiveManifest;
use sluice_store::packs::{PackMember, PackState, RecordedPack};

use crate::objects::{Objects, ObjectsError, StoredObject, Verified};
use crate::packs::{PACK_TARGET_BYTES, PackBuilder, member_bytes};
use crate::registrar::resolve_document;
use sluice_domain::ids::SessionId;

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
    /// Everything deleted: objects, packs, and the dead part of packs rewritten.
    pub bytes_deleted: u64,
    pub packs_listed: u64,
    pub pack_bytes_listed: u64,
    pub packs_deleted: u64,
    /// Packs whose live members were written into new packs.
    pub packs_rewritten: u64,
    /// Each session's stored bytes as recounted (its kept captures' need).
    pub sessions: BTreeMap<SessionId, u64>,
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
    let mut forgotten: HashSet<(SessionId, u64)> = HashSet::new();
    for session in store.capture_session_ids().await? {
        let gone = store.forget_captures(&session, Default::default(), started, !options.dry_run).await?;
        collected.captures_forgotten += gone.len() as u64;
        forgotten.extend(gone.into_iter().map(|n| (session.clone(), n)));
    }
    // Listed before the fence: an object written after this is no candidate.
    let listed = Listed { objects: objects.list().await?, packs: objects.list_packs().await? };
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
    forgotten: &HashSet<(SessionId, u64)>,
    listed: &Listed,
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
    let recorded = store.recorded_packs().await?;
    let mut sizes: HashMap<&str, u64> = listed.objects.iter().map(|o| (o.key.as_str(), o.bytes)).collect();
    for member in recorded.iter().flat_map(|p| &p.members) {
        sizes.insert(member.object_key.as_str(), member.length);
    }
    let cutoff = started - options.grace.as_millis() as i64;
    let mut dead: Vec<&StoredObject> = Vec::new();
    for object in &listed.objects {
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
    let packs = pack_plan(&recorded, &listed.packs, &live, cutoff);
    collected.packs_listed = listed.packs.len() as u64;
    collected.pack_bytes_listed = listed.packs.iter().map(|p| p.bytes).sum();
    let Some(generation) = generation else {
        collected.objects_deleted = dead.len() as u64;
        collected.bytes_deleted = dead.iter().map(|o| o.bytes).sum();
        collected.packs_deleted = packs.delete.len() as u64;
        collected.packs_rewritten = packs.rewrite.len() as u64;
        collected.bytes_deleted += packs.delete.iter().map(|p| p.bytes).sum::<u64>();
        collected.bytes_deleted += packs.rewrite.iter().map(|p| p.bytes - p.live_bytes).sum::<u64>();
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
    sweep_packs(store, objects, options, generation, packs, collected).await?;
    for counted in &counts {
        store.recount_stored_bytes(counted, collected.sessions[&counted.session_id]).await?;
    }
    Ok(())
}

/// What the store held when the collection began.
struct Listed {
    objects: Vec<StoredObject>,
    packs: Vec<StoredObject>,
}

/// One pack a sweep acts on.
struct PackAction {
    key: String,
    /// `None`: a file no row names.
    state: Option<PackState>,
    bytes: u64,
    live_bytes: u64,
    /// The live members (for a rewrite).
    live: Vec<PackMember>,
}

#[derive(Default)]
struct PackPlan {
    delete: Vec<PackAction>,
    rewrite: Vec<PackAction>,
}

/// What becomes of each pack: rows and listed files together. A ready pack
/// whose file was not listed is left alone (it was written after the
/// listing, or something outside took its file: nothing is decided on a
/// file not seen).
fn pack_plan(recorded: &[RecordedPack], files: &[StoredObject], live: &HashSet<String>, cutoff: i64) -> PackPlan {
    let listed: HashMap<&str, &StoredObject> = files.iter().map(|f| (f.key.as_str(), f)).collect();
    let mut actions: Vec<PackAction> = Vec::new();
    let mut views: Vec<PackView> = Vec::new();
    for pack in recorded {
        if pack.state == PackState::Ready && !listed.contains_key(pack.pack_key.as_str()) {
            continue;
        }
        let live: Vec<PackMember> = pack.members.iter().filter(|m| live.contains(&m.object_key)).cloned().collect();
        let live_bytes = live.iter().map(|m| m.length).sum();
        views.push(PackView { state: Some(pack.state), bytes: pack.bytes, created_ms: pack.created_ms, live_bytes });
        actions.push(PackAction {
            key: pack.pack_key.clone(),
            state: Some(pack.state),
            bytes: pack.bytes,
            live_bytes,
            live,
        });
    }
    let with_rows: HashSet<&str> = recorded.iter().map(|p| p.pack_key.as_str()).collect();
    for file in files.iter().filter(|f| !with_rows.contains(f.key.as_str())) {
        views.push(PackView { state: None, bytes: file.bytes, created_ms: file.modified_ms, live_bytes: 0 });
        actions.push(PackAction {
            key: file.key.clone(),
            state: None,
            bytes: file.bytes,
            live_bytes: 0,
            live: Vec::new(),
        });
    }
    let mut plan = PackPlan::default();
    for (action, fate) in actions.into_iter().zip(packing::plan(&views, cutoff)) {
        match fate {
            PackFate::Keep => {}
            PackFate::Delete => plan.delete.push(action),
            PackFate::Rewrite => plan.rewrite.push(action),
        }
    }
    plan
}

/// Deletes and rewrites packs under the fence, renewing it before each.
async fn sweep_packs(
    store: &Store,
    objects: &Objects,
    options: &CollectOptions,
    generation: u64,
    plan: PackPlan,
    collected: &mut Collected,
) -> Result<(), CollectError> {
    let renew = || async {
        let until = now_ms() + options.hold.as_millis() as i64;
        match store.renew_object_deletion(generation, until).await? {
            true => Ok(()),
            false => Err(CollectError::LostHold),
        }
    };
    for pack in &plan.delete {
        renew().await?;
        let taken = match pack.state {
            None => store.claim_unrecorded_pack(&pack.key, pack.bytes).await?,
            Some(PackState::Deleting) => true,
            Some(state) => store.retire_pack(&pack.key, state).await?,
        };
        if !taken {
            continue;
        }
        objects.delete_pack(&pack.key).await?;
        store.forget_pack(&pack.key).await?;
        collected.packs_deleted += 1;
        collected.bytes_deleted += pack.bytes;
    }
    // Rewritten a new pack's worth at a time; each old pack goes whole
    // into one new one.
    let mut group: Vec<&PackAction> = Vec::new();
    let mut group_bytes = 0;
    for (i, pack) in plan.rewrite.iter().enumerate() {
        group.push(pack);
        group_bytes += pack.live_bytes;
        if group_bytes >= PACK_TARGET_BYTES as u64 || i + 1 == plan.rewrite.len() {
            renew().await?;
            rewrite(store, objects, &group, collected).await?;
            group.clear();
            group_bytes = 0;
        }
    }
    Ok(())
}

/// Writes the live members of `packs` into one new pack, moves them to it,
/// then deletes the old packs.
async fn rewrite(
    store: &Store,
    objects: &Objects,
    packs: &[&PackAction],
    collected: &mut Collected,
) -> Result<(), CollectError> {
    let mut builder = PackBuilder::new();
    for pack in packs {
        let bytes = objects.read_pack(&pack.key).await?;
        for member in &pack.live {
            let Ok(content) = member_bytes(&bytes, member) else {
                // A member that is not what its key says is not carried
                // over: the pack stays (and is reported) for an operator.
                tracing::warn!(pack = %pack.key, "a pack member does not match its key: the pack is not rewritten");
                return Ok(());
            };
            let object = Verified::check(member.object_key.clone(), Bytes::copy_from_slice(content));
            builder.add(&object.map_err(ObjectsError::from)?);
        }
    }
    let new_bytes = builder.len() as u64;
    let (into, moved) = objects.write_pack(builder.finish()).await?;
    let from: Vec<String> = packs.iter().map(|p| p.key.clone()).collect();
    if !store.repack(&from, &into, &moved).await? {
        return Err(CollectError::Objects(ObjectsError::Store(format!("the new pack {into} was taken while written"))));
    }
    for pack in packs {
        objects.delete_pack(&pack.key).await?;
        store.forget_pack(&pack.key).await?;
        collected.packs_rewritten += 1;
        collected.bytes_deleted += pack.bytes;
    }
    collected.bytes_deleted = collected.bytes_deleted.saturating_sub(new_bytes);
    Ok(())
}

/// Every live key, and each session's (its documents and their objects).
async fn live_keys(
    objects: &Objects,
    manifests: &[LiveManifest],
) -> Result<(HashSet<String>, HashMap<SessionId, HashSet<String>>), ObjectsError> {
    let mut live: HashSet<String> = HashSet::new();
    let mut by_session: HashMap<SessionId, HashSet<String>> = HashMap::new();
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
    use sluice_domain::ids::{LaunchId, OwnerId, RunId};
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

    /// Registers a capture whose one file names `keys`; answers the
    /// session and the capture's manifest document.
    async fn register_naming(store: &Store, objects: &Objects, keys: &[String], bytes: u64) -> (SessionId, String) {
        let entry = Entry {
            path: "tree/a".into(),
            kind: EntryKind::File,
            mode: 0o644,
            size: bytes,
            mtime_ms: 0,
            objects: keys.to_vec(),
            target: None,
            hard_link: None,
        };
        let document =
            crate::registrar::store_owned_manifest(objects, &Manifest { entries: vec![entry] }, "t").await.unwrap();
        let (session, _) =
            store.create_capture_session(&OwnerId::from("alice"), None, Default::default()).await.unwrap();
        store.claim_capture_session(&session.id, &RunId::from("run-a"), &LaunchId::from("l"), None).await.unwrap();
        let capture = NewCapture {
            epoch: 1,
            n: 1,
            run_id: "run-a".into(),
            launch: "l".into(),
            classes: vec![(CaptureClass::Small, ManifestHead { key: document.clone(), depth: 0 })],
            bytes,
            used_bytes: bytes,
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
        (session.id, document)
    }

    #[tokio::test]
    async fn only_old_objects_nothing_kept_names_are_deleted() {
        for db in testing::databases().await {
            let store = testing::open(&db).await;
            let dir = tempfile::tempdir().unwrap();
            let objects = Objects::open(&ObjectStoreUrl::Local(dir.path().into()), store.clone()).unwrap();
            let (kept, dead, young) =
                (Bytes::from_static(b"kept"), Bytes::from_static(b"dead"), Bytes::from_static(b"new"));
            for bytes in [&kept, &dead, &young] {
                objects.put(bytes.clone()).await.unwrap();
            }
            let (session, document) = register_naming(&store, &objects, &[object_key(&kept)], 4).await;
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
            let need = done.sessions[&session];
            assert_eq!(store.capture_session(&session).await.unwrap().unwrap().stored_bytes, need);
            assert!(need > 4, "the object and its manifest document: {need}");

            // One collection deletes at a time.
            let held = store.begin_object_deletion(now_ms() + 60_000).await.unwrap().unwrap();
            let busy = collect(&store, &objects, &CollectOptions::default()).await.unwrap_err();
            assert!(matches!(busy, CollectError::Busy), "{}: {busy}", db.label);
            store.end_object_deletion(held).await.unwrap();
        }
    }

    /// A pack of `objects` as the registrar writes it.
    async fn packed(objects: &Objects, contents: &[Vec<u8>]) -> (String, Vec<String>) {
        let mut builder = PackBuilder::new();
        for bytes in contents {
            builder.add(&Verified::of(Bytes::from(bytes.clone())));
        }
        let pack = builder.finish();
        let key = pack.key.clone();
        objects.put_pack(pack).await.unwrap();
        (key, contents.iter().map(|b| object_key(b)).collect())
    }

    fn filled(seed: u32, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    #[tokio::test]
    async fn dead_packs_go_mostly_dead_ones_are_rewritten_and_live_members_stay_readable() {
        for db in testing::databases().await {
            let store = testing::open(&db).await;
            let dir = tempfile::tempdir().unwrap();
            let objects = Objects::open(&ObjectStoreUrl::Local(dir.path().into()), store.clone()).unwrap();
            let kib = 1024;
            // One live member among four dead ones; all dead; all live.
            let (mostly_dead, a) = packed(&objects, &(0..5).map(|i| filled(i, 200 * kib)).collect::<Vec<_>>()).await;
            let (dead, b) = packed(&objects, &(10..12).map(|i| filled(i, 100 * kib)).collect::<Vec<_>>()).await;
            let (all_live, c) = packed(&objects, &(20..25).map(|i| filled(i, 250 * kib)).collect::<Vec<_>>()).await;
            // A write that died after its file, and a file whose row a killed deletion removed.
            let (died, _) = objects
                .write_pack({
                    let mut builder = PackBuilder::new();
                    builder.add(&Verified::of(Bytes::from(filled(30, kib))));
                    builder.finish()
                })
                .await
                .unwrap();
            let (orphan, _) = packed(&objects, &[filled(40, kib)]).await;
            assert!(store.retire_pack(&orphan, PackState::Ready).await.unwrap());
            store.forget_pack(&orphan).await.unwrap();
            let live: Vec<String> = [a[0].clone()].into_iter().chain(c.iter().cloned()).collect();
            let (session, _) = register_naming(&store, &objects, &live, 1_450 * kib as u64).await;
            let pack_keys = |objects: &Objects| {
                let objects = objects.clone();
                async move {
                    let mut keys: Vec<String> =
                        objects.list_packs().await.unwrap().into_iter().map(|p| p.key).collect();
                    keys.sort();
                    keys
                }
            };
            assert_eq!(pack_keys(&objects).await.len(), 5, "{}", db.label);
            // Everything was made before the collection began: with no grace, all of it is old
            // once the clock has moved on.
            let made = sluice_store::clock::now_ms();
            while sluice_store::clock::now_ms() <= made {
                tokio::task::yield_now().await;
            }
            let options = CollectOptions { grace: Duration::ZERO, ..Default::default() };
            let dry = collect(&store, &objects, &CollectOptions { dry_run: true, ..options.clone() }).await.unwrap();
            assert_eq!((dry.packs_listed, dry.packs_deleted, dry.packs_rewritten), (5, 3, 1), "{}", db.label);
            assert_eq!(pack_keys(&objects).await.len(), 5, "{}: a dry run deletes nothing", db.label);

            let done = collect(&store, &objects, &options).await.unwrap();
            assert_eq!((done.packs_deleted, done.packs_rewritten), (3, 1), "{}", db.label);
            let after = pack_keys(&objects).await;
            assert_eq!(after.len(), 2, "{}: the live pack and the rewrite: {after:?}", db.label);
            assert!(after.contains(&all_live), "{}", db.label);
            for gone in [&mostly_dead, &dead, &died, &orphan] {
                assert!(!after.contains(gone), "{}", db.label);
            }
            assert!(store.recorded_packs().await.unwrap().iter().all(|p| after.contains(&p.pack_key)));
            // What is live reads back whole; what was dead is gone.
            for (key, bytes) in live.iter().zip(objects.get_many(&live).await.unwrap()) {
                assert_eq!(&object_key(&bytes), key);
            }
            let dead_keys: Vec<String> = a[1..].iter().chain(&b).cloned().collect();
            assert_eq!(objects.missing(&dead_keys).await.unwrap(), dead_keys, "{}", db.label);
            assert!(done.bytes_deleted >= 1_000 * kib as u64, "{}: {done:?}", db.label);
            let need = done.sessions[&session];
            assert!(
                need >= 1_450 * kib as u64 && need < 1_460 * kib as u64,
                "{}: the live members and the document: {need}",
                db.label
            );
            // A second collection finds nothing more to do.
            let again = collect(&store, &objects, &options).await.unwrap();
            assert_eq!((again.packs_deleted, again.packs_rewritten), (0, 0), "{}: {again:?}", db.label);
        }
    }
}
