//! C identifiers and literals built from user strings.
//!
//! Every name that reaches the C output is made of `[A-Za-z0-9_]` only, and carries a prefix
//! (`v_`, `weft_p_`, `weft_cfg_`, ...) or a suffix that keeps it away from C keywords, the C
//! library and weft's own helpers (`weft_*`, `t_*`).

use std::collections::HashSet;
use std::fmt::Write;

/// C keywords and library names an exported entry point must not take verbatim.
const RESERVED: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "bool",
    "true",
    "false",
    "main",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "abort",
    "exit",
    "printf",
    "snprintf",
    "vsnprintf",
    "memcpy",
    "memset",
    "sqrt",
    "sqrtf",
    "exp",
    "expf",
    "log",
    "logf",
    "sin",
    "sinf",
    "cos",
    "cosf",
    "tanh",
    "tanhf",
    "fabs",
    "fabsf",
    "floor",
    "floorf",
    "ceil",
    "ceilf",
    "pow",
    "powf",
    "fma",
    "fmaf",
    "abs",
    "system",
    "errno",
    "assert",
    "alignas",
    "alignof",
    "asm",
    "typeof",
    "NULL",
];

/// `s` with every character outside `[A-Za-z0-9_]` replaced by `_` (never empty).
pub fn clean(s: &str) -> String {
    let c: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if c.is_empty() {
        "_".to_string()
    } else {
        c
    }
}

/// The C symbol of an exported entry point: the proc's name when it is a safe C identifier,
/// otherwise `weft_e_<clean name>`.
pub fn entry_symbol(name: &str) -> String {
    let c = clean(name);
    let unsafe_name = c != name
        || c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '_')
        || c.to_ascii_lowercase().starts_with("weft")
        || c.starts_with("v_")
        || c.starts_with("t_")
        || RESERVED.contains(&c.as_str());
    if unsafe_name {
        format!("weft_e_{c}")
    } else {
        c
    }
}

/// Hands out unique C names with a fixed prefix.
#[derive(Default)]
pub struct UniqueNames {
    used: HashSet<String>,
}

impl UniqueNames {
    /// `prefix` + the cleaned name, with `_K` appended when already taken.
    pub fn fresh(&mut self, prefix: &str, name: &str) -> String {
        let base = format!("{prefix}{}", clean(name));
        let mut cand = base.clone();
        let mut k = 1;
        while self.used.contains(&cand) {
            cand = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(cand.clone());
        cand
    }

    /// Reserve a name exactly; false when it was already taken.
    pub fn take(&mut self, name: &str) -> bool {
        self.used.insert(name.to_string())
    }
}

/// A C string literal holding `s`: anything outside a small safe set is written as an octal
/// escape, so no user text can end the literal, form a trigraph or a format directive.
pub fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        let safe = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b' ' | b'_'
                    | b'.'
                    | b','
                    | b':'
                    | b';'
                    | b'('
                    | b')'
                    | b'='
                    | b'<'
                    | b'>'
                    | b'+'
                    | b'-'
                    | b'*'
                    | b'/'
                    | b'['
                    | b']'
                    | b'!'
                    | b'\''
            );
        if safe {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\{b:03o}");
        }
    }
    out.push('"');
    out
}

/// Text safe inside a C block comment: a small set of characters, anything else becomes `?`
/// (never two in a row, which could form a trigraph), so it can neither close the comment nor
/// continue a line.
pub fn comment_text(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let safe = c.is_ascii_alphanumeric()
            || matches!(
                c,
                ' ' | '_'
                    | '.'
                    | ','
                    | ':'
                    | ';'
                    | '('
                    | ')'
                    | '='
                    | '<'
                    | '>'
                    | '+'
                    | '-'
                    | '['
                    | ']'
            );
        if safe {
            out.push(c);
        } else if !out.ends_with('?') {
            out.push('?');
        } else {
            out.push('_');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_keeps_only_identifier_characters() {
        assert_eq!(clean("x; system(\"rm\")"), "x__system__rm__");
        assert_eq!(clean(""), "_");
        assert_eq!(clean("é"), "_");
    }

    #[test]
    fn entry_symbols_avoid_keywords_and_helpers() {
        assert_eq!(entry_symbol("matmul"), "matmul");
        assert_eq!(entry_symbol("int"), "weft_e_int");
        assert_eq!(entry_symbol("__foo"), "weft_e___foo");
        assert_eq!(entry_symbol("weft_ok"), "weft_e_weft_ok");
        assert_eq!(entry_symbol("a b"), "weft_e_a_b");
        assert_eq!(entry_symbol("9x"), "weft_e_9x");
    }

    #[test]
    fn unique_names_never_repeat() {
        let mut u = UniqueNames::default();
        let a = u.fresh("weft_p_", "a b");
        let b = u.fresh("weft_p_", "a_b");
        assert_ne!(a, b);
    }

    #[test]
    fn c_strings_escape_everything_dangerous() {
        let s = c_string("a\"b\\c??/%d\n");
        assert!(!s[1..s.len() - 1].contains('"'));
        assert!(!s.contains("??"));
        assert!(!s.contains('%'));
        assert!(!s.contains('\n'));
    }
}
