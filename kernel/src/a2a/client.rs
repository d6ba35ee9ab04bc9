//! Kennel as an A2A client: `a2a_discover(url)` and `a2a_send(agent_id, message, task_id?)`.
//! Every outbound connection goes through the kernel's address guard (`net::guard`) with
//! `[a2a] allowed_hosts`, and the request is pinned to the address that was checked, so a
//! model-chosen URL cannot reach a private or loopback service (SSRF), not even by DNS tricks
//! or redirects.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::wire;
use crate::Kernel;
use crate::error::{Error, ErrorKind, Result};
use crate::net::{guard, pinned_client};
use crate::tool::{CallContext, Tool, ToolDef};

const FAMILY: &str = "a2a";
const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

/// The address to connect to for `url`, by the one address guard and `[a2a] allowed_hosts`.
async fn checked_address(kernel: &Kernel, url: &reqwest::Url) -> Result<SocketAddr> {
    guard::resolve(url, &kernel.config().a2a.allowed_hosts, "[a2a] allowed_hosts").await
}

fn parse_url(text: &str) -> Result<reqwest::Url> {
    reqwest::Url::parse(text.trim()).map_err(|e| Error::invalid(format!("`{text}` is not a URL: {e}")))
}

/// The bearer token configured for this host, if any.
fn token_for(kernel: &Kernel, url: &reqwest::Url) -> Option<String> {
    let key = format!("{}:{}", url.host_str()?, url.port_or_known_default()?);
    let var = kernel.config().a2a.tokens.get(&key)?;
    std::env::var(var).ok().filter(|t| !t.is_empty())
}

/// `a2a_discover(url)`.
pub struct A2aDiscover;

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

    async fn run(&self, ctx: CallContext, args: A2aDiscoverArgs) -> Result<Value> {
        let kernel = &ctx.kernel;
        let base = parse_url(&args.url)?;
        let base_text = base.as_str().trim_end_matches('/').to_string();
        let mut last_error = None;
        for path in CARD_PATHS {
            let card_url = parse_url(&format!("{base_text}{path}"))?;
            let addr = checked_address(kernel, &card_url).await?;
            let client = pinned_client(&card_url, addr, Duration::from_secs(15))?;
            let mut req = client.get(card_url.clone()).header("A2A-Version", super::PROTOCOL_VERSION);
            if let Some(token) = token_for(kernel, &card_url) {
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
                    return remember(kernel, &base_text, card).await;
                }
                Ok(res) => last_error = Some(format!("{card_url} answered {}", res.status())),
                Err(e) => last_error = Some(format!("cannot reach {card_url}: {e}")),
            }
        }
        Err(Error::failed(format!("no agent card found: {}", last_error.unwrap_or_default())))
    }
}

async fn remember(kernel: &Kernel, url: &str, card: Value) -> Result<Value> {
    let stored = super::store::remember_remote(kernel.db(), url, &card.to_string()).await?;
    Ok(json!({
        "agent_id": stored,
        "name": card["name"],
        "description": card["description"],
        "skills": card["skills"],
        "url": url,
    }))
}

/// `a2a_send(agent_id, message, task_id?)`.
pub struct A2aSend;

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

    async fn run(&self, ctx: CallContext, args: A2aSendArgs) -> Result<Value> {
        let kernel = &ctx.kernel;
        let card = super::store::remote(kernel.db(), &args.agent_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("no remote agent `{}`; call a2a_discover first", args.agent_id)))?;
        let endpoint = card["supportedInterfaces"]
            .as_array()
            .and_then(|list| list.iter().find(|i| i["protocolBinding"] == "JSONRPC"))
            .and_then(|i| i["url"].as_str())
            .or(card["url"].as_str())
            .ok_or_else(|| Error::unavailable("the remote agent's card offers no JSON-RPC interface"))?;
        let url = parse_url(endpoint)?;
        let addr = checked_address(kernel, &url).await?;
        let ttl = Duration::from_secs(kernel.config().a2a.task_ttl_secs);
        let client = pinned_client(&url, addr, ttl)?;
        let token = token_for(kernel, &url);
        let mut message = json!({ "messageId": Uuid::now_v7().to_string(), "role": "ROLE_USER", "parts": [{ "text": args.message }] });
        if let Some(task) = &args.task_id {
            message["taskId"] = json!(task);
        }
        let started = Instant::now();
        let result =
            rpc(&client, &url, token.as_deref(), "SendMessage", json!({ "message": message, "configuration": {} }))
                .await?;
        let mut task = match (result.get("task"), result.get("message")) {
            (Some(task), _) => task.clone(),
            (None, Some(msg)) => return Ok(json!({ "reply": wire::message_text(msg), "state": "message" })),
            _ => return Err(Error::failed("the remote answered with neither a task nor a message")),
        };
        // Wait for a task that is still running, until the TTL.
        while !wire::is_terminal(task["status"]["state"].as_str().unwrap_or_default()) {
            if started.elapsed() >= ttl {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!("the remote task did not finish within [a2a] task_ttl_secs = {}", ttl.as_secs()),
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            task = rpc(&client, &url, token.as_deref(), "GetTask", json!({ "id": task["id"] })).await?;
        }
        let state = task["status"]["state"].as_str().unwrap_or_default().to_string();
        let reply = reply_text(&task);
        if state != wire::COMPLETED {
            return Err(Error::failed(format!("the remote task ended {state}: {reply}")));
        }
        Ok(json!({ "task_id": task["id"], "context_id": task["contextId"], "state": state, "reply": reply }))
    }
}

/// The answer in a finished task: its artifacts' text, else its status message.
fn reply_text(task: &Value) -> String {
    let artifacts: Vec<String> =
        task["artifacts"].as_array().map(|a| a.iter().map(wire::message_text).collect()).unwrap_or_default();
    let text = artifacts.join("\n");
    if text.is_empty() { wire::message_text(&task["status"]["message"]) } else { text }
}

async fn rpc(
    client: &reqwest::Client,
    url: &reqwest::Url,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> Result<Value> {
    let body = json!({ "jsonrpc": "2.0", "id": Uuid::now_v7().to_string(), "method": method, "params": params });
    let mut req = client.post(url.clone()).header("A2A-Version", super::PROTOCOL_VERSION).json(&body);
    if let Some(token) = token {
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
