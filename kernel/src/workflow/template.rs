//! Step prompts: `{{inputs.KEY}}`, `{{steps.N.output}}` (N from 1) and `{{previous}}`.

use serde_json::Value;

use crate::error::{Error, Result};

enum Placeholder<'a> {
    Input(&'a str),
    Step(usize),
    Previous,
}

/// Every `{{…}}` in `template`, with its byte range.
fn placeholders(template: &str) -> impl Iterator<Item = (std::ops::Range<usize>, &str)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = at + template[at..].find("{{")?;
        let end = start + template[start..].find("}}")? + 2;
        at = end;
        Some((start..end, template[start + 2..end - 2].trim()))
    })
}

fn parse(name: &str) -> std::result::Result<Placeholder<'_>, String> {
    if name == "previous" {
        return Ok(Placeholder::Previous);
    }
    if let Some(key) = name.strip_prefix("inputs.").filter(|k| !k.is_empty()) {
        return Ok(Placeholder::Input(key));
    }
    if let Some(n) = name.strip_prefix("steps.").and_then(|r| r.strip_suffix(".output")).and_then(|n| n.parse().ok()) {
        return Ok(Placeholder::Step(n));
    }
    Err(format!(
        "`{{{{{name}}}}}` is not a placeholder: use {{{{inputs.KEY}}}}, {{{{steps.N.output}}}} or {{{{previous}}}}"
    ))
}

/// Checks the placeholders of step `step` (1-based): known kinds, earlier steps only.
pub(super) fn check(template: &str, step: usize) -> std::result::Result<(), String> {
    for (_, name) in placeholders(template) {
        match parse(name)? {
            Placeholder::Step(n) if n == 0 || n >= step => {
                return Err(format!(
                    "step {step} can only use the output of steps 1 to {}, not {{{{steps.{n}.output}}}}",
                    step - 1
                ));
            }
            Placeholder::Previous if step == 1 => return Err("the first step has no {{previous}}".into()),
            _ => {}
        }
    }
    Ok(())
}

/// Fills in a step's prompt from the run's inputs and the outputs so far.
pub fn render(template: &str, inputs: &Value, outputs: &[&str]) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut last = 0;
    for (range, name) in placeholders(template) {
        out.push_str(&template[last..range.start]);
        let value = match parse(name).map_err(Error::invalid)? {
            Placeholder::Input(key) => match &inputs[key] {
                Value::Null => return Err(Error::invalid(format!("input `{key}` is missing"))),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            Placeholder::Step(n) => outputs
                .get(n.wrapping_sub(1))
                .ok_or_else(|| Error::invalid(format!("step {n} has not run yet")))?
                .to_string(),
            Placeholder::Previous => outputs.last().ok_or_else(|| Error::invalid("no step has run yet"))?.to_string(),
        };
        out.push_str(&value);
        last = range.end;
    }
    out.push_str(&template[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_from_inputs_and_earlier_outputs() {
        let inputs = serde_json::json!({"topic": "otters", "n": 3});
        let got = render(
            "Write {{ inputs.n }} facts on {{inputs.topic}}; then {{steps.1.output}} / {{previous}}",
            &inputs,
            &["one", "two"],
        )
        .unwrap();
        assert_eq!(got, "Write 3 facts on otters; then one / two");
        assert!(render("{{inputs.missing}}", &inputs, &[]).unwrap_err().message.contains("missing"));
    }

    #[test]
    fn checks_refuse_unknown_and_later_references() {
        assert!(check("{{inputs.a}} {{previous}}", 2).is_ok());
        assert!(check("{{previous}}", 1).is_err());
        assert!(check("{{steps.2.output}}", 2).unwrap_err().contains("steps 1 to 1"));
        assert!(check("{{wat}}", 1).unwrap_err().contains("not a placeholder"));
    }
}
