//! `pipeline` and `[forward]`: known stages, each once, each with its
//! section, in an order that works; no orphan sections.
use crate::config::location::Locator;
use crate::config::*;
use std::collections::{HashMap, HashSet};

impl Config {
    /// The stages and their sections; gives `[forward]`'s output port per
    /// port and the index of the first stage that forwards.
    pub(super) fn check_pipeline(
        &self,
        loc: &Locator,
        port_index: &HashMap<String, usize>,
    ) -> Result<(Vec<Option<usize>>, Option<usize>), ConfigError> {
        // Pipeline: known stages, each once, each with its section; no
        // orphan sections.
        let stages = self.pipeline.get_ref();
        if stages.is_empty() {
            return Err(loc.error(
                self.pipeline.span(),
                Some("pipeline".into()),
                "the pipeline is empty: list stages, e.g. pipeline = [\"forward\"]".into(),
            ));
        }
        let mut seen = HashSet::new();
        for s in stages {
            if !seen.insert(*s.get_ref()) {
                return Err(loc.error(
                    s.span(),
                    Some("pipeline".into()),
                    format!("stage `{}` is listed twice", s.get_ref().name()),
                ));
            }
            let has_section = s
                .get_ref()
                .section()
                .is_none_or(|name| self.stage_sections().iter().any(|(n, _)| *n == name));
            if !has_section {
                return Err(loc.error(
                    s.span(),
                    Some("pipeline".into()),
                    format!("stage `{0}` needs a [{0}] section", s.get_ref().name()),
                ));
            }
        }
        let mut forward_out = vec![None; self.ports.len()];
        if let Some(fwd) = &self.forward {
            for (k, pair) in fwd.get_ref().pairs.iter().enumerate() {
                let field = Some(format!("forward.pairs[{k}]"));
                if pair.get_ref().len() != 2 {
                    return Err(loc.error(
                        pair.span(),
                        field,
                        "a pair names exactly two ports".into(),
                    ));
                }
                let mut idx = [0usize; 2];
                for (j, name) in pair.get_ref().iter().enumerate() {
                    idx[j] = *port_index.get(name.get_ref()).ok_or_else(|| {
                        loc.error(
                            name.span(),
                            field.clone(),
                            format!(
                                "unknown port `{}` (ports: {})",
                                name.get_ref(),
                                self.port_names()
                            ),
                        )
                    })?;
                    if forward_out[idx[j]].is_some() {
                        return Err(loc.error(
                            name.span(),
                            field.clone(),
                            format!("port `{}` is in two pairs", name.get_ref()),
                        ));
                    }
                }
                if idx[0] == idx[1] {
                    // A port paired with itself is a hairpin: allowed.
                    forward_out[idx[0]] = Some(idx[0]);
                } else {
                    forward_out[idx[0]] = Some(idx[1]);
                    forward_out[idx[1]] = Some(idx[0]);
                }
            }
        }

        for (name, span) in self.stage_sections() {
            if !seen.iter().any(|k| k.section() == Some(name)) {
                return Err(loc.error(
                    span,
                    Some(name.into()),
                    format!("[{name}] is configured but `{name}` is not in the pipeline"),
                ));
            }
        }
        // In the pipeline's order (`seen` is a set).
        let readers: Vec<&str> = stages
            .iter()
            .map(|s| s.get_ref())
            .filter(|k| k.needs_headers())
            .map(|k| k.name())
            .collect();
        let raw = stages.iter().map(|s| s.get_ref()).find(|k| k.headerless());
        if let (Some(raw), false) = (raw, readers.is_empty()) {
            return Err(loc.error(
                self.pipeline.span(),
                Some("pipeline".into()),
                format!(
                    "`{}` sends frames on without reading them and cannot share a pipeline \
                     with stages that read headers ({})",
                    raw.name(),
                    readers.join(", ")
                ),
            ));
        }
        let forwarder = stages.iter().position(|s| s.get_ref().forwards());
        for (k, s) in stages.iter().enumerate() {
            if s.get_ref().needs_later_forwarder() && forwarder.is_none_or(|f| f < k) {
                return Err(loc.error(
                    s.span(),
                    Some("pipeline".into()),
                    format!(
                        "`{}` needs a later stage that forwards: use pipeline = [\"{0}\", \"route\"]",
                        s.get_ref().name()
                    ),
                ));
            }
        }
        Ok((forward_out, forwarder))
    }
}
