//! `weft fmt`: a file in canonical form with its comments kept (`// run:` lines included).
//!
//! The formatted text is written to a temporary file beside the original and parsed back; it is
//! accepted only when that gives the same program (procs alpha-equivalent, the same memories,
//! configs and schedule steps) and the same comments, so formatting can never change or lose
//! anything.

use crate::{parse, Error, Program};
use std::path::{Path, PathBuf};
use weft_ir::Module;

/// The formatted text of the file at `path`.
pub fn format_file(path: &Path) -> Result<String, Error> {
    let (text, tmp) = formatted_beside(path)?;
    let _ = std::fs::remove_file(tmp);
    Ok(text)
}

/// Format the file at `path` in place. Returns whether its text changed. The text is written
/// through the path, as an editor saves: a symbolic link keeps pointing at its target (which
/// gets the text), hard links stay one file, and the file keeps its permissions (a read-only
/// file is an error, not made writable).
pub fn format_in_place(path: &Path) -> Result<bool, Error> {
    let original = read(path)?;
    let (text, tmp) = formatted_beside(path)?;
    let _ = std::fs::remove_file(tmp);
    if text == original {
        return Ok(false);
    }
    std::fs::write(path, &text)
        .map_err(|e| Error::message(format!("error: cannot write {}: {e}", path.display())))?;
    Ok(true)
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path)
        .map_err(|e| Error::message(format!("error: cannot read {}: {e}", path.display())))
}

/// The formatted text, and the temporary file beside `path` that holds it, proved to parse to
/// the same program with the same comments.
fn formatted_beside(path: &Path) -> Result<(String, PathBuf), Error> {
    let program = parse(path)?;
    let text = read(path)?;
    let mut comments = weft_syntax::layout(&text);
    let out = weft_ir::print::module_with_comments(&program.module, &mut comments);
    // Beside the original, so that its imports of other files resolve the same way.
    let name = path.file_name().map_or("x".into(), |n| n.to_string_lossy());
    let tmp = path.with_file_name(format!(".{name}.fmt-{}", std::process::id()));
    std::fs::write(&tmp, &out)
        .map_err(|e| Error::message(format!("error: cannot write {}: {e}", tmp.display())))?;
    let verdict = same_program(&program, &tmp).and_then(|()| {
        let (a, b) = (weft_syntax::comments(&text), weft_syntax::comments(&out));
        let texts = |v: &[weft_ir::print::Comment]| -> Vec<String> {
            v.iter().map(|c| c.text.clone()).collect()
        };
        (texts(&a) == texts(&b))
            .then_some(())
            .ok_or("its comments".to_string())
    });
    if let Err(what) = verdict {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::message(format!(
            "internal error: formatting {} would change {what}; the file is left as it is",
            path.display()
        )));
    }
    Ok((out, tmp))
}

/// Whether the file at `tmp` parses to the program `p` (`Err` names what differs).
fn same_program(p: &Program, tmp: &Path) -> Result<(), String> {
    let q = parse(tmp).map_err(|e| format!("whether it parses ({e})"))?;
    let (a, b): (&Module, &Module) = (&p.module, &q.module);
    let print_all = |m: &Module| -> (Vec<String>, Vec<String>) {
        (
            m.memories
                .iter()
                .map(|x| weft_ir::print::memory_to_string(x))
                .chain(
                    m.configs
                        .iter()
                        .map(|x| weft_ir::print::config_to_string(x)),
                )
                .chain(m.imports.iter().cloned())
                .collect(),
            m.schedules
                .iter()
                .map(weft_ir::print::schedule_to_string)
                .collect(),
        )
    };
    if print_all(a) != print_all(b) {
        return Err("its imports, memories, configs or schedules".into());
    }
    let same_procs = a.procs.len() == b.procs.len()
        && a.procs
            .iter()
            .zip(&b.procs)
            .all(|(x, y)| x.name == y.name && weft_ir::alpha::alpha_eq_proc(x, y));
    if !same_procs {
        return Err("its procs".into());
    }
    Ok(())
}
