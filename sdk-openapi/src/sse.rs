//! Reading the API's Server-Sent Events streams (a run's output, a
//! process's output, a workspace's events): bytes as they come in, whole
//! messages out.

use serde_json::Value;

/// One message: its `id:` (if it has one), `event:` (`message` when it
/// names none) and `data:` as JSON (`null` if it is not JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: Option<String>,
    pub event: String,
    pub data: Value,
}

/// The bytes of a stream not yet read as whole messages. Bytes, not text:
/// a chunk may end inside a character.
#[derive(Debug, Default)]
pub struct Messages {
    pending: Vec<u8>,
}

impl Messages {
    pub fn new() -> Messages {
        Messages::default()
    }

    /// Adds a chunk of the stream and answers the messages it completed.
    /// A comment (`: heartbeat`) is no message.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Message> {
        self.pending.extend_from_slice(chunk);
        let mut messages = Vec::new();
        while let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = self.pending.drain(..end + 2).collect();
            if let Some(message) = parse(&String::from_utf8_lossy(&block)) {
                messages.push(message);
            }
        }
        messages
    }

    /// What is held of a message not yet whole.
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }
}

fn parse(block: &str) -> Option<Message> {
    let field = |name: &str| {
        block.lines().find_map(|l| l.strip_prefix(name).map(|v| v.strip_prefix(' ').unwrap_or(v).to_owned()))
    };
    let data = field("data:")?;
    Some(Message {
        id: field("id:"),
        event: field("event:").unwrap_or_else(|| "message".into()),
        data: serde_json::from_str(&data).unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_read_by_their_fields_and_comments_are_not_messages() {
        let mut messages = Messages::new();
        let block = "id: 7\nevent: runtime.ready\ndata: {\"sequence\":7}\n\n";
        let taken = messages.push(format!("{block}: heartbeat\n\nevent: end\ndata: {{}}\n\nid: 8").as_bytes());
        assert_eq!(taken.len(), 2, "two messages; a comment is none: {taken:?}");
        let first =
            Message { id: Some("7".into()), event: "runtime.ready".into(), data: serde_json::json!({"sequence": 7}) };
        assert_eq!(taken[0], first);
        assert_eq!((taken[1].id.as_ref(), taken[1].event.as_str()), (None, "end"));
        assert_eq!(messages.pending(), b"id: 8", "a message not yet whole stays");
    }

    #[test]
    fn a_character_split_across_chunks_is_read_whole() {
        let whole = "event: stdout\ndata: {\"text\":\"caf\u{e9}\"}\n\n".as_bytes();
        let split = whole.iter().position(|&b| b == 0xc3).expect("the first byte of é") + 1;
        let mut messages = Messages::new();
        assert!(messages.push(&whole[..split]).is_empty());
        let taken = messages.push(&whole[split..]);
        assert_eq!(taken[0].data["text"], "caf\u{e9}");
    }
}
