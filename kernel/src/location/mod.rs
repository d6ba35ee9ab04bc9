//! `location_get` (spec §14, family `location`): where the agent is. An agent type's
//! `location` wins; otherwise the daemon's IP geolocation provider, `[location] provider_url`,
//! which speaks ip-api.com's JSON (`{"status": "success", "lat", "lon", "city", "regionName",
//! "country", "timezone"}`), asked through the address guard and remembered for
//! `[location] cache_secs`. Without either, `Unavailable` says how to set one.
//!
//! # Design notes
//!
//! ## location_get
//!
//! - **`location_get`**: an agent type's `location` (`latitude`, `longitude`, `place?`,
//!   `timezone?`, validated) wins; otherwise `[location] provider_url`, a service answering in
//!   ip-api.com's JSON, through the address guard (`[location] allowed_hosts`), its answer kept
//!   `cache_secs` (default 3600) for the whole daemon (it is the daemon's IP); neither →
//!   `Unavailable` saying how to set one. A type's `location` is not among the fields the
//!   apply preview compares.

pub(crate) mod config;

pub use config::LocationConfig;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::family::{Family, Services};
use crate::tool::{CallContext, Registry, Tool, ToolDef};

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "location",
    open: |s| {
        s.provide(Locator::new(s.config().location.clone()));
        Ok(())
    },
    register,
};

/// Where an agent is, and how Kennel knows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub latitude: f64,
    pub longitude: f64,
    pub place: Option<String>,
    pub timezone: Option<String>,
    /// `agent type` (its manifest) or `ip` (the provider).
    pub source: &'static str,
}

/// The provider's last answer, kept for `cache_secs`.
pub struct Locator {
    config: LocationConfig,
    cached: Mutex<Option<(Instant, Found)>>,
}

impl Locator {
    pub fn new(config: LocationConfig) -> Locator {
        Locator { config, cached: Mutex::new(None) }
    }

    /// Where `agent` is: its type's location, else the provider's (cached).
    pub async fn locate(&self, agent: &Agent) -> Result<Found> {
        if let Some(l) = &agent.manifest.location {
            return Ok(Found {
                latitude: l.latitude,
                longitude: l.longitude,
                place: l.place.clone(),
                timezone: l.timezone.clone(),
                source: "agent type",
            });
        }
        let config = &self.config;
        let url = config.provider_url.as_deref().ok_or_else(|| {
            Error::unavailable(
                "no location is known: give the agent type a `location`, or set [location] provider_url (an IP geolocation service) in config.toml",
            )
        })?;
        let ttl = Duration::from_secs(config.cache_secs);
        if let Some((at, found)) = &*self.cached.lock().unwrap_or_else(|e| e.into_inner())
            && at.elapsed() < ttl
        {
            return Ok(found.clone());
        }
        let found = ask(url, &config.allowed_hosts).await?;
        *self.cached.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), found.clone()));
        Ok(found)
    }
}

/// One question to the provider.
async fn ask(url: &str, allowed: &crate::net::guard::AllowedHosts) -> Result<Found> {
    let parsed =
        reqwest::Url::parse(url).map_err(|e| Error::unavailable(format!("[location] provider_url `{url}`: {e}")))?;
    let addr = crate::net::guard::resolve(&parsed, allowed, "[location] allowed_hosts").await?;
    let client = crate::net::pinned_client(&parsed, addr, Duration::from_secs(10))?;
    let failed = |why: String| Error::failed(format!("the location provider {why}"));
    let response =
        client.get(parsed).send().await.map_err(|e| failed(format!("cannot be reached: {}", e.without_url())))?;
    let status = response.status();
    let body: Value =
        response.json().await.map_err(|e| failed(format!("answered {status} without JSON: {}", e.without_url())))?;
    if !status.is_success() || body["status"] != "success" {
        let why = body["message"].as_str().unwrap_or("no reason given");
        return Err(failed(format!("answered {status} without a location: {why}")));
    }
    let (Some(latitude), Some(longitude)) = (body["lat"].as_f64(), body["lon"].as_f64()) else {
        return Err(failed("gave no `lat` and `lon`".into()));
    };
    let parts: Vec<&str> =
        ["city", "regionName", "country"].iter().filter_map(|k| body[*k].as_str()).filter(|s| !s.is_empty()).collect();
    Ok(Found {
        latitude,
        longitude,
        place: (!parts.is_empty()).then(|| parts.join(", ")),
        timezone: body["timezone"].as_str().map(str::to_string),
        source: "ip",
    })
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    r.add(LocationGet(services.need()));
}

pub struct LocationGet(Arc<Locator>);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl Tool for LocationGet {
    type Args = NoArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "location_get",
            "location",
            "Your current location: latitude, longitude, place and time zone (your agent type's, or the daemon's by IP).",
        )
        .tags(&["location", "where", "place", "city", "coordinates", "timezone", "geo"])
        .read_only()
    }

    async fn run(&self, ctx: CallContext, _: NoArgs) -> Result<Value> {
        let found = self.0.locate(&ctx.agent).await?;
        Ok(json!(found))
    }
}
