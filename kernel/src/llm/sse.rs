//! Server-sent events as both providers stream them: lines of `event:` and `data:` fields,
//! an empty line ending each event. Bytes arrive in arbitrary pieces; an event is handed out
//! only once its blank line has arrived.

/// One event: its `event:` name (empty when none) and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

#[derive(Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl SseDecoder {
    /// Feeds a piece of the body; returns the events it completed, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(SseEvent { event: std::mem::take(&mut self.event), data: self.data.join("\n") });
                }
                self.data.clear();
                self.event.clear();
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.event = value.to_string(),
                "data" => self.data.push(value.to_string()),
                // Comments (`: keep-alive`), `id:` and `retry:` mean nothing to a model call.
                _ => {}
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let body = b"event: message_start\ndata: {\"a\":1}\n\n: ping\n\ndata: one\ndata: two\r\n\r\ndata: [DONE]\n\n";
        for split in 1..body.len() {
            let mut decoder = SseDecoder::default();
            let mut events = decoder.feed(&body[..split]);
            events.extend(decoder.feed(&body[split..]));
            assert_eq!(
                events,
                vec![
                    SseEvent { event: "message_start".into(), data: "{\"a\":1}".into() },
                    SseEvent { event: String::new(), data: "one\ntwo".into() },
                    SseEvent { event: String::new(), data: "[DONE]".into() },
                ],
                "split at {split}"
            );
        }
    }
}
