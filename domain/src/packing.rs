//! What a collection does with each pack of the object store: keep it,
//! delete it, or rewrite what is live in it into a new pack. A pack is
//! `writing` (its file is being written), `ready` (its members are found in
//! it) or `deleting` (it holds nothing; its file is being deleted).

/// Where a pack is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PackState {
    Writing,
    Ready,
    Deleting,
}

impl PackState {
    pub const ALL: [PackState; 3] = [PackState::Writing, PackState::Ready, PackState::Deleting];

    pub fn as_str(self) -> &'static str {
        match self {
            PackState::Writing => "writing",
            PackState::Ready => "ready",
            PackState::Deleting => "deleting",
        }
    }

    pub fn parse(text: &str) -> Option<PackState> {
        PackState::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// A pack whose live members hold less than this share of it (in percent)
/// is rewritten.
pub const REWRITE_BELOW_PERCENT: u64 = 50;

/// Packs smaller than this (the packs of small uploads) are merged, two or
/// more at a time, once they are older than the grace period.
pub const SMALL_PACK_BYTES: u64 = 1 << 20;

/// A pack as a collection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackView {
    /// `None`: a file no row names (a deletion killed between the two).
    pub state: Option<PackState>,
    pub bytes: u64,
    /// When its row was made (or, without one, its file written).
    pub created_ms: i64,
    /// The bytes of its members that something kept names.
    pub live_bytes: u64,
}

/// What becomes of one pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackFate {
    Keep,
    /// Nothing live is in it, or it is a write that died, or its deletion
    /// was begun.
    Delete,
    /// Its live members go into a new pack and it is deleted.
    Rewrite,
}

fn fate_alone(pack: &PackView, cutoff_ms: i64) -> PackFate {
    let old = pack.created_ms < cutoff_ms;
    match pack.state {
        None | Some(PackState::Deleting) => PackFate::Delete,
        Some(PackState::Writing) if old => PackFate::Delete,
        Some(PackState::Writing) => PackFate::Keep,
        Some(PackState::Ready) if !old => PackFate::Keep,
        Some(PackState::Ready) if pack.live_bytes == 0 => PackFate::Delete,
        Some(PackState::Ready) if pack.live_bytes * 100 < pack.bytes * REWRITE_BELOW_PERCENT => PackFate::Rewrite,
        Some(PackState::Ready) if pack.bytes < SMALL_PACK_BYTES => PackFate::Rewrite,
        Some(PackState::Ready) => PackFate::Keep,
    }
}

/// The fate of each pack, in the order given; `cutoff_ms` is the end of
/// the grace period (what was made after it is kept, whatever it holds).
/// A small pack is merged only with another: alone it is kept.
pub fn plan(packs: &[PackView], cutoff_ms: i64) -> Vec<PackFate> {
    let mut fates: Vec<PackFate> = packs.iter().map(|p| fate_alone(p, cutoff_ms)).collect();
    let is_small_merge = |(pack, fate): (&PackView, &PackFate)| {
        *fate == PackFate::Rewrite && pack.live_bytes * 100 >= pack.bytes * REWRITE_BELOW_PERCENT
    };
    let merges: Vec<usize> =
        packs.iter().zip(&fates).enumerate().filter(|(_, pair)| is_small_merge(*pair)).map(|(i, _)| i).collect();
    let others_rewritten =
        packs.iter().zip(&fates).filter(|(p, f)| **f == PackFate::Rewrite && !is_small_merge((p, f))).count();
    if merges.len() == 1 && others_rewritten == 0 {
        fates[merges[0]] = PackFate::Keep;
    }
    fates
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUTOFF: i64 = 1_000;
    const MIB: u64 = 1 << 20;

    fn pack(state: Option<PackState>, bytes: u64, created_ms: i64, live_bytes: u64) -> PackView {
        PackView { state, bytes, created_ms, live_bytes }
    }

    #[test]
    fn each_pack_alone() {
        use PackFate::*;
        use PackState::*;
        let cases = [
            ("a file no row names", pack(None, 8 * MIB, 2_000, 0), Delete),
            ("a deletion begun", pack(Some(Deleting), 8 * MIB, 2_000, 0), Delete),
            ("a write that died", pack(Some(Writing), 8 * MIB, 10, 0), Delete),
            ("a write under way", pack(Some(Writing), 8 * MIB, 2_000, 0), Keep),
            ("young and dead", pack(Some(Ready), 8 * MIB, 2_000, 0), Keep),
            ("old and dead", pack(Some(Ready), 8 * MIB, 10, 0), Delete),
            ("mostly dead", pack(Some(Ready), 8 * MIB, 10, 3 * MIB), Rewrite),
            ("half live", pack(Some(Ready), 8 * MIB, 10, 4 * MIB), Keep),
            ("all live", pack(Some(Ready), 8 * MIB, 10, 8 * MIB), Keep),
        ];
        for (case, view, fate) in cases {
            assert_eq!(fate_alone(&view, CUTOFF), fate, "{case}");
        }
    }

    #[test]
    fn small_packs_merge_only_with_another() {
        use PackFate::*;
        let small = pack(Some(PackState::Ready), 4096, 10, 4096);
        let big = pack(Some(PackState::Ready), 8 * MIB, 10, 8 * MIB);
        let mostly_dead = pack(Some(PackState::Ready), 8 * MIB, 10, MIB);
        assert_eq!(plan(&[small, big], CUTOFF), [Keep, Keep], "alone, a small pack stays");
        assert_eq!(plan(&[small, big, small], CUTOFF), [Rewrite, Keep, Rewrite]);
        assert_eq!(plan(&[small, mostly_dead], CUTOFF), [Rewrite, Rewrite], "it joins a rewrite");
        let young_small = pack(Some(PackState::Ready), 4096, 2_000, 4096);
        assert_eq!(plan(&[small, young_small], CUTOFF), [Keep, Keep]);
    }
}
