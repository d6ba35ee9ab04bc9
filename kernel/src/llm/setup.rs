//! Adding, editing and removing providers while the daemon runs: the dashboard's provider
//! page, `PUT`/`DELETE /api/providers/{name}` and `kennel provider set|remove` all come here.
//! Each change is written to `config.toml` (comments kept: [`crate::config::edit`]), checked
//! as a start would check it, and then put in place: the next turn calls the new provider.
//! What a provider needs that is secret stays out of the file and the pages: `api_key_env`
//! names the variable holding the key, which must be in the daemon's environment.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ProviderConfig;
use crate::Kernel;
use crate::agent::Manifest;
use crate::config::{Config, edit};
use crate::error::{Error, Result};

/// What saving a provider did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProviderSaved {
    pub name: String,
    /// `true` when the provider is new.
    pub created: bool,
    /// The default provider after the change, when the change set it: the one asked for, or
    /// the provider agents naming none used until now, kept when a second one is added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_set: Option<String>,
}

/// A provider as the API lists it: its settings and what the daemon knows of it now.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProviderInfo {
    pub name: String,
    pub settings: ProviderConfig,
    /// Whether agents whose type names no provider use it.
    pub default: bool,
    /// Where its requests go (the vendor's public address when `base_url` is unset).
    pub url: String,
    /// The variable its API key is read from; absent for a provider that needs none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
    /// Whether that variable is set in the daemon's environment (its value is never shown).
    pub key_set: bool,
    /// Its last failed call (RFC 3339 time and message) when no call succeeded since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<(String, String)>,
}

impl Kernel {
    /// Every provider, by name.
    pub fn provider_infos(&self) -> Vec<ProviderInfo> {
        let providers = self.providers();
        providers
            .iter()
            .map(|p| ProviderInfo {
                name: p.name().to_string(),
                settings: p.settings().clone(),
                default: providers.default_name() == Some(p.name()),
                url: p.base_url().to_string(),
                key_env: p.api_key_env().map(str::to_string),
                key_set: p.has_key(),
                last_error: p.last_error(),
            })
            .collect()
    }

    /// The provider `name`, or a NotFound naming those configured.
    pub fn provider_info(&self, name: &str) -> Result<ProviderInfo> {
        self.provider_infos().into_iter().find(|p| p.name == name).ok_or_else(|| self.no_provider(name))
    }

    /// The refusal for a provider config.toml does not define.
    pub(crate) fn no_provider(&self, name: &str) -> Error {
        Error::not_found(format!("no provider `{name}` in config.toml (configured: {})", self.providers().listed()))
    }

    /// Adds the provider `name` or replaces its settings; `make_default` also makes it the
    /// provider of agents whose type names none.
    pub async fn save_provider(
        &self,
        name: &str,
        settings: ProviderConfig,
        make_default: bool,
    ) -> Result<ProviderSaved> {
        self.write_provider(name, settings, make_default, false).await
    }

    /// Adds the provider `name`, refused when one of that name exists (the dashboard's "Add a
    /// provider", which must never overwrite one); decided under the edit's lock.
    pub async fn add_provider(
        &self,
        name: &str,
        settings: ProviderConfig,
        make_default: bool,
    ) -> Result<ProviderSaved> {
        self.write_provider(name, settings, make_default, true).await
    }

    async fn write_provider(
        &self,
        name: &str,
        settings: ProviderConfig,
        make_default: bool,
        must_be_new: bool,
    ) -> Result<ProviderSaved> {
        check_name(name)?;
        let before = self.provider_named(name).and_then(|p| p.settings().api_key_env.clone());
        check_key_variable(settings.api_key_env.as_deref(), before.as_deref())?;
        let table = edit::as_table(&settings)?;
        let owned = name.to_string();
        let (created, default_set) = self
            .edit_config(
                |_| Ok(()),
                move |doc| {
                    let has_default = doc.get("kernel").and_then(|k| k.get("default_provider")).is_some();
                    let providers = edit::table_at(doc, &["providers"])?;
                    let created = !providers.contains_key(&owned);
                    if must_be_new && !created {
                        return Err(Error::conflict(format!("a provider named `{owned}` exists: edit it on its page")));
                    }
                    let others: Vec<String> =
                        providers.iter().map(|(k, _)| k.to_string()).filter(|k| *k != owned).collect();
                    edit::merge(edit::table_at(doc, &["providers", &owned])?, &table);
                    // Agents naming no provider keep the one they use now when a second one arrives.
                    let default_set = match &others[..] {
                        _ if make_default => Some(owned),
                        [only] if created && !has_default => Some(only.clone()),
                        _ => None,
                    };
                    if let Some(default) = &default_set {
                        edit::table_at(doc, &["kernel"])?
                            .insert("default_provider", toml_edit::value(default.as_str()));
                    }
                    Ok((created, default_set))
                },
            )
            .await?;
        Ok(ProviderSaved { name: name.to_string(), created, default_set })
    }

    /// Makes `name` the provider of agents whose type names none.
    pub async fn make_default_provider(&self, name: &str) -> Result<()> {
        self.known_provider(name)?;
        let owned = name.to_string();
        self.edit_config(
            |_| Ok(()),
            move |doc| {
                edit::table_at(doc, &["kernel"])?.insert("default_provider", toml_edit::value(owned));
                Ok(())
            },
        )
        .await
    }

    /// Removes the provider `name`, refused while an agent or an agent type would call it
    /// (checked under the edit's lock, so no change of providers comes between).
    pub async fn remove_provider(&self, name: &str) -> Result<()> {
        self.known_provider(name)?;
        let owned = name.to_string();
        let checked = owned.clone();
        self.edit_config(
            move |kernel| kernel.check_unused(&checked),
            move |doc| {
                edit::table_at(doc, &["providers"])?.remove(&owned);
                if let Some(kernel) = doc.get_mut("kernel").and_then(|k| k.as_table_mut())
                    && kernel.get("default_provider").and_then(|v| v.as_str()) == Some(owned.as_str())
                {
                    kernel.remove("default_provider");
                }
                Ok(())
            },
        )
        .await
    }

    /// Refuses to remove `name` while an agent or an agent type would call it, or while it is
    /// the default among several.
    fn check_unused(&self, name: &str) -> Result<()> {
        let providers = self.providers();
        let is_default = providers.default_name() == Some(name);
        let users = self.provider_users(name, is_default);
        if !users.is_empty() {
            return Err(Error::conflict(format!(
                "provider `{name}` is used by {}: point them at another provider first{}",
                users.join(", "),
                if is_default { " (or make another provider the default)" } else { "" }
            )));
        }
        let remaining = providers.names().filter(|n| *n != name).count();
        if is_default && remaining > 1 {
            return Err(Error::conflict(format!(
                "provider `{name}` is the default: make another provider the default first"
            )));
        }
        Ok(())
    }

    /// Agent types and agents that would call `name`: naming it (or a fallback on it), or
    /// naming none while it is the default.
    fn provider_users(&self, name: &str, is_default: bool) -> Vec<String> {
        let calls = |m: &Manifest| {
            let own = m.provider.as_deref().or(if is_default { Some(name) } else { None });
            own == Some(name) || m.fallbacks.iter().any(|f| f.provider.as_deref().or(own) == Some(name))
        };
        let types = self
            .agents()
            .types()
            .into_iter()
            .filter(|t| calls(&t.manifest))
            .map(|t| format!("type `{}`", t.manifest.name));
        let agents =
            self.agents().list().into_iter().filter(|a| calls(&a.manifest)).map(|a| format!("agent `{}`", a.name));
        types.chain(agents).collect()
    }

    fn known_provider(&self, name: &str) -> Result<()> {
        match self.providers().get(name) {
            Some(_) => Ok(()),
            None => Err(self.no_provider(name)),
        }
    }

    /// One edit of config.toml at a time: under the lock, `check` (on the daemon's state),
    /// then `change` (on the file), then the written file's providers and channels take over.
    /// The whole runs on a task of its own, so a client that hangs up cannot stop it between
    /// the write and the take-over.
    pub(crate) async fn edit_config<R: Send + 'static>(
        &self,
        check: impl FnOnce(&Kernel) -> Result<()> + Send + 'static,
        change: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let kernel = self.clone();
        tokio::spawn(async move {
            let _one = kernel.config_edits().lock().await;
            check(&kernel)?;
            let path = kernel.home().join("config.toml");
            let (config, done) =
                tokio::task::spawn_blocking(move || edit::edit(&path, change)).await.map_err(Error::internal)??;
            kernel.take_config(&config)?;
            Ok(done)
        })
        .await
        .map_err(Error::internal)?
    }

    /// Puts what of `config` changes while the daemon runs in place: the providers (their
    /// names for agent types, their prices) and the channels.
    pub(crate) fn take_config(&self, config: &Config) -> Result<()> {
        self.providers_registry().apply(config)?;
        self.agents().set_providers(config.providers.keys().cloned().collect());
        self.usage().set_prices(config);
        self.services().need::<crate::channel::Channels>().apply(&config.channels);
        Ok(())
    }
}

/// The key's variable, when a front changes it, names a key (`…_KEY`, `…_TOKEN`) or none: its
/// value goes to the provider's address with every call, so a provider set to read
/// `KENNEL_DATABASE_URL` would hand that to whoever runs the server it points at. Any other
/// name is written in config.toml by hand, on the daemon's machine.
fn check_key_variable(var: Option<&str>, before: Option<&str>) -> Result<()> {
    match var {
        None | Some("") => Ok(()),
        Some(v) if Some(v) == before || v.ends_with("_KEY") || v.ends_with("_TOKEN") => Ok(()),
        Some(v) => Err(Error::invalid(format!(
            "`{v}` does not name a key: the variable's name must end in _KEY or _TOKEN (another is set in config.toml by hand)"
        ))
        .with_field("api_key_env")),
    }
}

/// A provider's name is named as agent types name it.
fn check_name(name: &str) -> Result<()> {
    if crate::agent::is_valid_name(name) {
        Ok(())
    } else {
        Err(Error::invalid(format!("provider name `{name}` must be 1-64 lowercase letters, digits, `-` or `_`")))
    }
}
