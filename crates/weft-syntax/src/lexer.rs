//! The lexer: turns source text into tokens with byte spans.
//!
//! Numbers: `0..n` lexes as the integer `0`, `..`, `n` because a `.` only starts a fraction when
//! a digit follows it. A leading `-` is never part of a number token; the parser folds `-` directly
//! in front of a numeric literal into a negative constant.

use weft_ir::{Diagnostic, Span};

/// One token kind. Identifiers include keywords; the parser decides by spelling.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// An integer literal's magnitude (a `u64` so that `-9223372036854775808` can be folded).
    Int(u64),
    Float(f64),
    Str(String),
    /// Punctuation and operators, by spelling: `( ) [ ] { } , ; : . .. = += == != < <= > >= + - *
    /// / % @`.
    Punct(&'static str),
    Eof,
}

impl Tok {
    /// How the token is named in "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => {
                if weft_ir::print::KEYWORDS.contains(&s.as_str()) {
                    format!("keyword `{s}`")
                } else {
                    format!("identifier `{s}`")
                }
            }
            Tok::Int(v) => format!("integer `{v}`"),
            Tok::Float(v) => format!("number `{v:?}`"),
            Tok::Str(_) => "a string".to_string(),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Eof => "end of file".to_string(),
        }
    }
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub lo: u32,
    pub hi: u32,
}

/// Longest first, so that `..` wins over `.` and `<=` over `<`.
const PUNCTS: &[&str] = &[
    "..", "+=", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}", ",", ";", ":", ".", "=", "<",
    ">", "+", "-", "*", "/", "%", "@",
];

/// Lex a whole file. Stops at the first error.
pub fn lex(file: u32, text: &str) -> Result<Vec<Token>, Diagnostic> {
    lex_keeping(file, text, None)
}

/// The comments of a file, in order (for `weft fmt`). A file that does not lex has none.
pub fn comments(text: &str) -> Vec<weft_ir::print::Comment> {
    let mut out = Vec::new();
    let _ = lex_keeping(0, text, Some(&mut out));
    out
}

/// The layout `weft fmt` keeps of a file: its comments and its blank lines.
pub fn layout(text: &str) -> weft_ir::print::SourceLayout {
    let mut blanks = Vec::new();
    let mut offset = 0u32;
    for line in text.split_inclusive('\n') {
        if line.trim().is_empty() {
            blanks.push(offset);
        }
        offset = offset.saturating_add(line.len() as u32);
    }
    let mut layout = weft_ir::print::SourceLayout::new(comments(text), blanks);
    // `import` is a keyword that only starts an item; `else` only separates branches.
    let toks = lex(0, text).unwrap_or_default();
    let at = |kw: &str| -> Vec<u32> {
        toks.iter()
            .filter(|t| matches!(&t.tok, Tok::Ident(s) if s == kw))
            .map(|t| t.lo)
            .collect()
    };
    layout.imports = at("import");
    layout.elses = at("else");
    layout
}

/// Lex, putting the comments into `comments` when given.
fn lex_keeping(
    file: u32,
    text: &str,
    mut comments: Option<&mut Vec<weft_ir::print::Comment>>,
) -> Result<Vec<Token>, Diagnostic> {
    let bytes = text.as_bytes();
    let span = |lo: usize, hi: usize| Span::new(file, lo as u32, hi as u32);
    let mut out = Vec::new();
    let mut i = 0usize;
    if text.len() >= u32::MAX as usize {
        return Err(Diagnostic::new(
            "syntax",
            Span::new(file, 0, 0),
            "source file too large",
        ));
    }
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            let start = i;
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            if let Some(out) = comments.as_deref_mut() {
                let line_start = text[..start].rfind('\n').map_or(0, |k| k + 1);
                out.push(weft_ir::print::Comment {
                    lo: start as u32,
                    text: text[start..i].trim_end().to_string(),
                    trailing: !text[line_start..start].trim().is_empty(),
                    line_start: line_start as u32,
                });
            }
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(text[start..i].to_string()),
                lo: start as u32,
                hi: i as u32,
            });
            continue;
        }
        if c.is_ascii_digit() {
            let tok = lex_number(bytes, &mut i).ok_or_else(|| {
                Diagnostic::new(
                    "syntax",
                    span(start, i),
                    format!("number `{}` is out of range", &text[start..i]),
                )
            })?;
            out.push(Token {
                tok,
                lo: start as u32,
                hi: i as u32,
            });
            continue;
        }
        if c == b'"' {
            let s = lex_string(text, &mut i, file)?;
            out.push(Token {
                tok: Tok::Str(s),
                lo: start as u32,
                hi: i as u32,
            });
            continue;
        }
        if let Some(p) = PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            i += p.len();
            out.push(Token {
                tok: Tok::Punct(p),
                lo: start as u32,
                hi: i as u32,
            });
            continue;
        }
        let ch = text[i..].chars().next().unwrap_or('?');
        return Err(Diagnostic::new(
            "syntax",
            span(i, i + ch.len_utf8()),
            format!("unexpected character `{}`", ch.escape_debug()),
        ));
    }
    out.push(Token {
        tok: Tok::Eof,
        lo: bytes.len() as u32,
        hi: bytes.len() as u32,
    });
    Ok(out)
}

/// Lex a number starting at a digit; `None` when it does not fit (the position is still advanced
/// past it, for the error span).
fn lex_number(bytes: &[u8], i: &mut usize) -> Option<Tok> {
    let start = *i;
    let digits = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    digits(i);
    let mut is_float = false;
    // A fraction needs a digit after the dot: `0..n` is an integer followed by `..`.
    if *i + 1 < bytes.len() && bytes[*i] == b'.' && bytes[*i + 1].is_ascii_digit() {
        *i += 1;
        digits(i);
        is_float = true;
    }
    if *i < bytes.len() && (bytes[*i] == b'e' || bytes[*i] == b'E') {
        let mut j = *i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            *i = j;
            digits(i);
            is_float = true;
        }
    }
    // The slice is ASCII digits, `.`, `e`, signs only.
    let s = std::str::from_utf8(&bytes[start..*i]).ok()?;
    if is_float {
        s.parse::<f64>().ok().map(Tok::Float)
    } else {
        s.parse::<u64>().ok().map(Tok::Int)
    }
}

/// Lex a string literal starting at `"`. Escapes: `\"`, `\\`, `\n`, `\t`, `\u{HEX}` (what
/// `weft_ir::print::escape_string` writes).
fn lex_string(text: &str, i: &mut usize, file: u32) -> Result<String, Diagnostic> {
    let start = *i;
    *i += 1;
    let mut out = String::new();
    let mut chars = text[*i..].char_indices();
    let base = *i;
    while let Some((off, c)) = chars.next() {
        let pos = base + off;
        match c {
            '"' => {
                *i = pos + 1;
                return Ok(out);
            }
            '\\' => {
                let bad = |hi: usize| {
                    Diagnostic::new(
                        "syntax",
                        Span::new(file, pos as u32, hi as u32),
                        "invalid escape in string (expected \\\", \\\\, \\n, \\t or \\u{HEX})",
                    )
                };
                match chars.next() {
                    Some((_, '"')) => out.push('"'),
                    Some((_, '\\')) => out.push('\\'),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((o, 'u')) => {
                        let rest = &text[base + o + 1..];
                        let close = rest.find('}');
                        let ok = rest.starts_with('{') && close.is_some();
                        let hex = match close {
                            Some(k) if ok => &rest[1..k],
                            _ => return Err(bad(base + o + 1)),
                        };
                        let ch = u32::from_str_radix(hex, 16)
                            .ok()
                            .filter(|_| !hex.is_empty() && hex.len() <= 6)
                            .and_then(char::from_u32)
                            .ok_or_else(|| bad(base + o + 2 + hex.len()))?;
                        out.push(ch);
                        // Skip `{HEX}` (ASCII, so one char per byte).
                        for _ in 0..hex.len() + 2 {
                            chars.next();
                        }
                    }
                    Some((o, c)) => return Err(bad(base + o + c.len_utf8())),
                    None => return Err(bad(text.len())),
                }
            }
            c => out.push(c),
        }
    }
    *i = text.len();
    Err(Diagnostic::new(
        "syntax",
        Span::new(file, start as u32, text.len() as u32),
        "unterminated string literal",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(0, s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn range_is_not_a_float() {
        assert_eq!(
            toks("0..n"),
            vec![
                Tok::Int(0),
                Tok::Punct(".."),
                Tok::Ident("n".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn floats() {
        assert_eq!(toks("1.5")[0], Tok::Float(1.5));
        assert_eq!(toks("1e-3")[0], Tok::Float(1e-3));
        assert_eq!(toks("2.0e10")[0], Tok::Float(2.0e10));
        assert_eq!(toks("3")[0], Tok::Int(3));
        // `2e` is not an exponent: integer then identifier.
        assert_eq!(toks("2e")[..2], [Tok::Int(2), Tok::Ident("e".into())]);
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(
            toks(r#""a\"b\\c\n\u{7f}x""#)[0],
            Tok::Str("a\"b\\c\n\u{7f}x".into())
        );
        assert!(lex(0, "\"abc").is_err());
        assert!(lex(0, r#""\q""#).is_err());
        assert!(lex(0, r#""\u{zz}""#).is_err());
        assert!(lex(0, r#""\u{110000}""#).is_err());
    }

    #[test]
    fn operators_longest_first() {
        assert_eq!(
            toks("a += b <= c // comment\n != d"),
            vec![
                Tok::Ident("a".into()),
                Tok::Punct("+="),
                Tok::Ident("b".into()),
                Tok::Punct("<="),
                Tok::Ident("c".into()),
                Tok::Punct("!="),
                Tok::Ident("d".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(lex(0, "a $ b").is_err());
        assert!(lex(0, "99999999999999999999999").is_err());
        assert!(lex(0, "é").is_err());
    }
}
