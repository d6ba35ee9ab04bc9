//! The providers the daemon calls, swapped whole when `config.toml` changes (an edit from the
//! dashboard, the API or the CLI, or `kennel reload`): a turn holds the provider it started
//! with, the next turn finds the new one. A provider whose settings did not change is kept as
//! it is, with its queue of calls in flight and its last failure.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::Provider;
use crate::config::Config;
use crate::error::Result;

/// The providers as they are now, and the one an agent whose type names none uses.
pub struct ProviderSet {
    by_name: BTreeMap<String, Arc<Provider>>,
    default: Option<String>,
}

impl ProviderSet {
    pub fn get(&self, name: &str) -> Option<&Arc<Provider>> {
        self.by_name.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Provider>> {
        self.by_name.values()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// `[kernel] default_provider`, or the only provider ([`Config::default_provider`]).
    pub fn default_name(&self) -> Option<&str> {
        self.default.as_deref()
    }

    /// The configured names, comma-separated, or "none" (for messages).
    pub fn listed(&self) -> String {
        if self.by_name.is_empty() { "none".into() } else { self.names().collect::<Vec<_>>().join(", ") }
    }
}

pub struct Providers {
    now: RwLock<Arc<ProviderSet>>,
}

impl Providers {
    pub(crate) fn load(config: &Config) -> Result<Providers> {
        Ok(Providers { now: RwLock::new(Arc::new(build(config, &BTreeMap::new())?)) })
    }

    /// The set as it is now; hold it for one decision, not across turns.
    pub fn now(&self) -> Arc<ProviderSet> {
        self.now.read().expect("providers lock").clone()
    }

    /// Puts `config`'s providers in place, keeping each unchanged one as it is.
    pub(crate) fn apply(&self, config: &Config) -> Result<()> {
        let mut now = self.now.write().expect("providers lock");
        *now = Arc::new(build(config, &now.by_name)?);
        Ok(())
    }
}

fn build(config: &Config, before: &BTreeMap<String, Arc<Provider>>) -> Result<ProviderSet> {
    let by_name = config
        .providers
        .iter()
        .map(|(name, settings)| {
            let kept = before.get(name).filter(|p| p.settings() == settings).cloned();
            let provider = match kept {
                Some(p) => p,
                None => Arc::new(Provider::new(name, settings.clone())?),
            };
            Ok((name.clone(), provider))
        })
        .collect::<Result<_>>()?;
    Ok(ProviderSet { by_name, default: config.default_provider().map(str::to_string) })
}
