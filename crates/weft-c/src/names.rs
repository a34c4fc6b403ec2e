//! C identifiers and literals built from user strings.
//!
//! Every name that reaches the C output is made of `[A-Za-z0-9_]` only, and carries a prefix
//! that keeps it away from C keywords, the C library and weft's own helpers: local variables
//! `v_`/`t_`, internal file-scope names `weft_`, exported symbols the unit's namespace (`NS_`).

use std::collections::HashSet;
use std::fmt::Write;

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

/// Namespaces a unit may not use: `weft` (the prefix of every internal name of a unit), the
/// one-letter prefixes of local variables, and `va` (the `va_*` macros of `<stdarg.h>`).
const RESERVED_NAMESPACES: &[&str] = &["weft", "v", "t", "va"];

/// The namespace used when none is given (the JIT's units and [`crate::emit`]).
pub const DEFAULT_NAMESPACE: &str = "kernel";

/// Why `ns` cannot prefix the exported symbols of a unit, if it cannot. A namespace is lowercase
/// ASCII letters and digits, starting with a letter: without an underscore of its own, the first
/// `_` of an exported symbol `NS_PROC` ends the namespace, so two units with different
/// namespaces can never export the same symbol, and every internal name (`weft_...`) differs from
/// every exported one.
pub fn namespace_error(ns: &str) -> Option<String> {
    let well_formed = ns.starts_with(|c: char| c.is_ascii_lowercase())
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !well_formed {
        Some(format!(
            "namespace '{}' must be lowercase ASCII letters and digits, starting with a letter",
            comment_text(ns)
        ))
    } else if RESERVED_NAMESPACES.contains(&ns) {
        Some(format!("namespace '{ns}' is reserved"))
    } else {
        None
    }
}

/// A valid namespace made from any text (a file stem, a library name): its letters lowercased
/// and its digits, with `k` in front when that does not start with a letter or is reserved.
pub fn namespace_from(text: &str) -> String {
    let ns: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if namespace_error(&ns).is_none() {
        ns
    } else {
        format!("k{ns}")
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
    fn namespaces_are_checked_and_derived() {
        assert!(namespace_error("kernels2").is_none());
        for bad in ["weft", "v", "my_lib", "Caps", "9x", ""] {
            assert!(namespace_error(bad).is_some(), "{bad}");
        }
        assert_eq!(namespace_from("my_kernels"), "mykernels");
        assert_eq!(namespace_from("9lives"), "k9lives");
        assert_eq!(namespace_from("weft"), "kweft");
        assert_eq!(namespace_from("é"), "k");
        assert!(namespace_error(&namespace_from("v")).is_none());
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
