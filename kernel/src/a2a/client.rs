//! Kennel as an A2A client: `a2a_discover(url)` and `a2a_send(agent_id, message, task_id?)`.
//! Every outbound connection goes through the kernel's address guard (`net::guard`) with
//! `[a2a] allowed_hosts`, and the request is pinned to the address that was checked, so a
//! model-chosen URL cannot reach a private or loopback service (SSRF), not even by DNS tricks
//! or redirects.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::A2aConfig;
use super::task::TaskState;
use super::wire::{self, Dialect};
use crate::config::Config;
use crate::db::Db;
use crate::error::{Error, ErrorKind, Result};
use crate::family::Services;
use crate::net::{guard, pinned_client};
use crate::tool::{CallContext, Tool, ToolDef};

const FAMILY: &str = "a2a";
const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

/// What the client tools take from the kernel: the remote cards' table and `[a2a]`.
#[derive(Clone)]
pub(super) struct Uses {
    db: Db,
    config: Arc<Config>,
}

impl Uses {
    pub(super) fn new(services: &Services) -> Uses {
        Uses { db: services.get::<Db>().clone(), config: services.need() }
    }

    fn a2a(&self) -> &A2aConfig {
        &self.config.a2a
    }
}

/// The address to connect to for `url`, by the one address guard and `[a2a] allowed_hosts`.
async fn checked_address(config: &A2aConfig, url: &reqwest::Url) -> Result<SocketAddr> {
    guard::resolve(url, &config.allowed_hosts, "[a2a] allowed_hosts").await
}

fn parse_url(text: &str) -> Result<reqwest::Url> {
    reqwest::Url::parse(text.trim()).map_err(|e| Error::invalid(format!("`{text}` is not a URL: {e}")))
}

/// The bearer token configured for this host, if any.
fn token_for(config: &A2aConfig, url: &reqwest::Url) -> Option<String> {
    let key = format!("{}:{}", url.host_str()?, url.port_or_known_default()?);
    let var = config.tokens.get(&key)?;
    std::env::var(var).ok().filter(|t| !t.is_empty())
}

/// `a2a_discover(url)`.
pub struct A2aDiscover(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct A2aDiscoverArgs {
    /// The remote's base URL; its agent card is read from `/.well-known/agent-card.json`.
    pub url: String,
}

impl Tool for A2aDiscover {
    type Args = A2aDiscoverArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "a2a_discover",
            FAMILY,
            "Fetch a remote A2A agent's card and remember it; returns the agent_id to use with a2a_send.",
        )
        .tags(&["a2a", "remote", "discover", "agent card"])
        // Not read-only: it stores the remote's card (which a2a_send later connects by), and
        // a model-chosen outbound fetch is the call whose audit row matters most.
    }

    async fn run(&self, _: CallContext, args: A2aDiscoverArgs) -> Result<Value> {
        let config = self.0.a2a();
        let base = parse_url(&args.url)?;
        let base_text = base.as_str().trim_end_matches('/').to_string();
        let mut last_error = None;
        for path in CARD_PATHS {
            let card_url = parse_url(&format!("{base_text}{path}"))?;
            let addr = checked_address(config, &card_url).await?;
            let client = pinned_client(&card_url, addr, Duration::from_secs(15))?;
            let mut req = client.get(card_url.clone()).header("A2A-Version", Dialect::V1.version());
            if let Some(token) = token_for(config, &card_url) {
                req = req.bearer_auth(token);
            }
            match req.send().await {
                Ok(res) if res.status().is_success() => {
                    let card: Value = res
                        .json()
                        .await
                        .map_err(|e| Error::failed(format!("the agent card at {card_url} is not JSON: {e}")))?;
                    if !card["name"].is_string() {
                        return Err(Error::failed(format!(
                            "the document at {card_url} is not an agent card (no `name`)"
                        )));
                    }
                    return remember(&self.0.db, &base_text, card).await;
                }
                Ok(res) => last_error = Some(format!("{card_url} answered {}", res.status())),
                Err(e) => last_error = Some(format!("cannot reach {card_url}: {e}")),
            }
        }
        Err(Error::failed(format!("no agent card found: {}", last_error.unwrap_or_default())))
    }
}

async fn remember(db: &Db, url: &str, card: Value) -> Result<Value> {
    let stored = super::store::remember_remote(db, url, &card.to_string()).await?;
    Ok(json!({
        "agent_id": stored,
        "name": card["name"],
        "description": card["description"],
        "skills": card["skills"],
        "url": url,
    }))
}

/// `a2a_send(agent_id, message, task_id?)`.
pub struct A2aSend(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct A2aSendArgs {
    /// The id a2a_discover returned.
    pub agent_id: String,
    pub message: String,
    /// Continue this remote task.
    pub task_id: Option<String>,
}

impl Tool for A2aSend {
    type Args = A2aSendArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "a2a_send",
            FAMILY,
            "Send a task to a remote A2A agent (found with a2a_discover) and wait for its answer, until [a2a] task_ttl_secs.",
        )
        .tags(&["a2a", "remote", "send", "delegate"])
    }

    async fn run(&self, _: CallContext, args: A2aSendArgs) -> Result<Value> {
        let config = self.0.a2a();
        let card = super::store::remote(&self.0.db, &args.agent_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("no remote agent `{}`; call a2a_discover first", args.agent_id)))?;
        let endpoint = Endpoint::of(&card)?;
        let addr = checked_address(config, &endpoint.url).await?;
        let ttl = Duration::from_secs(config.task_ttl_secs);
        let remote = Remote {
            client: pinned_client(&endpoint.url, addr, ttl)?,
            token: token_for(config, &endpoint.url),
            endpoint,
        };
        let mut message = json!({ "messageId": Uuid::now_v7().to_string(), "role": "ROLE_USER", "parts": [{ "text": args.message }] });
        if let Some(task) = &args.task_id {
            message["taskId"] = json!(task);
        }
        let started = Instant::now();
        let result = remote.send(message).await?;
        let mut task = match (result.get("task"), result.get("message")) {
            (Some(task), _) => task.clone(),
            (None, Some(msg)) => return Ok(json!({ "reply": wire::v1::message_text(msg), "state": "message" })),
            _ => return Err(Error::failed("the remote answered with neither a task nor a message")),
        };
        // Wait for a task that is still running, until the TTL.
        while !is_terminal(task["status"]["state"].as_str().unwrap_or_default()) {
            if started.elapsed() >= ttl {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!("the remote task did not finish within [a2a] task_ttl_secs = {}", ttl.as_secs()),
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            task = remote.get_task(&task["id"]).await?;
        }
        let state = task["status"]["state"].as_str().unwrap_or_default().to_string();
        let reply = reply_text(&task);
        if state != TaskState::Completed.as_str() {
            return Err(Error::failed(format!("the remote task ended {state}: {reply}")));
        }
        Ok(json!({
            "task_id": task["id"],
            "context_id": task["contextId"],
            "state": state,
            "reply": reply,
            "protocol": remote.endpoint.dialect.version(),
        }))
    }
}

/// Whether a 1.0 state name is one after which a task changes no more.
fn is_terminal(state: &str) -> bool {
    TaskState::ALL.iter().any(|s| s.as_str() == state && s.is_terminal())
}

/// Where a remote agent takes JSON-RPC, and in which version.
struct Endpoint {
    url: reqwest::Url,
    dialect: Dialect,
}

impl Endpoint {
    /// From its card: a 1.0 JSON-RPC interface if it lists one, else a 0.3 one (a 1.0 card's
    /// interface marked 0.3, or a 0.3 card's `url`).
    fn of(card: &Value) -> Result<Endpoint> {
        let interfaces = card["supportedInterfaces"].as_array().map(Vec::as_slice).unwrap_or_default();
        let jsonrpc = || interfaces.iter().filter(|i| i["protocolBinding"] == "JSONRPC");
        let speaking = |dialect: Dialect| {
            jsonrpc().find(|i| Dialect::requested(i["protocolVersion"].as_str()) == Ok(Some(dialect)))
        };
        let chosen = speaking(Dialect::V1)
            .map(|i| (i, Dialect::V1))
            .or_else(|| speaking(Dialect::V0_3).map(|i| (i, Dialect::V0_3)))
            .or_else(|| jsonrpc().find(|i| i.get("protocolVersion").is_none()).map(|i| (i, Dialect::V1)));
        if let Some((interface, dialect)) = chosen {
            let url = interface["url"]
                .as_str()
                .ok_or_else(|| Error::failed("the card lists an interface without a `url`"))?;
            return Ok(Endpoint { url: parse_url(url)?, dialect });
        }
        let v0_3 = Dialect::requested(card["protocolVersion"].as_str()) == Ok(Some(Dialect::V0_3));
        let over_jsonrpc = card.get("preferredTransport").is_none_or(|t| t == "JSONRPC");
        match card["url"].as_str() {
            Some(url) if v0_3 && over_jsonrpc => Ok(Endpoint { url: parse_url(url)?, dialect: Dialect::V0_3 }),
            _ => Err(Error::unavailable("the remote agent's card offers no JSON-RPC interface of A2A 1.0 or 0.3")),
        }
    }
}

/// A remote agent being talked to: the pinned client, our token for it, where and how.
struct Remote {
    client: reqwest::Client,
    token: Option<String>,
    endpoint: Endpoint,
}

impl Remote {
    /// Sends a 1.0 message and waits (as the remote allows) for the task; the answer in the
    /// 1.0 form (`{ "task": … }` or `{ "message": … }`).
    async fn send(&self, message: Value) -> Result<Value> {
        match self.endpoint.dialect {
            Dialect::V1 => self.rpc("SendMessage", json!({ "message": message, "configuration": {} })).await,
            Dialect::V0_3 => {
                let message = wire::v0_3::message_from_v1(&message);
                let result = self
                    .rpc("message/send", json!({ "message": message, "configuration": { "blocking": true } }))
                    .await?;
                Ok(wire::v0_3::result_to_v1(&result))
            }
        }
    }

    /// The task `id` in the 1.0 form.
    async fn get_task(&self, id: &Value) -> Result<Value> {
        match self.endpoint.dialect {
            Dialect::V1 => self.rpc("GetTask", json!({ "id": id })).await,
            Dialect::V0_3 => Ok(wire::v0_3::task_to_v1(&self.rpc("tasks/get", json!({ "id": id })).await?)),
        }
    }

    async fn rpc(&self, method: &str, params: Value) -> Result<Value> {
        let url = &self.endpoint.url;
        let body = json!({ "jsonrpc": "2.0", "id": Uuid::now_v7().to_string(), "method": method, "params": params });
        let mut req = self.client.post(url.clone()).header("A2A-Version", self.endpoint.dialect.version()).json(&body);
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        let res = req.send().await.map_err(|e| {
            if e.is_timeout() {
                Error::new(ErrorKind::Timeout, format!("{url} did not answer in time"))
            } else {
                Error::failed(format!("cannot reach {url}: {e}"))
            }
        })?;
        let status = res.status();
        if status.as_u16() == 401 || status.as_u16() == 403 {
            return Err(Error::forbidden(format!("{url} refused us ({status}); set a token for it in [a2a.tokens]")));
        }
        let answer: Value =
            res.json().await.map_err(|e| Error::failed(format!("{url} answered {status} without JSON: {e}")))?;
        if let Some(err) = answer.get("error") {
            return Err(Error::failed(format!(
                "{url}: {} (code {})",
                err["message"].as_str().unwrap_or("error"),
                err["code"]
            )));
        }
        answer.get("result").cloned().ok_or_else(|| Error::failed(format!("{url} answered without a result")))
    }
}

/// The answer in a finished task: its artifacts' text, else its status message.
fn reply_text(task: &Value) -> String {
    let artifacts: Vec<String> =
        task["artifacts"].as_array().map(|a| a.iter().map(wire::v1::message_text).collect()).unwrap_or_default();
    let text = artifacts.join("\n");
    if text.is_empty() { wire::v1::message_text(&task["status"]["message"]) } else { text }
}
