//! Session frames (see [`sluice_protocol::session`]) on Tokio streams: the
//! daemon, the workers' relay and the SSH gateway read and write them
//! alike, each frame's payload bounded by `MAX_FRAME`.

use sluice_protocol::session::{FrameKind, HEADER_BYTES, MAX_FRAME, encode, parse_header};

/// Reads one frame; `None` at a clean end of the stream before a header.
pub async fn read_frame(
    reader: &mut (impl tokio::io::AsyncRead + Unpin),
) -> std::io::Result<Option<(FrameKind, Vec<u8>)>> {
    use tokio::io::AsyncReadExt;
    let mut header = [0u8; HEADER_BYTES];
    match reader.read_exact(&mut header[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    reader.read_exact(&mut header[1..]).await?;
    let (kind, len) = parse_header(header).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let mut payload = vec![0u8; len];
    reader.read_exact(&mut payload).await?;
    Ok(Some((kind, payload)))
}

/// Writes `data` as frames of `kind`, split at the bound.
pub async fn write_frames(
    writer: &mut (impl tokio::io::AsyncWrite + Unpin),
    kind: FrameKind,
    data: &[u8],
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    if data.is_empty() {
        writer.write_all(&encode(kind, &[])).await?;
    }
    for chunk in data.chunks(MAX_FRAME) {
        writer.write_all(&encode(kind, chunk)).await?;
    }
    writer.flush().await
}

