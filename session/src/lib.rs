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

/// Opens a connection to `port` inside the executor on a session stream
/// (a daemon's, or a relay's) and answers it as a plain byte stream: what
/// is written goes to the port, what the port sends is read. The pumping
/// task pings the session meanwhile and ends with either side.
pub async fn connect_port<S>(mut session: S, port: u16) -> std::io::Result<tokio::io::DuplexStream>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use sluice_protocol::session::{Open, PING_EVERY_MS, Refusal};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let refused = |message: String| std::io::Error::new(std::io::ErrorKind::ConnectionRefused, message);
    let open = serde_json::to_vec(&Open::Connect { port }).map_err(std::io::Error::other)?;
    write_frames(&mut session, FrameKind::Open, &open).await?;
    match read_frame(&mut session).await? {
        Some((FrameKind::Started, _)) => {}
        Some((FrameKind::Refused, payload)) => {
            let why = serde_json::from_slice::<Refusal>(&payload).map(|r| r.message);
            return Err(refused(why.unwrap_or_else(|_| "the executor refused the connection".into())));
        }
        _ => return Err(refused("the executor's session ended before the connection".into())),
    }
    let (ours, theirs) = tokio::io::duplex(MAX_FRAME);
    let (mut from_session, mut to_session) = tokio::io::split(session);
    let (mut from_client, mut to_client) = tokio::io::split(ours);
    // The client's bytes, and pings, go out as frames ...
    let outward = tokio::spawn(async move {
        let mut ping = tokio::time::interval(std::time::Duration::from_millis(PING_EVERY_MS));
        let mut buf = vec![0u8; MAX_FRAME];
        loop {
            // Reading the client is cancel-safe; each write runs to its end.
            tokio::select! {
                read = from_client.read(&mut buf) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if write_frames(&mut to_session, FrameKind::Stdin, &buf[..n]).await.is_err() {
                            return;
                        }
                    }
                },
                _ = ping.tick() => {
                    if write_frames(&mut to_session, FrameKind::Ping, &[]).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = write_frames(&mut to_session, FrameKind::StdinEof, &[]).await;
        // Still pinging while the port answers.
        loop {
            ping.tick().await;
            if write_frames(&mut to_session, FrameKind::Ping, &[]).await.is_err() {
                return;
            }
        }
    });
    // ... and the port's bytes come back, until the session ends.
    tokio::spawn(async move {
        while let Ok(Some((kind, payload))) = read_frame(&mut from_session).await {
            match kind {
                FrameKind::Stdout if to_client.write_all(&payload).await.is_err() => break,
                FrameKind::Exit | FrameKind::Refused => break,
                _ => {}
            }
        }
        outward.abort();
        let _ = to_client.shutdown().await;
    });
    Ok(theirs)
}
