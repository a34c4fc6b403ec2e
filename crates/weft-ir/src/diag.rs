//! Source spans and diagnostics. Rendering with source text lives in `weft-syntax`, which owns the
//! source files; the IR only carries positions.

use std::fmt;

/// A byte range in a source file. `file == u32::MAX` marks a node made by the Rust API or by a
/// rewrite, which has no source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: u32,
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    pub const DUMMY: Span = Span {
        file: u32::MAX,
        lo: 0,
        hi: 0,
    };

    pub fn new(file: u32, lo: u32, hi: u32) -> Span {
        Span { file, lo, hi }
    }

    pub fn is_dummy(self) -> bool {
        self.file == u32::MAX
    }

    /// The smallest span covering both (a dummy side is ignored).
    pub fn to(self, other: Span) -> Span {
        if self.is_dummy() {
            return other;
        }
        if other.is_dummy() || other.file != self.file {
            return self;
        }
        Span {
            file: self.file,
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }
}

impl Default for Span {
    fn default() -> Span {
        Span::DUMMY
    }
}

/// A secondary place mentioned by a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// An error (or warning) about a program: the rule that failed, where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// A short stable name of the rule that failed, e.g. `bounds`, `type`, `quasi-affine`.
    pub rule: &'static str,
    pub message: String,
    pub span: Span,
    pub labels: Vec<Label>,
    /// Extra lines: counterexamples, hints.
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn new(rule: &'static str, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            rule,
            message: message.into(),
            span,
            labels: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.rule, self.message)?;
        for n in &self.notes {
            write!(f, "\n  note: {n}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}
