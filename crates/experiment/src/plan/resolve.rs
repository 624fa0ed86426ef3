//! From the plan as written to the plan as run: defaults filled in, every value checked, paths
//! resolved, and every run's combination of values checked against the others.

use super::check;
use super::error::{Locator, PlanError};
use super::kinds::ProtoChoice;
use super::raw::{At, RawPlan, RawRun};
use super::settings::RunSettings;
use super::vary::{label, Setting, VaryKey};
use super::{Plan, VaryDimension, VaryValue};
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

mod client;
mod server;
mod trace;

use client::{client_section, network_section};
use server::server_section;
use trace::trace_section;

/// The server's idle timeout when the plan gives none: `ldplayer serve`'s and `replay`'s.
pub const DEFAULT_IDLE_TIMEOUT_S: f64 = 20.0;
/// Seconds a client waits for an answer by default: `ldplayer replay --timeout`'s default.
pub const DEFAULT_TIMEOUT_S: f64 = 2.0;
/// Clients with fewer queries than this are non-busy by default (paper §5.3).
pub const DEFAULT_NONBUSY_MAX_QUERIES: u64 = 250;
/// Seconds left out of the statistics at the start of each run by default.
pub const DEFAULT_WARMUP_S: f64 = 5.0;
/// Seconds of sampling after the last query by default.
pub const DEFAULT_COOLDOWN_S: f64 = 1.0;

/// The checker of one plan: its text (for places), its folder (for paths) and the places of
/// the keys it has seen (for errors found only when keys are combined).
struct Resolver<'a> {
    loc: Locator<'a>,
    dir: &'a Path,
    spans: HashMap<&'static str, Range<usize>>,
}

type Checked<T> = Result<T, PlanError>;

impl Resolver<'_> {
    /// A number checked by `rule`, its place remembered under `key`.
    fn number<T: Copy>(
        &mut self,
        value: &Option<At<T>>,
        key: &'static str,
        rule: impl Fn(T) -> Result<T, String>,
    ) -> Checked<Option<T>> {
        let Some(v) = value else { return Ok(None) };
        self.spans.insert(key, v.span());
        rule(*v.get_ref())
            .map(Some)
            .map_err(|m| self.loc.error(Some(v.span()), key, m))
    }

    /// A path of the plan resolved against its folder, which must exist.
    fn path(&self, value: &At<String>, key: &str) -> Checked<PathBuf> {
        let path = self.dir.join(value.get_ref());
        if path.exists() {
            Ok(path)
        } else {
            Err(self.loc.error(
                Some(value.span()),
                key,
                format!("{} does not exist", path.display()),
            ))
        }
    }

    fn remember<T>(&mut self, key: &'static str, value: &Option<At<T>>) {
        if let Some(v) = value {
            self.spans.insert(key, v.span());
        }
    }
}

/// Checks `raw` (read from `text`, in folder `dir`) and makes it a [`Plan`].
pub(super) fn resolve(raw: RawPlan, text: &str, dir: &Path) -> Checked<Plan> {
    let mut r = Resolver {
        loc: Locator::new(text),
        dir,
        spans: HashMap::new(),
    };
    let run = run_section(&mut r, &raw.run)?;
    let trace = trace_section(&mut r, &raw.trace, run.seed)?;
    let (server, tls_given) = server_section(&mut r, &raw.server)?;
    let network = network_section(&mut r, &raw.network)?;
    let (client, client_idle_follows) = client_section(&mut r, &raw.client, &server)?;
    let vary = vary_section(&mut r, &raw)?;
    super::runs::runs_within_bound(&r.loc, &raw, &vary, run.repeat)?;
    let mut base = RunSettings {
        trace,
        server,
        network,
        client,
        warmup_s: run.warmup_s,
        cooldown_s: run.cooldown_s,
        seed: run.seed,
    };
    if tls_given.is_none() {
        let tls_runs = base.trace.mutate.proto == ProtoChoice::Tls
            || vary.iter().any(|d| {
                d.values
                    .iter()
                    .any(|v| v.setting == Setting::Proto(ProtoChoice::Tls))
            });
        base.server.tls = tls_runs;
    }
    let diff = match &raw.diff {
        Some(d) => Some(diff_section(&mut r, d)?),
        None => None,
    };
    base.client.keep_answers = diff.is_some();
    let mut plan = Plan {
        dir: dir.to_path_buf(),
        base,
        client_idle_follows,
        server_tls: tls_given,
        vary,
        repeat: run.repeat,
        diff: None,
    };
    super::runs::check_runs(&r.loc, &r.spans, &plan, &raw)?;
    if let (Some(d), Some(raw_diff)) = (diff, &raw.diff) {
        let runs = plan.runs();
        if !runs.iter().any(|run| d.base_of(run, &runs).is_some()) {
            let names: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
            return Err(r.loc.error(
                Some(raw_diff.get_ref().base.span()),
                "diff.base",
                format!(
                    "no run is named `{}`: give a run's name (its folder under runs/) or its \
                     varied values without the number and repeat; the runs: {}",
                    d.base,
                    names.join(", ")
                ),
            ));
        }
        plan.diff = Some(d);
    }
    Ok(plan)
}

/// `[diff]`: the base run's name and the criteria file (checked).
fn diff_section(r: &mut Resolver, raw: &At<super::raw::RawDiff>) -> Checked<super::DiffPlan> {
    let d = raw.get_ref();
    let criteria = match &d.criteria {
        Some(c) => {
            let path = r.path(c, "diff.criteria")?;
            let text = std::fs::read_to_string(&path).map_err(|e| {
                r.loc.error(
                    Some(c.span()),
                    "diff.criteria",
                    format!("{}: {e}", path.display()),
                )
            })?;
            ldplayer_diff::Criteria::from_toml(&text).map_err(|e| {
                r.loc.error(
                    Some(c.span()),
                    "diff.criteria",
                    format!("{}: {e}", path.display()),
                )
            })?;
            Some(path)
        }
        None => None,
    };
    Ok(super::DiffPlan {
        base: d.base.get_ref().trim().to_string(),
        criteria,
    })
}

struct RunSection {
    repeat: u32,
    warmup_s: f64,
    cooldown_s: f64,
    seed: u64,
}

fn run_section(r: &mut Resolver, raw: &RawRun) -> Checked<RunSection> {
    Ok(RunSection {
        repeat: r
            .number(&raw.repeat, "run.repeat", check::at_least_one)?
            .unwrap_or(1),
        warmup_s: r
            .number(&raw.warmup_s, "run.warmup_s", check::run_s)?
            .unwrap_or(DEFAULT_WARMUP_S),
        cooldown_s: r
            .number(&raw.cooldown_s, "run.cooldown_s", check::run_s)?
            .unwrap_or(DEFAULT_COOLDOWN_S),
        seed: raw.seed.unwrap_or(0),
    })
}

fn vary_section(r: &mut Resolver, raw: &RawPlan) -> Checked<Vec<VaryDimension>> {
    let mut dims: Vec<VaryDimension> = Vec::new();
    for (key, values) in &raw.vary.0 {
        let name = key.get_ref();
        let Some(k) = VaryKey::from_name(name) else {
            return Err(r.loc.error(
                Some(key.span()),
                format!("vary.{name}"),
                format!("`{name}` cannot be varied; these can: {}", VaryKey::names()),
            ));
        };
        if values.get_ref().is_empty() {
            return Err(r.loc.error(
                Some(values.span()),
                format!("vary.{name}"),
                "the list is empty: give at least one value",
            ));
        }
        let other_do = match k {
            VaryKey::DoShare => Some(VaryKey::SetDo),
            VaryKey::SetDo => Some(VaryKey::DoShare),
            _ => None,
        };
        if let Some(other) = other_do.filter(|o| dims.iter().any(|d| d.key == *o)) {
            return Err(r.loc.error(
                Some(key.span()),
                format!("vary.{name}"),
                format!(
                    "vary `{}` or `{}`, not both: both set the DO share",
                    other, k
                ),
            ));
        }
        let mut dim = VaryDimension {
            key: k,
            values: Vec::new(),
        };
        for (i, v) in values.get_ref().iter().enumerate() {
            let at = format!("vary.{name}[{i}]");
            let setting = k
                .parse(v.get_ref())
                .map_err(|m| r.loc.error(Some(v.span()), &at, m))?;
            let text = label(v.get_ref());
            if dim.values.iter().any(|x| x.label == text) {
                return Err(r
                    .loc
                    .error(Some(v.span()), at, format!("`{text}` is listed twice")));
            }
            dim.values.push(VaryValue {
                label: text,
                setting,
            });
        }
        dims.push(dim);
    }
    Ok(dims)
}
