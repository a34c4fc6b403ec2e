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
