//! `/providers/NAME` and `/providers/new`: a provider's settings, its models and their prices,
//! edited in a form the kernel writes back to `config.toml` (comments kept) and puts to use
//! without a restart. The key is never on the page: only the variable that holds it, and
//! whether the daemon has it.

use std::collections::BTreeMap;

use kennel_kernel::error::FieldError;
use kennel_kernel::llm::{ModelConfig, ProviderInfo};
use leptos::prelude::*;
use serde_json::{Map, Value, json};

use crate::shell::{PageMeta, Shell};
use crate::widgets::{Csrf, IntoRendered, Rendered, field_error, short_time};

/// A model's row: its name and what config.toml knows of it, as typed.
#[derive(Debug, Clone, Default)]
pub struct ModelRow {
    pub name: String,
    pub context_tokens: String,
    pub input_usd_per_mtok: String,
    pub cached_input_usd_per_mtok: String,
    pub cache_write_usd_per_mtok: String,
    pub output_usd_per_mtok: String,
    /// `""` (by the provider's kind), `"true"` or `"false"`.
    pub images: String,
}

/// The row's number fields, by their form and settings name, with their labels.
const MODEL_NUMBERS: [(&str, &str); 5] = [
    ("context_tokens", "Context (tokens)"),
    ("input_usd_per_mtok", "Input $/M"),
    ("cached_input_usd_per_mtok", "Cached input $/M"),
    ("cache_write_usd_per_mtok", "Cache write $/M"),
    ("output_usd_per_mtok", "Output $/M"),
];

impl ModelRow {
    fn number(&self, field: &str) -> &str {
        match field {
            "context_tokens" => &self.context_tokens,
            "input_usd_per_mtok" => &self.input_usd_per_mtok,
            "cached_input_usd_per_mtok" => &self.cached_input_usd_per_mtok,
            "cache_write_usd_per_mtok" => &self.cache_write_usd_per_mtok,
            _ => &self.output_usd_per_mtok,
        }
    }

    fn number_mut(&mut self, field: &str) -> Option<&mut String> {
        Some(match field {
            "context_tokens" => &mut self.context_tokens,
            "input_usd_per_mtok" => &mut self.input_usd_per_mtok,
            "cached_input_usd_per_mtok" => &mut self.cached_input_usd_per_mtok,
            "cache_write_usd_per_mtok" => &mut self.cache_write_usd_per_mtok,
            "output_usd_per_mtok" => &mut self.output_usd_per_mtok,
            _ => return None,
        })
    }

    fn of(name: &str, m: &ModelConfig) -> ModelRow {
        let text = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        ModelRow {
            name: name.to_string(),
            context_tokens: m.context_tokens.map(|v| v.to_string()).unwrap_or_default(),
            input_usd_per_mtok: text(m.input_usd_per_mtok),
            cached_input_usd_per_mtok: text(m.cached_input_usd_per_mtok),
            cache_write_usd_per_mtok: text(m.cache_write_usd_per_mtok),
            output_usd_per_mtok: text(m.output_usd_per_mtok),
            images: m.images.map(|b| b.to_string()).unwrap_or_default(),
        }
    }
}

/// The provider form as typed: what a refused save shows back.
#[derive(Debug, Clone)]
pub struct ProviderForm {
    pub name: String,
    /// `openai` or `anthropic`.
    pub kind: String,
    pub base_url: String,
    pub api_key_env: String,
    /// The provider needs no key (`api_key_env = ""`).
    pub no_key: bool,
    pub timeout_secs: String,
    pub max_retries: String,
    pub stream: bool,
    pub max_in_flight: String,
    pub make_default: bool,
    pub models: Vec<ModelRow>,
}

impl Default for ProviderForm {
    fn default() -> ProviderForm {
        ProviderForm {
            name: String::new(),
            kind: "openai".into(),
            base_url: String::new(),
            api_key_env: String::new(),
            no_key: false,
            timeout_secs: "120".into(),
            max_retries: "3".into(),
            stream: true,
            max_in_flight: String::new(),
            make_default: false,
            models: Vec::new(),
        }
    }
}

impl ProviderForm {
    pub fn of(info: &ProviderInfo) -> ProviderForm {
        let s = &info.settings;
        ProviderForm {
            name: info.name.clone(),
            kind: s.kind.as_str().into(),
            base_url: s.base_url.clone().unwrap_or_default(),
            api_key_env: s.api_key_env.clone().unwrap_or_default(),
            no_key: s.api_key_env.as_deref() == Some(""),
            timeout_secs: s.timeout_secs.to_string(),
            max_retries: s.max_retries.to_string(),
            stream: s.stream,
            max_in_flight: s.max_in_flight.map(|n| n.to_string()).unwrap_or_default(),
            make_default: info.default,
            models: s.models.iter().map(|(name, m)| ModelRow::of(name, m)).collect(),
        }
    }

    /// The form's fields as posted (`models.N.FIELD` for the model rows; a row whose
    /// `models.N.remove` is checked, or whose name is blank, is left out).
    pub fn from_fields(fields: &[(String, String)]) -> ProviderForm {
        let mut form = ProviderForm {
            stream: false,
            timeout_secs: String::new(),
            max_retries: String::new(),
            ..Default::default()
        };
        let mut rows: BTreeMap<usize, ModelRow> = BTreeMap::new();
        let mut removed = Vec::new();
        for (key, value) in fields {
            match key.as_str() {
                "name" => form.name = value.trim().to_string(),
                "kind" => form.kind = value.clone(),
                "base_url" => form.base_url = value.trim().to_string(),
                "api_key_env" => form.api_key_env = value.trim().to_string(),
                "no_key" => form.no_key = true,
                "timeout_secs" => form.timeout_secs = value.trim().to_string(),
                "max_retries" => form.max_retries = value.trim().to_string(),
                "stream" => form.stream = true,
                "max_in_flight" => form.max_in_flight = value.trim().to_string(),
                "make_default" => form.make_default = true,
                _ => {
                    let Some((i, field)) = key.strip_prefix("models.").and_then(|r| r.split_once('.')) else {
                        continue;
                    };
                    let Ok(i) = i.parse::<usize>() else { continue };
                    let row = rows.entry(i).or_default();
                    let value = value.trim().to_string();
                    match field {
                        "name" => row.name = value,
                        "images" => row.images = value,
                        "remove" => removed.push(i),
                        _ => {
                            if let Some(slot) = row.number_mut(field) {
                                *slot = value;
                            }
                        }
                    }
                }
            }
        }
        form.models =
            rows.into_iter().filter(|(i, r)| !removed.contains(i) && !r.name.is_empty()).map(|(_, r)| r).collect();
        form
    }

    /// The settings as JSON, for the kernel to read as it reads `PUT /api/providers/{name}`'s
    /// body: a number field holds a number when it reads as one, else its text (refused with
    /// the field named); a blank one is left out (its default).
    pub fn to_json(&self) -> Value {
        let mut settings = Map::new();
        settings.insert("kind".into(), json!(self.kind));
        let mut put = |key: &str, value: &str| {
            if !value.is_empty() {
                settings.insert(key.into(), number_or_text(value));
            }
        };
        put("timeout_secs", &self.timeout_secs);
        put("max_retries", &self.max_retries);
        put("max_in_flight", &self.max_in_flight);
        if !self.base_url.is_empty() {
            settings.insert("base_url".into(), json!(self.base_url));
        }
        if self.no_key {
            settings.insert("api_key_env".into(), json!(""));
        } else if !self.api_key_env.is_empty() {
            settings.insert("api_key_env".into(), json!(self.api_key_env));
        }
        settings.insert("stream".into(), json!(self.stream));
        let models: Map<String, Value> = self
            .models
            .iter()
            .map(|row| {
                let mut model = Map::new();
                for (field, _) in MODEL_NUMBERS {
                    if !row.number(field).is_empty() {
                        model.insert(field.into(), number_or_text(row.number(field)));
                    }
                }
                match row.images.as_str() {
                    "true" => drop(model.insert("images".into(), json!(true))),
                    "false" => drop(model.insert("images".into(), json!(false))),
                    _ => {}
                }
                (row.name.clone(), Value::Object(model))
            })
            .collect();
        settings.insert("models".into(), Value::Object(models));
        Value::Object(settings)
    }
}

fn number_or_text(value: &str) -> Value {
    if let Ok(n) = value.parse::<u64>() {
        json!(n)
    } else if let Ok(x) = value.parse::<f64>()
        && x.is_finite()
    {
        json!(x)
    } else {
        json!(value)
    }
}

/// Whether the provider's key is there, in words, and the class that marks a missing one:
/// the overview's table and the provider's page say it alike.
pub(crate) fn key_words(i: &ProviderInfo) -> (String, &'static str) {
    match (&i.key_env, i.key_set) {
        (None, _) => ("none needed".into(), ""),
        (Some(var), true) => (format!("set ({var})"), ""),
        (Some(var), false) => (format!("missing: set {var} in the daemon's environment"), "bad"),
    }
}

/// How its last call went, and the class that marks a failing provider (a provider is only
/// known good once a call went through).
pub(crate) fn last_call(i: &ProviderInfo) -> (&'static str, Rendered) {
    match &i.last_error {
        Some((at, message)) => (
            "bad",
            view! { {format!("failing since {}: ", short_time(at))}{crate::widgets::rich_text(message)} }.rendered(),
        ),
        None => ("ok", "no failed call".rendered()),
    }
}

pub struct ProviderPage {
    /// The provider as the daemon has it; `None` for a new one.
    pub info: Option<ProviderInfo>,
    pub form: ProviderForm,
    /// Why the last save was refused, with the fields it named.
    pub error: Option<String>,
    pub errors: Vec<FieldError>,
}

pub fn render(meta: PageMeta, page: ProviderPage) -> String {
    let csrf = meta.csrf.clone();
    let ProviderPage { info, form, error, errors } = page;
    let is_new = info.is_none();
    let title = match &info {
        Some(i) => view! { <h1>"Provider "<code>{i.name.clone()}</code></h1> }.rendered(),
        None => view! { <h1>"New provider"</h1> }.rendered(),
    };
    let status = info.as_ref().map(|i| status_card(i, &csrf));
    let refused = error.map(|e| {
        view! { <p class="field-error" id="provider-error" role="alert">{crate::widgets::rich_text(&e)}</p> }
    });
    let action = match &info {
        Some(i) => format!("/providers/{}", i.name),
        None => "/providers".into(),
    };
    let name_field = is_new.then(|| {
        view! {
            <label>"Name "<input type="text" name="name" value=form.name.clone() required pattern="[a-z0-9_\\-]{1,64}" aria-describedby="provider-name-rule"/></label>
            <p class="hint" id="provider-name-rule">"How agent types name it (provider = \"NAME\"): 1 to 64 lowercase letters, digits, - or _."</p>
        }
    });
    let kinds = [
        ("openai", "OpenAI-compatible (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter…)"),
        ("anthropic", "Anthropic Messages"),
    ]
    .map(|(value, label)| {
        let selected = form.kind == value;
        view! { <option value=value selected=selected>{label}</option> }
    })
    .to_vec();
    let mut models = form.models.clone();
    models.push(ModelRow::default());
    let model_rows = models
        .into_iter()
        .enumerate()
        .map(|(i, row)| model_row(i, row, i + 1 == form.models.len() + 1))
        .collect::<Vec<_>>();
    // The default stays the default until another provider is made it: no box to uncheck.
    let default_choice = if info.as_ref().is_some_and(|i| i.default) {
        view! { <p class="hint">"The default: agents whose type names no provider use it. Make another provider the default to change that."</p> }.rendered()
    } else {
        view! { <label class="check"><input type="checkbox" name="make_default" value="1" checked=form.make_default/>" The default: agents whose type names no provider use it"</label> }.rendered()
    };
    let remove = info.as_ref().map(|i| {
        let confirm = format!("Remove provider {} from config.toml?", i.name);
        view! {
            <section class="card">
                <h2>"Remove"</h2>
                <p class="hint">"Refused while an agent or an agent type would call it."</p>
                <form method="post" action=format!("/providers/{}/remove", i.name) data-confirm=confirm>
                    <Csrf token=csrf.clone()/>
                    <button type="submit" class="danger">"Remove provider"</button>
                </form>
            </section>
        }
    });
    crate::document(
        view! {
            <Shell meta>
                <p><a href="/#providers">"Providers"</a></p>
                {title}
                {status}
                <section class="card" id="settings">
                    <h2>"Settings"</h2>
                    <p class="hint">"Saved to config.toml with its comments kept, and used from the next model call on: no restart."</p>
                    {refused}
                    <form method="post" action=action class="stack" id="provider-form">
                        <Csrf token=csrf.clone()/>
                        {name_field}
                        <label>"Protocol "<select name="kind">{kinds}</select></label>
                        {field_error(&errors, "kind")}
                        <label>"Base URL "<input type="url" name="base_url" value=form.base_url.clone() placeholder="the vendor's public address" size="40"/></label>
                        {field_error(&errors, "base_url")}
                        <label>"API key variable "<input type="text" name="api_key_env" value=form.api_key_env.clone() placeholder="by protocol: OPENAI_API_KEY or ANTHROPIC_API_KEY" pattern="[A-Za-z_][A-Za-z0-9_]*" size="30" aria-describedby="key-rule"/></label>
                        <p class="hint" id="key-rule">"The environment variable of the daemon that holds the key. The key itself is never written here or shown."</p>
                        {field_error(&errors, "api_key_env")}
                        <label class="check"><input type="checkbox" name="no_key" value="1" checked=form.no_key/>" Needs no key (a local server)"</label>
                        <label>"Timeout (seconds) "<input type="number" name="timeout_secs" value=form.timeout_secs.clone() min="1" max="3600"/></label>
                        {field_error(&errors, "timeout_secs")}
                        <label>"Retries "<input type="number" name="max_retries" value=form.max_retries.clone() min="0" max="10"/></label>
                        {field_error(&errors, "max_retries")}
                        <label>"Calls at once "<input type="number" name="max_in_flight" value=form.max_in_flight.clone() min="1" max="10000" placeholder="no bound"/></label>
                        {field_error(&errors, "max_in_flight")}
                        <label class="check"><input type="checkbox" name="stream" value="1" checked=form.stream/>" Stream replies as they are written"</label>
                        {default_choice}
                        <h3>"Models and prices"</h3>
                        <p class="hint">"Prices in US dollars per million tokens, for usage reports and dollar budgets; blank: unknown. A new model goes in the last row."</p>
                        {field_error(&errors, "models")}
                        <div class="scroll">
                            <table id="provider-models">
                                <thead><tr><th>"Model"</th>{MODEL_NUMBERS.map(|(_, label)| view! { <th>{label}</th> }).to_vec()}<th>"Images"</th><th>"Remove"</th></tr></thead>
                                <tbody>{model_rows}</tbody>
                            </table>
                        </div>
                        <button type="submit">{if is_new { "Add provider" } else { "Save provider" }}</button>
                    </form>
                </section>
                {remove}
            </Shell>
        }
        .to_html(),
    )
}

fn status_card(i: &ProviderInfo, csrf: &str) -> impl IntoView + use<> {
    let (key, key_class) = key_words(i);
    let (health_class, health) = last_call(i);
    let model_hint = i.settings.models.keys().next().cloned().unwrap_or_else(|| "model to test".into());
    view! {
        <section class="card" id="status">
            <h2>"Now"</h2>
            <dl class="facts">
                <dt>"Requests go to"</dt><dd><code>{i.url.clone()}</code></dd>
                <dt>"API key"</dt><dd class=key_class>{key}</dd>
                <dt>"Last call"</dt><dd class=health_class>{health}</dd>
                <dt>"Default"</dt><dd>{if i.default { "yes: agents naming no provider use it" } else { "no" }}</dd>
            </dl>
            <form method="post" action=format!("/providers/{}/test", i.name) class="inline">
                <Csrf token=csrf.to_string()/>
                <input type="hidden" name="back" value="page"/>
                <input type="text" name="model" placeholder=model_hint aria-label=format!("Model to test {} with", i.name) size="14"/>
                <button type="submit">"Test connection"</button>
            </form>
        </section>
    }
}

fn model_row(i: usize, row: ModelRow, is_new: bool) -> impl IntoView {
    let name = format!("models.{i}.name");
    let numbers = MODEL_NUMBERS
        .map(|(field, label)| {
            let value = row.number(field).to_string();
            let aria = format!("{label} of {}", if is_new { "the new model" } else { &row.name });
            view! { <td><input type="text" inputmode="decimal" name=format!("models.{i}.{field}") value=value size="8" aria-label=aria/></td> }
        })
        .to_vec();
    let images = [("", "by protocol"), ("true", "yes"), ("false", "no")]
        .map(|(value, label)| {
            let selected = row.images == value;
            view! { <option value=value selected=selected>{label}</option> }
        })
        .to_vec();
    let remove = (!is_new).then(|| {
        view! { <input type="checkbox" name=format!("models.{i}.remove") value="1" aria-label=format!("Remove model {}", row.name)/> }
    });
    let name_label = if is_new { "A new model's name".to_string() } else { format!("Model {}", row.name) };
    view! {
        <tr>
            <td><input type="text" name=name value=row.name.clone() size="18" placeholder=if is_new { "add a model" } else { "" } aria-label=name_label/></td>
            {numbers}
            <td><select name=format!("models.{i}.images") aria-label="Images">{images}</select></td>
            <td>{remove}</td>
        </tr>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kennel_kernel::llm::ProviderConfig;

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_form_reads_as_the_apis_body_with_blank_fields_left_to_their_defaults() {
        let form = ProviderForm::from_fields(&fields(&[
            ("name", " local "),
            ("kind", "openai"),
            ("base_url", "http://127.0.0.1:8080/v1"),
            ("no_key", "1"),
            ("timeout_secs", "30"),
            ("max_retries", ""),
            ("models.0.name", "small"),
            ("models.0.context_tokens", "8192"),
            ("models.0.input_usd_per_mtok", "0.5"),
            ("models.0.images", "false"),
            ("models.1.name", "gone"),
            ("models.1.remove", "1"),
            ("models.2.name", ""),
            ("models.2.output_usd_per_mtok", "two"),
        ]));
        assert_eq!(form.name, "local");
        assert_eq!(
            form.to_json(),
            json!({"kind": "openai", "base_url": "http://127.0.0.1:8080/v1", "api_key_env": "", "timeout_secs": 30,
                "stream": false, "models": {"small": {"context_tokens": 8192, "input_usd_per_mtok": 0.5, "images": false}}})
        );
        let typo = ProviderForm::from_fields(&fields(&[("kind", "openai"), ("max_in_flight", "four")]));
        assert_eq!(typo.to_json()["max_in_flight"], json!("four"));
    }

    #[test]
    fn a_stored_provider_fills_the_form_it_would_save_again() {
        let settings: ProviderConfig = serde_json::from_value(json!({"kind": "anthropic", "api_key_env": "MY_KEY",
            "max_in_flight": 4, "models": {"claude": {"output_usd_per_mtok": 15.0}}}))
        .unwrap();
        let info = ProviderInfo {
            name: "cloud".into(),
            settings: settings.clone(),
            default: true,
            url: "https://api.anthropic.com/v1".into(),
            key_env: Some("MY_KEY".into()),
            key_set: false,
            last_error: None,
        };
        let form = ProviderForm::of(&info);
        let again: ProviderConfig = serde_json::from_value(form.to_json()).unwrap();
        assert_eq!(again, settings);
        assert!(form.make_default);
    }
}
