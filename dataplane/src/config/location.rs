//! Where a config error is: byte spans of the TOML source turned into
//! file:line:column and the dotted path of the field (`port[1].mac`), and
//! the error type that carries them.
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

/// A config error with its location.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}:{line}:{column}: {field}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        field: String,
        message: String,
    },
    #[error("{file}: {message}")]
    Io { file: String, message: String },
}

impl ConfigError {
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Invalid { line, .. } => Some(*line),
            ConfigError::Io { .. } => None,
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { field, .. } => Some(field),
            ConfigError::Io { .. } => None,
        }
    }
}

/// Turns byte spans into line/column and a dotted field path.
pub(super) struct Locator<'a> {
    pub(super) src: &'a str,
    pub(super) file: &'a str,
    /// Directory of the config file, for relative paths inside it.
    pub(super) dir: &'a Path,
}

impl Locator<'_> {
    /// The line (from 1) where `span` starts.
    pub(super) fn line_of(&self, span: &Range<usize>) -> usize {
        let start = span.start.min(self.src.len());
        self.src[..start].matches('\n').count() + 1
    }

    pub(super) fn error(
        &self,
        span: Range<usize>,
        field: Option<String>,
        message: String,
    ) -> ConfigError {
        let start = span.start.min(self.src.len());
        let before = &self.src[..start];
        let line = before.matches('\n').count() + 1;
        let column = start - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        let field = field.unwrap_or_else(|| self.field_at(start, line));
        ConfigError::Invalid {
            file: self.file.to_owned(),
            line,
            column,
            field,
            message,
        }
    }

    /// The dotted path of the key on `line`, from the table headers above it
    /// (`[[port]]` counted so the path reads `port[1].mac`).
    fn field_at(&self, offset: usize, line: usize) -> String {
        let mut table = String::new();
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for l in self.src.lines().take(line.saturating_sub(1)) {
            let t = l.trim();
            if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
                let name = name.trim().to_owned();
                let c = counts
                    .entry(name.clone())
                    .and_modify(|c| *c += 1)
                    .or_insert(0);
                table = format!("{name}[{c}]");
            } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
                table = name.trim().to_owned();
            }
        }
        let text = self.src.lines().nth(line - 1).unwrap_or("");
        let t = text.trim();
        let key = if t.starts_with('[') {
            // The header line itself (e.g. an unknown [section]).
            return t.trim_matches(|c| c == '[' || c == ']').trim().to_owned();
        } else if let Some((k, _)) = t.split_once('=') {
            k.trim().trim_matches('"').to_owned()
        } else {
            let _ = offset;
            String::new()
        };
        match (table.is_empty(), key.is_empty()) {
            (true, _) => key,
            (false, true) => table,
            (false, false) => format!("{table}.{key}"),
        }
    }
}
