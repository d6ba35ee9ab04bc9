//! Adding, editing and removing channels while the daemon runs: the Channels pages,
//! `PUT`/`DELETE /api/channels/{name}` and `kennel channel set|remove` all come here. As for
//! providers ([`crate::llm::setup`]), each change is written to `config.toml` with its
//! comments kept, checked as a start would check it, and then put in place
//! ([`crate::channel::Channels::apply`]): a new channel listens at once, an edited one listens again
//! with its new settings, a removed one stops. Secrets stay in the environment: the settings
//! name the variables that hold them.

use crate::Kernel;
use crate::channel::{ChannelConfig, Channels};
use crate::config::edit;
use crate::error::{Error, Result};

impl Kernel {
    /// Adds the channel `name` or replaces its settings (`must_be_new`: refused when one of
    /// that name exists, decided under the edit's lock). Whether it is new.
    pub async fn save_channel(&self, name: &str, settings: ChannelConfig, must_be_new: bool) -> Result<bool> {
        if !crate::agent::is_valid_name(name) {
            return Err(Error::invalid(format!(
                "channel name `{name}` must be 1-64 lowercase letters, digits, `-` or `_`"
            ))
            .with_field("name"));
        }
        let before = self.channel_settings(name);
        check_secret_variable(
            "token_env",
            settings.token_env.as_deref(),
            before.as_ref().and_then(|b| b.token_env.as_deref()),
        )?;
        check_secret_variable(
            "signing_secret_env",
            settings.signing_secret_env.as_deref(),
            before.as_ref().and_then(|b| b.signing_secret_env.as_deref()),
        )?;
        let table = edit::as_table(&settings)?;
        let owned = name.to_string();
        self.edit_config(
            |_| Ok(()),
            move |doc| {
                let channels = edit::table_at(doc, &["channels"])?;
                let created = !channels.contains_key(&owned);
                if must_be_new && !created {
                    return Err(Error::conflict(format!("a channel named `{owned}` exists: edit it on its page")));
                }
                // Replaced whole: a setting left out of the new ones is gone from the file too.
                edit::merge(edit::table_at(doc, &["channels", &owned])?, &table);
                Ok(created)
            },
        )
        .await
    }

    /// Removes the channel `name`. Its conversations and traffic stay in the store.
    pub async fn remove_channel(&self, name: &str) -> Result<()> {
        self.services().need::<Channels>().one(name)?;
        let owned = name.to_string();
        self.edit_config(
            |_| Ok(()),
            move |doc| {
                edit::table_at(doc, &["channels"])?.remove(&owned);
                Ok(())
            },
        )
        .await
    }

    /// The channel `name`'s settings as config.toml holds them now.
    pub fn channel_settings(&self, name: &str) -> Option<ChannelConfig> {
        self.services().need::<Channels>().settings(name)
    }
}

/// A secret's variable, when a front changes it, names a secret (`…_TOKEN`, `…_SECRET`,
/// `…_KEY`): its value goes to the platform's address (a bot token) or signs what arrives, so
/// a channel set to read `KENNEL_DATABASE_URL` would hand that to whoever runs the server its
/// `base_url` names. Any other name is written in config.toml by hand, on the daemon's machine.
fn check_secret_variable(field: &str, var: Option<&str>, before: Option<&str>) -> Result<()> {
    match var {
        None | Some("") => Ok(()),
        Some(v) if Some(v) == before || ["_TOKEN", "_SECRET", "_KEY"].iter().any(|end| v.ends_with(end)) => Ok(()),
        Some(v) => Err(Error::invalid(format!(
            "`{v}` does not name a secret: the variable's name must end in _TOKEN, _SECRET or _KEY (another is set in config.toml by hand)"
        ))
        .with_field(field)),
    }
}
