//! Who may reach which exposed agent, and the agent cards that say so. A card is written for
//! both versions at once, as the official SDK writes it: the 1.0 fields (`supportedInterfaces`,
//! `securityRequirements`) beside the 0.3 ones (`url`, `protocolVersion`, `security`), each
//! version's readers ignoring the other's.

use std::sync::Arc;

use serde_json::{Value, json};

use super::wire::{Dialect, v1};
use super::{A2aServer, AccessRefusal, Inbound};
use crate::agent::Agent;
use crate::agent::binding::Binding;

const BEARER: &str = "An API token of this Kennel daemon (`kennel token create`), sent as `Authorization: Bearer kn_…`";

/// The version 0.3 readers are told the card's `url` speaks (the SDK's 0.3 spelling).
const V0_3_CARD_VERSION: &str = "0.3.0";

impl A2aServer {
    /// The running agents `[a2a] expose` binds (by id, see [`crate::agent::binding`]).
    fn exposed(&self) -> Vec<Arc<Agent>> {
        let config = &self.config.a2a;
        config
            .expose
            .iter()
            .filter_map(|name| self.agents.bound(&Binding::A2a(name.clone()), name).ok())
            .filter(|a| a.is_running())
            .collect()
    }

    fn is_public(&self, agent: &Agent) -> bool {
        self.config.a2a.public.contains(&agent.name)
    }

    /// The agent a request is for: the one named in the path, else the only exposed one. An
    /// exposed agent that is not public needs a token.
    pub(super) fn target(&self, path_agent: Option<&str>, inbound: &Inbound) -> Result<Arc<Agent>, AccessRefusal> {
        let exposed = self.exposed();
        let agent = match path_agent {
            Some(name) => exposed
                .into_iter()
                .find(|a| a.name == name)
                .ok_or_else(|| AccessRefusal::NotFound(format!("no exposed agent `{name}` on this daemon")))?,
            None if exposed.len() == 1 => exposed.into_iter().next().expect("one"),
            None => {
                return Err(AccessRefusal::NotFound(format!(
                    "this daemon exposes {} agents: address one at /a2a/NAME",
                    exposed.len()
                )));
            }
        };
        if matches!(inbound, Inbound::Anonymous) && !self.is_public(&agent) {
            return Err(AccessRefusal::Unauthorized);
        }
        Ok(agent)
    }

    /// The exposed agents this caller may reach: the public ones, and with a token every one.
    fn reachable(&self, inbound: &Inbound) -> Vec<Arc<Agent>> {
        let token = matches!(inbound, Inbound::Token(_));
        self.exposed().into_iter().filter(|a| token || self.is_public(a)).collect()
    }

    fn skill(&self, agent: &Agent) -> Value {
        let mut skill = json!({
            "id": agent.name,
            "name": agent.name,
            "description": description(agent),
            "tags": [agent.agent_type],
        });
        if !self.is_public(agent) {
            skill["securityRequirements"] = json!([v1::bearer_requirement()]);
            skill["security"] = json!([{ "bearer": [] }]);
        }
        skill
    }

    /// A card for `agents`, reached at `urls` (the first is the one 0.3 readers use).
    fn card(&self, name: &str, description: &str, urls: &[String], agents: &[Arc<Agent>]) -> Value {
        let interfaces: Vec<Value> =
            urls.iter().flat_map(|url| [Dialect::V1, Dialect::V0_3].map(|d| v1::interface(url, d.version()))).collect();
        let mut card = json!({
            "name": name,
            "description": description,
            "version": env!("CARGO_PKG_VERSION"),
            "supportedInterfaces": interfaces,
            "capabilities": { "streaming": true, "pushNotifications": false },
            "defaultInputModes": ["text/plain", "application/json"],
            "defaultOutputModes": ["text/plain"],
            "skills": agents.iter().map(|a| self.skill(a)).collect::<Vec<_>>(),
            "url": urls.first(),
            "protocolVersion": V0_3_CARD_VERSION,
            "preferredTransport": "JSONRPC",
        });
        let needing = agents.iter().filter(|a| !self.is_public(a)).count();
        if needing > 0 {
            card["securitySchemes"] = json!({ "bearer": {
                "httpAuthSecurityScheme": { "scheme": "bearer", "description": BEARER },
                "type": "http", "scheme": "bearer", "description": BEARER,
            }});
        }
        if needing > 0 && needing == agents.len() {
            card["securityRequirements"] = json!([v1::bearer_requirement()]);
            card["security"] = json!([{ "bearer": [] }]);
        }
        card
    }

    /// The daemon's card: every agent this caller may reach is a skill with an interface of its
    /// own (and with one exposed agent, `/a2a` reaches it too, listed first).
    pub fn daemon_card(&self, base_url: &str, inbound: &Inbound) -> Value {
        let agents = self.reachable(inbound);
        let shared = (self.exposed().len() == 1 && agents.len() == 1).then(|| format!("{base_url}/a2a"));
        let mut urls: Vec<String> =
            shared.into_iter().chain(agents.iter().map(|a| format!("{base_url}/a2a/{}", a.name))).collect();
        if urls.is_empty() {
            urls.push(format!("{base_url}/a2a"));
        }
        let description = "A Kennel agent daemon. Each skill is an agent you can send tasks to.";
        self.card("kennel", description, &urls, &agents)
    }

    /// One exposed agent's own card (served under `/a2a/NAME/.well-known/agent-card.json`).
    pub fn agent_card(&self, name: &str, base_url: &str, inbound: &Inbound) -> Result<Value, AccessRefusal> {
        let agent = self.target(Some(name), inbound)?;
        let url = format!("{base_url}/a2a/{}", agent.name);
        Ok(self.card(&agent.name, &description(&agent), &[url], std::slice::from_ref(&agent)))
    }
}

fn description(agent: &Agent) -> String {
    if agent.manifest.description.is_empty() {
        format!("Kennel agent {}", agent.name)
    } else {
        agent.manifest.description.clone()
    }
}
