//! `[budgets]` of `config.toml`: its type, defaults and lines in the default file.

use serde::{Deserialize, Deserializer, Serialize};

use crate::config::{in_range, optional_in_range, optional_price};

/// `[budgets]`: what the whole daemon may spend a day (issue 17). An agent type's `[limits]`
/// sets the same per agent; the day of both starts at `reset_hour` in `timezone`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetsConfig {
    /// Input and output tokens of every model call of the day, all agents together.
    #[serde(deserialize_with = "optional_in_range::<_, 1, 1000000000000>")]
    pub max_tokens_per_day: Option<u64>,
    /// US dollars of the day, all agents together, from the models' prices.
    #[serde(deserialize_with = "optional_budget_usd")]
    pub max_usd_per_day: Option<f64>,
    /// The hour (0–23) a budget's day starts.
    #[serde(deserialize_with = "in_range::<_, 0, 23>")]
    pub reset_hour: u64,
    /// The time zone of `reset_hour` (IANA, e.g. `Europe/Berlin`).
    #[serde(deserialize_with = "time_zone", serialize_with = "time_zone_name")]
    pub timezone: chrono_tz::Tz,
}

impl Default for BudgetsConfig {
    fn default() -> Self {
        BudgetsConfig { max_tokens_per_day: None, max_usd_per_day: None, reset_hour: 0, timezone: chrono_tz::UTC }
    }
}

fn time_zone_name<S: serde::Serializer>(tz: &chrono_tz::Tz, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(tz.name())
}

fn time_zone<'de, D: Deserializer<'de>>(d: D) -> Result<chrono_tz::Tz, D::Error> {
    let name = String::deserialize(d)?;
    name.parse::<chrono_tz::Tz>().map_err(|_| {
        serde::de::Error::custom(format!("`{name}` is not an IANA time zone (e.g. `Europe/Berlin`, `UTC`)"))
    })
}

fn optional_budget_usd<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match optional_price(d)? {
        Some(0.0) => {
            Err(serde::de::Error::custom("a budget of $0 stops every agent: leave max_usd_per_day out for no budget"))
        }
        usd => Ok(usd),
    }
}

/// `[budgets]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [budgets]
# max_tokens_per_day = 2000000   # all agents together; an agent type's [limits] sets its own
# max_usd_per_day = 20.0         # from the models' prices ([providers.NAME.models.MODEL])
# reset_hour = 0                 # when a budget's day starts...
# timezone = "UTC"               # ...in this time zone
"#;
