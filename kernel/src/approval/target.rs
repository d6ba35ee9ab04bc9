//! Where a call goes, for `when = "new_target"` rules: a channel chat or member, a remote
//! agent, a web host. A target the agent has sent to before is known (`approval_targets`); the
//! conversation a turn answers is known by definition.

use serde_json::Value;

use crate::tool::ChannelContext;

/// The tools a `new_target` rule can name: those whose arguments say where they go.
pub const TARGETED: &[&str] = &["channel_send", "channel_dm", "a2a_send", "browser_navigate"];

/// Where a call of `tool` with `args` goes, when it is somewhere that can be new: `None` for
/// the conversation the turn answers (or the channel's own default target), and for a tool
/// without targets.
pub fn of(tool: &str, args: &Value, conversation: Option<&ChannelContext>) -> Option<String> {
    // As the tool reads them: not trimmed, so the target checked is the one sent to.
    let text = |name: &str| args.get(name).and_then(Value::as_str).filter(|t| !t.trim().is_empty());
    match tool {
        // In a conversation turn the tool sends nowhere but the conversation. Otherwise the
        // chat is read as the tool reads it (`Channels::address`): `target`, or the part of
        // `channel` after a `:`; neither is the channel's configured default target.
        "channel_send" if conversation.is_none() => {
            let channel = args.get("channel").and_then(Value::as_str)?;
            let address = match args.get("target").and_then(Value::as_str) {
                Some(target) => format!("{channel}:{target}"),
                None => channel.to_string(),
            };
            let (name, chat) = address.split_once(':')?;
            (!chat.trim().is_empty()).then(|| format!("channel:{name} chat {chat}"))
        }
        "channel_dm" => {
            let channel = conversation?;
            Some(format!("channel:{} user {}", channel.channel, text("user_id")?))
        }
        "a2a_send" => Some(format!("remote agent {}", text("agent_id")?)),
        "browser_navigate" => {
            let url = reqwest::Url::parse(text("url")?).ok()?;
            Some(format!("web {}", url.host_str()?.to_ascii_lowercase()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ctx(channel: Option<&str>) -> Option<ChannelContext> {
        channel.map(|c| ChannelContext {
            channel: c.into(),
            chat_id: "room".into(),
            user_id: Some("u1".into()),
            is_group: true,
        })
    }

    #[test]
    fn a_call_goes_to_a_chat_a_member_an_agent_or_a_host() {
        let send = json!({"channel": "tg", "target": "-2002", "content": {"type": "text", "text": "x"}});
        assert_eq!(of("channel_send", &send, ctx(None).as_ref()).as_deref(), Some("channel:tg chat -2002"));
        assert_eq!(of("channel_send", &send, ctx(Some("tg")).as_ref()), None, "a conversation turn sends only there");
        assert_eq!(of("channel_send", &json!({"channel": "tg"}), ctx(None).as_ref()), None, "the channel's default");
        let inline = json!({"channel": "tg:-2002", "content": {"type": "text", "text": "x"}});
        assert_eq!(
            of("channel_send", &inline, ctx(None).as_ref()).as_deref(),
            Some("channel:tg chat -2002"),
            "a chat written into `channel` is the same target"
        );
        let dm = json!({"user_id": "42", "message": "psst"});
        assert_eq!(of("channel_dm", &dm, ctx(Some("tg")).as_ref()).as_deref(), Some("channel:tg user 42"));
        assert_eq!(of("a2a_send", &json!({"agent_id": "x1"}), ctx(None).as_ref()).as_deref(), Some("remote agent x1"));
        let page = json!({"url": "https://Example.COM:8443/a?b"});
        assert_eq!(of("browser_navigate", &page, ctx(None).as_ref()).as_deref(), Some("web example.com"));
        assert_eq!(of("process_start", &json!({"command": "ls"}), ctx(None).as_ref()), None);
    }
}
