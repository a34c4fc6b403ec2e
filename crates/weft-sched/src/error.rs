//! Scheduling errors: which primitive, which rule, which statements, and a counterexample.

use std::fmt;
use weft_ir::{Diagnostic, Label, Span};

/// A rejected scheduling step.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedError {
    /// The primitive, e.g. `reorder_loops`.
    pub primitive: &'static str,
    /// What failed, in words.
    pub message: String,
    /// The statements involved: where, and what each is (printed).
    pub stmts: Vec<(Span, String)>,
    /// Values of sizes and loop indices (primed names are a second iteration) under which the
    /// rewritten proc would behave differently.
    pub counterexample: Vec<(String, i64)>,
}

impl SchedError {
    pub fn new(primitive: &'static str, message: impl Into<String>) -> SchedError {
        SchedError {
            primitive,
            message: message.into(),
            stmts: Vec::new(),
            counterexample: Vec::new(),
        }
    }

    pub fn at(mut self, span: Span, what: impl Into<String>) -> SchedError {
        self.stmts.push((span, what.into()));
        self
    }

    pub fn with_counterexample(mut self, cex: Vec<(String, i64)>) -> SchedError {
        self.counterexample = cex;
        self
    }

    /// The counterexample of a checker's diagnostic (its note `counterexample: a = 1, b = 2`),
    /// read back into values. A name may itself hold `, ` (`stride(A, 0)`): each value is the
    /// integer after ` = `, and the next name starts after the `, ` that follows it.
    pub fn with_checker_counterexample(mut self, d: &Diagnostic) -> SchedError {
        for note in &d.notes {
            let Some(mut rest) = note.strip_prefix("counterexample: ") else {
                continue;
            };
            let mut cex = Vec::new();
            while let Some((name, after)) = rest.split_once(" = ") {
                let end = after
                    .char_indices()
                    .find(|&(k, c)| !(c.is_ascii_digit() || (k == 0 && c == '-')))
                    .map_or(after.len(), |(k, _)| k);
                let Ok(v) = after[..end].parse() else {
                    break;
                };
                cex.push((name.to_string(), v));
                rest = after[end..].strip_prefix(", ").unwrap_or("");
            }
            self.counterexample = cex;
        }
        self
    }

    fn counterexample_text(&self) -> Option<String> {
        if self.counterexample.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .counterexample
            .iter()
            .map(|(n, v)| format!("{n} = {v}"))
            .collect();
        Some(format!("counterexample: {}", parts.join(", ")))
    }

    /// As a diagnostic for the source renderer: the first statement is the primary span.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let span = self.stmts.first().map_or(Span::DUMMY, |s| s.0);
        let mut d = Diagnostic::new(
            "schedule",
            span,
            format!("{}: {}", self.primitive, self.message),
        );
        for (s, what) in &self.stmts {
            d.labels.push(Label {
                span: *s,
                message: what.clone(),
            });
        }
        if let Some(c) = self.counterexample_text() {
            d.notes.push(c);
        }
        d
    }
}

impl fmt::Display for SchedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.primitive, self.message)?;
        for (_, what) in &self.stmts {
            write!(f, "\n  at: {what}")?;
        }
        if let Some(c) = self.counterexample_text() {
            write!(f, "\n  {c}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SchedError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checker's counterexample names strides as `stride(A, 0)`: read by splitting at `, `,
    /// they had come back as `0) = 256`.
    #[test]
    fn checker_counterexamples_keep_names_that_hold_commas() {
        let d = Diagnostic::new("bounds", Span::DUMMY, "out of bounds")
            .with_note("counterexample: M = 1, stride(A, 0) = 256, x' = -3, n = 0");
        let e = SchedError::new("replace", "fails").with_checker_counterexample(&d);
        assert_eq!(
            e.counterexample,
            [
                ("M".to_string(), 1),
                ("stride(A, 0)".to_string(), 256),
                ("x'".to_string(), -3),
                ("n".to_string(), 0),
            ]
        );
    }
}
