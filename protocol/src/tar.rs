//! The tar archive a capture is downloaded as: POSIX pax (ustar blocks with
//! extended headers where ustar falls short), so a name is any bytes of any
//! length, a time keeps its milliseconds, and a sparse file keeps its holes
//! as GNU sparse format 1.0, which GNU tar and bsdtar extract. Written here
//! because the `tar` crate writes no sparse members.
//!
//! A member is its [`Header::encode`] blocks, then [`Header::data_len`]
//! bytes of data (a sparse file's data regions, in order), then
//! [`padding`] zeros; an archive ends with [`END`].

/// The unit everything in a tar archive is padded to.
pub const BLOCK: usize = 512;

/// What closes an archive: two zero blocks.
pub const END: [u8; 2 * BLOCK] = [0; 2 * BLOCK];

/// The largest number an octal size or time field holds (11 digits).
const OCTAL_MAX: u64 = 0o77777777777;

/// What a member is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Member<'a> {
    /// A regular file of `size` bytes, all of them following.
    File {
        size: u64,
    },
    /// A file of `size` bytes of which only the `data` regions (offset,
    /// length; sorted, apart) follow: the rest is holes.
    Sparse {
        size: u64,
        data: &'a [(u64, u64)],
    },
    /// A hard link to an earlier member.
    HardLink {
        target: &'a [u8],
    },
    Symlink {
        target: &'a [u8],
    },
    Dir,
    Fifo,
}

/// One member's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    /// Relative, `/`-separated, as bytes.
    pub path: &'a [u8],
    /// Permission bits.
    pub mode: u32,
    pub mtime_ms: i64,
    pub member: Member<'a>,
}

impl Header<'_> {
    /// The bytes of data that follow the header blocks.
    pub fn data_len(&self) -> u64 {
        match &self.member {
            Member::File { size } => *size,
            Member::Sparse { data, .. } => data.iter().map(|(_, len)| len).sum(),
            _ => 0,
        }
    }

    /// The blocks before the member's data: an extended header where ustar
    /// cannot say it all, the ustar header, and a sparse file's map.
    pub fn encode(&self) -> Vec<u8> {
        let mut records: Vec<(&str, Vec<u8>)> = Vec::new();
        let (type_flag, link, size_field) = match &self.member {
            Member::File { size } => (b'0', &[][..], *size),
            Member::Sparse { .. } => (b'0', &[][..], 0),
            Member::HardLink { target } => (b'1', *target, 0),
            Member::Symlink { target } => (b'2', *target, 0),
            Member::Dir => (b'5', &[][..], 0),
            Member::Fifo => (b'6', &[][..], 0),
        };
        let mut map = Vec::new();
        let (mut name, mut stored_size) = (self.path.to_vec(), size_field);
        if let Member::Sparse { size, data } = &self.member {
            records.push(("GNU.sparse.major", b"1".to_vec()));
            records.push(("GNU.sparse.minor", b"0".to_vec()));
            records.push(("GNU.sparse.name", self.path.to_vec()));
            records.push(("GNU.sparse.realsize", size.to_string().into_bytes()));
            map = sparse_map(*size, data);
            stored_size = map.len() as u64 + self.data_len();
            let base = self.path.rsplit(|b| *b == b'/').next().unwrap_or(self.path);
            name = [&b"GNUSparseFile.0/"[..], base].concat();
        } else {
            if !fits(self.path) {
                records.push(("path", self.path.to_vec()));
            }
            if stored_size > OCTAL_MAX {
                records.push(("size", stored_size.to_string().into_bytes()));
            }
        }
        if matches!(self.member, Member::Dir) && !name.ends_with(b"/") {
            name.push(b'/');
        }
        if !fits(link) {
            records.push(("linkpath", link.to_vec()));
        }
        let (seconds, millis) = (self.mtime_ms.div_euclid(1000), self.mtime_ms.rem_euclid(1000));
        if millis != 0 || seconds < 0 {
            let time = if millis == 0 { seconds.to_string() } else { format!("{seconds}.{millis:03}") };
            records.push(("mtime", time.into_bytes()));
        }
        let mut out = Vec::with_capacity(3 * BLOCK + map.len());
        if !records.is_empty() {
            if records.iter().any(|(_, value)| std::str::from_utf8(value).is_err()) {
                records.insert(0, ("hdrcharset", b"BINARY".to_vec()));
            }
            let body: Vec<u8> = records.iter().flat_map(|(key, value)| pax_record(key, value)).collect();
            let pax_name = [&b"PaxHeaders/"[..], &name].concat();
            out.extend_from_slice(&ustar(&pax_name, 0o644, seconds, body.len() as u64, b'x', &[]));
            out.extend_from_slice(&body);
            out.resize(out.len() + padding(body.len() as u64), 0);
        }
        out.extend_from_slice(&ustar(&name, self.mode, seconds, stored_size, type_flag, link));
        out.extend_from_slice(&map);
        out
    }
}

/// The zeros after `len` bytes of data that fill its last block.
pub fn padding(len: u64) -> usize {
    (BLOCK - (len % BLOCK as u64) as usize) % BLOCK
}

/// Whether ustar's 100-byte name field holds `name` as it is.
fn fits(name: &[u8]) -> bool {
    name.len() <= 100 && name.is_ascii() && !name.contains(&0)
}

/// One extended header record, `LEN key=value\n`, where LEN counts the
/// whole record, its own digits included.
fn pax_record(key: &str, value: &[u8]) -> Vec<u8> {
    let rest = key.len() + value.len() + 3;
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    let mut record = format!("{len} {key}=").into_bytes();
    record.extend_from_slice(value);
    record.push(b'\n');
    record
}

/// A sparse file's map, as format 1.0 puts it before the data: the count
/// of regions and each region's offset and length, in decimal lines, to a
/// whole block. A file that ends in a hole ends with an empty region at
/// its size, so the size is restored.
fn sparse_map(size: u64, data: &[(u64, u64)]) -> Vec<u8> {
    let mut regions = data.to_vec();
    if regions.last().is_none_or(|(offset, len)| offset + len < size) {
        regions.push((size, 0));
    }
    let mut map = format!("{}\n", regions.len());
    for (offset, len) in regions {
        map.push_str(&format!("{offset}\n{len}\n"));
    }
    let mut map = map.into_bytes();
    map.resize(map.len() + padding(map.len() as u64), 0);
    map
}

/// One ustar header block.
fn ustar(name: &[u8], mode: u32, seconds: i64, size: u64, type_flag: u8, link: &[u8]) -> [u8; BLOCK] {
    let mut block = [0u8; BLOCK];
    let truncated = |field: &mut [u8], bytes: &[u8]| {
        let n = bytes.len().min(field.len());
        field[..n].copy_from_slice(&bytes[..n]);
    };
    truncated(&mut block[0..100], name);
    octal(&mut block[100..108], u64::from(mode & 0o7777));
    octal(&mut block[108..116], 0);
    octal(&mut block[116..124], 0);
    octal(&mut block[124..136], size.min(OCTAL_MAX));
    octal(&mut block[136..148], seconds.clamp(0, OCTAL_MAX as i64) as u64);
    block[156] = type_flag;
    truncated(&mut block[157..257], link);
    block[257..263].copy_from_slice(b"ustar\0");
    block[263..265].copy_from_slice(b"00");
    // The checksum is of the block with its own field as spaces.
    block[148..156].fill(b' ');
    let sum: u32 = block.iter().map(|b| u32::from(*b)).sum();
    octal(&mut block[148..155], u64::from(sum));
    block
}

/// An octal number filling `field` but its last byte, which stays NUL.
fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(&text.as_bytes()[text.len() - digits..]);
    field[digits] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_counts_its_own_length() {
        for (key, value, expected) in [
            ("path", &b"a"[..], &b"9 path=a\n"[..]),
            ("mtime", b"1.5", b"13 mtime=1.5\n"),
            ("path", &[b'x'; 91][..], &[&b"101 path="[..], &[b'x'; 91], b"\n"].concat()[..]),
        ] {
            let record = pax_record(key, value);
            assert_eq!(record, expected);
            let len: usize =
                std::str::from_utf8(record.split(|b| *b == b' ').next().unwrap()).unwrap().parse().unwrap();
            assert_eq!(len, record.len(), "{key}");
        }
    }

    #[test]
    fn a_ustar_header_carries_its_checksum() {
        let header = Header { path: b"a.txt", mode: 0o640, mtime_ms: 5000, member: Member::File { size: 3 } };
        let blocks = header.encode();
        assert_eq!(blocks.len(), BLOCK, "a short name and a whole second need no extended header");
        let mut copy = blocks.clone();
        copy[148..156].fill(b' ');
        let sum: u32 = copy.iter().map(|b| u32::from(*b)).sum();
        assert_eq!(&blocks[148..155], format!("{sum:06o}\0").as_bytes());
        assert_eq!(&blocks[100..108], b"0000640\0");
        assert_eq!(&blocks[124..136], b"00000000003\0");
    }

    #[test]
    fn what_ustar_cannot_hold_goes_in_an_extended_header() {
        let name = [&b"dir/bad"[..], &[0xff], b"name"].concat();
        let header = Header { path: &name, mode: 0o600, mtime_ms: 1_500, member: Member::File { size: 0 } };
        let blocks = header.encode();
        assert_eq!(blocks[156], b'x');
        let text = &blocks[BLOCK..2 * BLOCK];
        for record in [&b"hdrcharset=BINARY\n"[..], &[&b"path="[..], &name, b"\n"].concat(), b"mtime=1.500\n"] {
            assert!(text.windows(record.len()).any(|w| w == record), "{:?}", String::from_utf8_lossy(record));
        }
        assert_eq!(blocks.len(), 3 * BLOCK);
    }

    #[test]
    fn a_sparse_file_maps_its_data_and_a_trailing_hole() {
        let data = [(4096u64, 10u64)];
        let header =
            Header { path: b"s.img", mode: 0o644, mtime_ms: 0, member: Member::Sparse { size: 1 << 30, data: &data } };
        assert_eq!(header.data_len(), 10);
        let blocks = header.encode();
        let map = &blocks[blocks.len() - BLOCK..];
        assert!(map.starts_with(format!("2\n4096\n10\n{}\n0\n", 1u64 << 30).as_bytes()));
        let ustar = &blocks[blocks.len() - 2 * BLOCK..blocks.len() - BLOCK];
        assert!(ustar.starts_with(b"GNUSparseFile.0/s.img"));
        assert_eq!(&ustar[124..136], format!("{:011o}\0", BLOCK + 10).as_bytes(), "the map and the data");
    }
}
