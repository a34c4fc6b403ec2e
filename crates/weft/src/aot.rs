//! Ahead-of-time output for build systems: a `.c` file, its `.h`, and a Make-style `.d`
//! dependency file naming every `.weft` source the output was made from.

use crate::{Error, Program};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use weft_c::CUnit;
use weft_ir::Proc;

/// The files written.
#[derive(Clone, Debug)]
pub struct AotFiles {
    pub c: PathBuf,
    pub h: PathBuf,
    pub d: PathBuf,
}

/// The procs to export from a program: the one named (a proc, or a pipeline or pipeline
/// schedule, lowered), or every proc that is not an instruction and every pipeline's proc (see
/// [`pipeline_procs`]).
pub fn select_procs(program: &Program, name: Option<&str>) -> Result<Vec<Arc<Proc>>, Error> {
    match name {
        Some(n) => match program.module.proc(n) {
            Some(p) => Ok(vec![p.clone()]),
            None if program.module.pipelines.iter().any(|i| i.name == n) => {
                Ok(vec![crate::pipeline::lower(program, n)?.proc])
            }
            None => Err(Error::message(format!(
                "error: no proc or pipeline named `{n}` in this file"
            ))),
        },
        None => {
            let mut procs: Vec<Arc<Proc>> = program
                .module
                .procs
                .iter()
                .filter(|p| !p.is_instr())
                .cloned()
                .collect();
            procs.extend(pipeline_procs(program)?);
            Ok(procs)
        }
    }
}

/// The lowered, checked procs of a program's pipelines: every pipeline schedule, and every
/// pipeline that no schedule schedules (with every func inlined, Halide's default). Each is
/// named by its schedule (or pipeline) and takes the arguments `docs/pipelines.md` §3 lists,
/// derived ones last ([`crate::pipeline::push_derived`]).
pub fn pipeline_procs(program: &Program) -> Result<Vec<Arc<Proc>>, Error> {
    let items = &program.module.pipelines;
    let mut out = Vec::new();
    for it in items {
        let scheduled = items
            .iter()
            .any(|o| o.base.as_deref() == Some(it.name.as_str()));
        if it.base.is_none() && scheduled {
            continue;
        }
        out.push(crate::pipeline::lower(program, &it.name)?.proc);
    }
    Ok(out)
}

fn escape_make(p: &Path) -> String {
    p.display()
        .to_string()
        .replace(' ', "\\ ")
        .replace('$', "$$")
}

/// Write `<stem>.c`, `<stem>.h` and `<stem>.d` into `out_dir`, every exported symbol prefixed by
/// `namespace` (see [`weft_c::names::namespace_error`]); returns the files and the unit.
pub fn write(
    program: &Program,
    procs: &[Arc<Proc>],
    out_dir: &Path,
    stem: &str,
    namespace: &str,
) -> Result<(AotFiles, CUnit), Error> {
    let unit =
        weft_c::emit_in(procs, namespace).map_err(|d| Error::new(&program.sources, vec![d]))?;
    std::fs::create_dir_all(out_dir)
        .map_err(|e| Error::message(format!("error: cannot create {}: {e}", out_dir.display())))?;
    let files = AotFiles {
        c: out_dir.join(format!("{stem}.c")),
        h: out_dir.join(format!("{stem}.h")),
        d: out_dir.join(format!("{stem}.d")),
    };
    let deps: Vec<String> = program.deps.iter().map(|p| escape_make(p)).collect();
    let depfile = format!(
        "{} {}: {}\n",
        escape_make(&files.c),
        escape_make(&files.h),
        deps.join(" ")
    );
    for (path, text) in [
        (&files.c, &unit.source),
        (&files.h, &unit.header),
        (&files.d, &depfile),
    ] {
        std::fs::write(path, text)
            .map_err(|e| Error::message(format!("error: cannot write {}: {e}", path.display())))?;
    }
    Ok((files, unit))
}
