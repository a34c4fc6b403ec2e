//! Pipelines of a `.weft` file: parsed and validated (`weft-pipe`), scheduled by their text
//! schedules' directives, lowered into a proc with bounds inference, checked, and then scheduled
//! further by the schedule's proc-level steps (`weft-sched`), checked again.

use crate::hostbuf::HostData;
use crate::{Error, Program};
use std::sync::{Arc, OnceLock};
use weft_interp::{Buffer, Scalar};
use weft_ir::{DType, Diagnostic, PipelineItem, Proc, Span};
use weft_pipe::ast::Pipeline;
use weft_pipe::lower::Lowered;
use weft_pipe::schedule::Schedule;

/// A pipeline of a program, lowered.
pub struct LoweredPipeline {
    /// The pipeline (named after the schedule when one was asked for).
    pub pipeline: Pipeline,
    pub schedule: Schedule,
    /// The directives' result: the lowered proc before any proc-level step, and the regions.
    pub lowered: Lowered,
    /// The final proc: after the proc-level steps, checked.
    pub proc: Arc<Proc>,
}

/// The pipelines and pipeline schedules of a program, by name.
pub fn names(p: &Program) -> Vec<String> {
    p.module.pipelines.iter().map(|i| i.name.clone()).collect()
}

fn item<'a>(p: &'a Program, name: &str) -> Option<&'a PipelineItem> {
    p.module.pipelines.iter().find(|i| i.name == name)
}

fn fail(p: &Program, span: Span, rule: &'static str, msg: String) -> Error {
    Error::new(&p.sources, vec![Diagnostic::new(rule, span, msg)])
}

/// A pipeline with its schedule and the proc-level steps (text, place) to apply after lowering.
pub type Parsed = (Pipeline, Schedule, Vec<(String, Span)>);

/// Parse and validate the pipeline `name` (a pipeline, or a schedule of one: then its chain of
/// schedules back to the pipeline), giving the pipeline, its schedule and the proc-level steps.
pub fn parse(p: &Program, name: &str) -> Result<Parsed, Error> {
    let Some(it) = item(p, name) else {
        let known = names(p);
        return Err(Error::message(format!(
            "error: no pipeline or pipeline schedule named `{name}` (the file has: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    // The chain of schedules, the pipeline first.
    let mut chain = vec![it];
    while let Some(base) = &chain.last().unwrap().base {
        let Some(b) = item(p, base) else {
            return Err(fail(
                p,
                it.span,
                "unknown-name",
                format!("unknown pipeline `{base}`"),
            ));
        };
        if chain.len() > p.module.pipelines.len() {
            return Err(fail(
                p,
                it.span,
                "schedule",
                "schedules based on each other".into(),
            ));
        }
        chain.push(b);
    }
    chain.reverse();
    let root = chain[0];
    let mut pipeline = weft_pipe::parse::parse_pipeline(root.span.file, &root.text, root.span.lo)
        .map_err(|d| Error::new(&p.sources, vec![d]))?;
    if let Err(ds) = weft_pipe::validate::validate(&pipeline) {
        let ds = ds
            .into_iter()
            .map(|mut d| {
                // Built from text, a violation names its statement; else the pipeline.
                if d.span == Span::DUMMY {
                    d.span = root.span;
                }
                d
            })
            .collect();
        return Err(Error::new(&p.sources, ds));
    }
    let mut schedule = Schedule::new(&pipeline);
    let mut steps = Vec::new();
    for s in &chain[1..] {
        let parsed =
            weft_pipe::script::parse_schedule(s.span.file, &s.text, s.span.lo, &pipeline, schedule)
                .map_err(|d| Error::new(&p.sources, vec![d]))?;
        schedule = parsed.schedule;
        steps.extend(parsed.proc_steps);
    }
    pipeline.name = name.to_string();
    Ok((pipeline, schedule, steps))
}

/// Lower a pipeline under a schedule, check the proc (every rule of `weft check`) and prove its
/// parallel loops race-free, as for source-written ones. Diagnostics point at `span`.
pub fn lower_checked(
    pipeline: &Pipeline,
    schedule: &Schedule,
    span: Span,
) -> Result<Lowered, Vec<Diagnostic>> {
    let lowered = lower_unchecked(pipeline, schedule, span)?;
    let cache = weft_jit::Jit::new().ok();
    let dir = cache.as_ref().map(|j| j.cache_dir());
    match check_lowered_once(&lowered.proc, span, dir) {
        Ok(()) => Ok(lowered),
        Err(d) => checked_fallback(pipeline, schedule, &lowered, d, None, span, dir),
    }
}

/// Where the checker rejected the lowered proc `rejected` (with `rejection`): the pipeline
/// lowered without partitioning loops that no split made around loops of constant ranges
/// ([`weft_pipe::lower::lower_unpartitioned`]), which the checker cannot always combine for a
/// reader of the func, its proc-level `steps` applied (where `rejected` had them), checked in
/// turn; the rejection stands where that is the same proc.
fn checked_fallback(
    pipeline: &Pipeline,
    schedule: &Schedule,
    rejected: &Lowered,
    rejection: Vec<Diagnostic>,
    steps: Option<(&Program, &[(String, Span)])>,
    span: Span,
    cache: Option<&std::path::Path>,
) -> Result<Lowered, Vec<Diagnostic>> {
    let plain = weft_syntax::std_memory("DRAM")
        .and_then(|dram| weft_pipe::lower::lower_unpartitioned(pipeline, schedule, &dram).ok())
        .ok_or_else(|| rejection.clone())?;
    let plain = match steps {
        Some((p, steps)) => Lowered {
            proc: apply_proc_steps(p, &plain.proc, steps)?,
            ..plain
        },
        None => plain,
    };
    if plain.proc.to_string() == rejected.proc.to_string() {
        return Err(rejection);
    }
    check_lowered_once(&plain.proc, span, cache)?;
    Ok(plain)
}

/// [`check_lowered`], its verdict remembered: an empty file `checked-<key>` in the JIT cache
/// directory `cache` (none: nothing remembered) for each lowered proc this build of weft
/// accepted, the key the hash of weft's sources (see build.rs) and of the proc's text with the
/// procs it calls and the memories they use ([`standalone`], which reads back to the same
/// procs): all the checker reads of it. The checker of one build gives one verdict, so a proc
/// accepted before is accepted again without the solver (interpolate's proofs take 15 s).
/// Rejections are not remembered.
fn check_lowered_once(
    proc: &Arc<Proc>,
    span: Span,
    cache: Option<&std::path::Path>,
) -> Result<(), Vec<Diagnostic>> {
    let marker = cache.map(|dir| verdict_marker(dir, proc));
    if marker.as_ref().is_some_and(|m| m.exists()) {
        return Ok(());
    }
    check_lowered(proc, span)?;
    if let Some(m) = marker {
        // Best effort: a verdict that cannot be written is proved again next time.
        let _ = std::fs::write(m, b"");
    }
    Ok(())
}

/// Lower a pipeline under a schedule; the proc is not checked yet ([`check_lowered`]).
fn lower_unchecked(
    pipeline: &Pipeline,
    schedule: &Schedule,
    span: Span,
) -> Result<Lowered, Vec<Diagnostic>> {
    let dram = weft_syntax::std_memory("DRAM")
        .ok_or_else(|| vec![Diagnostic::new("memory", span, "no DRAM in the prelude")])?;
    weft_pipe::lower::lower(pipeline, schedule, &dram).map_err(|e| {
        let mut d = Diagnostic::new("schedule", span, e.to_string());
        if !e.alternatives.is_empty() {
            d = d.with_note(format!("legal instead: {}", e.alternatives.join(", ")));
        }
        vec![d]
    })
}

/// Every rule of `weft check` on a lowered proc, and its parallel loops race-free.
fn check_lowered(proc: &Arc<Proc>, span: Span) -> Result<(), Vec<Diagnostic>> {
    weft_check::check_proc(proc)?;
    let mut analysis = weft_sched::effects::Analysis::new();
    weft_sched::prims::parallelize::check_parallel_loops(&mut analysis, proc, "parallel").map_err(
        |e| {
            let mut d = e.to_diagnostic();
            d.rule = "race";
            d.span = span;
            vec![d]
        },
    )
}

/// Lower the pipeline `name` (see [`parse`], [`lower_checked`]) and apply its proc-level steps.
pub fn lower(p: &Program, name: &str) -> Result<LoweredPipeline, Error> {
    let (pipeline, schedule, steps) = parse(p, name)?;
    let span = item(p, name).map_or(Span::DUMMY, |i| i.span);
    let lowered =
        lower_checked(&pipeline, &schedule, span).map_err(|d| Error::new(&p.sources, d))?;
    let proc = if steps.is_empty() {
        lowered.proc.clone()
    } else {
        let cache = weft_jit::Jit::new().ok();
        let dir = cache.as_ref().map(|j| j.cache_dir());
        let proc =
            stepped_once(p, &lowered.proc, &steps, dir).map_err(|d| Error::new(&p.sources, d))?;
        check_lowered_once(&proc, span, dir).map_err(|d| Error::new(&p.sources, d))?;
        proc
    };
    Ok(LoweredPipeline {
        pipeline,
        schedule,
        lowered,
        proc,
    })
}

/// [`apply_proc_steps`], its result remembered in the JIT cache directory `cache` (none:
/// nothing remembered): `stepped-<key>.proc`, the result's [`standalone`] text, the key the hash
/// of weft's sources, of `proc`'s standalone text, of the steps and of what they may name
/// ([`write_names`]): all the steps read. A step's own proofs (an `insert_call`'s take seconds
/// on interpolate) then run once per build, as the checker's verdict on the result does
/// ([`check_lowered_once`], which the caller still asks for). Failures are not remembered.
fn stepped_once(
    p: &Program,
    proc: &Arc<Proc>,
    steps: &[(String, Span)],
    cache: Option<&std::path::Path>,
) -> Result<Arc<Proc>, Vec<Diagnostic>> {
    let entry = cache.map(|dir| {
        let mut names = String::new();
        write_names(&mut names, p);
        let key = digest(&[
            "weft-stepped",
            env!("WEFT_SOURCE_HASH"),
            &standalone(proc),
            // The steps' text alone: where they are written changes no result.
            &format!("{:?}", steps.iter().map(|(t, _)| t).collect::<Vec<_>>()),
            &names,
        ]);
        (
            dir.join(format!("stepped-{key}.proc")),
            dir.join(entry_temporary(&key)),
        )
    });
    if let Some(hit) = entry
        .as_ref()
        .and_then(|(f, _)| std::fs::read_to_string(f).ok())
        .and_then(|text| lowered_from_text(&text, &proc.name))
    {
        return Ok(hit);
    }
    let stepped = apply_proc_steps(p, proc, steps)?;
    if let Some((path, tmp)) = entry {
        // Best effort, whole or not at all: written aside (a name of this process and call),
        // then renamed into place.
        if std::fs::write(&tmp, standalone(&stepped)).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    Ok(stepped)
}

/// A pipeline's proc-level steps (text, place), applied in order to its lowered proc `proc`
/// with the names of the program `p` (its procs, instructions and memories, its imports' and
/// the prelude's). The result is not checked as a whole yet.
fn apply_proc_steps(
    p: &Program,
    proc: &Arc<Proc>,
    steps: &[(String, Span)],
) -> Result<Arc<Proc>, Vec<Diagnostic>> {
    let mut sched = weft_sched::Schedule::new(proc.clone());
    let (module, scope) = (&p.module, &p.scope);
    let memories = |n: &str| {
        module
            .memory(n)
            .or_else(|| scope.memories.get(n))
            .cloned()
            .or_else(|| weft_syntax::std_memory(n))
    };
    let procs = |n: &str| module.proc(n).or_else(|| scope.procs.get(n)).cloned();
    for (text, at) in steps {
        let mut sc = p.scope.clone();
        let step = weft_syntax::parse_step(at.file, text, &mut sc).map_err(|mut d| {
            d.span = *at;
            vec![d]
        })?;
        weft_sched::script::apply_step_in(&mut sched, &step, &memories, &procs).map_err(|e| {
            let mut d = e.to_diagnostic();
            d.span = *at;
            vec![d]
        })?;
    }
    Ok(sched.proc().clone())
}

/// An input given to [`realize`]: its region (min, extent per dimension, first dimension
/// innermost) and its values.
pub struct InputData {
    pub region: Vec<(i64, i64)>,
    pub data: HostData,
}

/// The outputs of a realization, each dense over the window (first dimension innermost).
pub struct Realization {
    pub window: Vec<(i64, i64)>,
    pub outputs: Vec<(String, HostData)>,
    /// The inputs the realization read (given, or made up over the region the window needs).
    pub inputs: Vec<InputData>,
    /// Time of the compiled call (the best of `reps`).
    pub time: std::time::Duration,
}

/// What `lp` reads of each input to realize `window` (Halide's `infer_input_bounds`), with
/// `params` the `i32` parameters' values by name.
pub fn input_regions(
    lp: &LoweredPipeline,
    window: &[(i64, i64)],
    params: &[(String, i64)],
) -> Result<Vec<Vec<(i64, i64)>>, Error> {
    input_regions_given(lp, window, params, &[])
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
}

/// [`input_regions`], knowing the regions of some inputs already (a boundary condition's reads
/// depend on its input's bounds); one result per input.
fn input_regions_given(
    lp: &LoweredPipeline,
    window: &[(i64, i64)],
    params: &[(String, i64)],
    known: &[Option<Vec<(i64, i64)>>],
) -> Vec<Result<Vec<(i64, i64)>, Error>> {
    let mut named: Vec<(String, &[(i64, i64)])> = lp
        .pipeline
        .outputs
        .iter()
        .map(|&o| (lp.pipeline.funcs[o].name.clone(), window))
        .collect();
    for (k, r) in known.iter().enumerate() {
        if let (Some(r), Some(i)) = (r, lp.pipeline.inputs.get(k)) {
            named.push((i.name.clone(), r.as_slice()));
        }
    }
    let env = |n: &str| -> Option<i64> {
        for (o, dims) in &named {
            if let Some(rest) = n.strip_prefix(&format!("{o}_")) {
                let (d, what) = rest.split_once('_')?;
                let (min, ext) = *dims.get(d.parse::<usize>().ok()?)?;
                return match what {
                    "min" => Some(min),
                    "extent" => Some(ext),
                    _ => None,
                };
            }
        }
        params.iter().find(|(k, _)| k == n).map(|(_, v)| *v)
    };
    // With `specialize`, the reads of the version that runs for this window (the first whose
    // condition holds); the hull of all when a condition cannot be evaluated yet.
    let mut reads = &lp.lowered.inputs;
    for v in &lp.lowered.versions {
        match weft_pipe::lower::eval_control(&v.when, &env) {
            Some(0) => continue,
            Some(_) => reads = &v.inputs,
            None => {}
        }
        break;
    }
    reads
        .iter()
        .map(|(name, dims)| {
            dims.iter()
                .map(|(lo, hi)| {
                    match (
                        weft_pipe::lower::eval_control(lo, &env),
                        weft_pipe::lower::eval_control(hi, &env),
                    ) {
                        (Some(l), Some(h)) => Ok((l, (h - l + 1).max(1))),
                        _ => Err(Error::message(format!(
                            "error: the region of input `{name}` depends on a value not given (a parameter, or its own bounds)"
                        ))),
                    }
                })
                .collect()
        })
        .collect()
}

/// Compile `lp` and realize its outputs on `window`. `params` gives every parameter (by name);
/// an input left `None` gets random values over the region the window needs.
pub fn realize(
    lp: &LoweredPipeline,
    jit: &weft_jit::Jit,
    window: &[(i64, i64)],
    params: &[(String, Scalar)],
    inputs: Vec<Option<InputData>>,
    reps: usize,
) -> Result<Realization, Error> {
    let p = &lp.pipeline;
    for &o in &p.outputs {
        if p.funcs[o].vars.len() != window.len() {
            return Err(Error::message(format!(
                "error: output `{}` has {} dimensions; the window has {}",
                p.funcs[o].name,
                p.funcs[o].vars.len(),
                window.len()
            )));
        }
    }
    if window.iter().any(|&(_, e)| e < 1) {
        return Err(Error::message(
            "error: every extent of the window must be at least 1",
        ));
    }
    let ints: Vec<(String, i64)> = params
        .iter()
        .filter_map(|(k, v)| match v {
            Scalar::I32(x) => Some((k.clone(), *x as i64)),
            _ => None,
        })
        .collect();
    let known: Vec<Option<Vec<(i64, i64)>>> = (0..p.inputs.len())
        .map(|k| {
            inputs
                .get(k)
                .and_then(|g| g.as_ref())
                .map(|g| g.region.clone())
        })
        .collect();
    let regions = input_regions_given(lp, window, &ints, &known);
    let mut args_data: Vec<(Vec<usize>, HostData)> = Vec::new();
    let mut ctrl: Vec<Vec<i64>> = Vec::new();
    let mut value_of = Vec::new();
    for q in &p.params {
        let v = params
            .iter()
            .find(|(k, _)| *k == q.name)
            .map(|(_, v)| *v)
            .ok_or_else(|| Error::message(format!("error: no value for parameter `{}`", q.name)))?;
        if v.dtype() != q.ty {
            return Err(Error::message(format!(
                "error: parameter `{}` is {}, given {}",
                q.name,
                q.ty,
                v.dtype()
            )));
        }
        value_of.push(v);
    }
    let mut seed = 0x5EEDu64;
    for (k, inp) in p.inputs.iter().enumerate() {
        let given = inputs.get(k).and_then(|g| g.as_ref());
        let (region, data) = match given {
            Some(g) => {
                if g.region.len() != inp.rank {
                    return Err(Error::message(format!(
                        "error: input `{}` has {} dimensions; {} given",
                        inp.name,
                        inp.rank,
                        g.region.len()
                    )));
                }
                (g.region.clone(), g.data.clone())
            }
            None => {
                // A region that depends on the input's own bounds (a boundary condition reads
                // inside whatever it is given), or none (an input that is not read): the
                // window's.
                let region = match &regions[k] {
                    Ok(r) if r.len() == inp.rank => r.clone(),
                    _ => (0..inp.rank)
                        .map(|d| window.get(d).copied().unwrap_or((0, 1)))
                        .collect(),
                };
                let n: i64 = region.iter().map(|r| r.1).product();
                let cells: Vec<Scalar> = (0..n)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        if inp.elem.is_float() {
                            Scalar::F64((seed % 1000) as f64 / 1000.0).cast(inp.elem)
                        } else {
                            Scalar::from_int_wrapping((seed % 256) as i128, inp.elem)
                        }
                    })
                    .collect();
                let shape = region.iter().rev().map(|r| r.1 as usize).collect();
                let b = Buffer::from_scalars(inp.elem, shape, cells);
                (region, HostData::from_buffer(&b))
            }
        };
        ctrl.push(region.iter().flat_map(|&(m, e)| [m, e]).collect());
        args_data.push((region.iter().rev().map(|r| r.1 as usize).collect(), data));
    }
    let wshape: Vec<usize> = window.iter().rev().map(|r| r.1 as usize).collect();
    let len: usize = wshape.iter().product();
    for &o in &p.outputs {
        let b = Buffer::zeros(p.funcs[o].ty, vec![len]);
        ctrl.push(window.iter().flat_map(|&(m, e)| [m, e]).collect());
        args_data.push((wshape.clone(), HostData::from_buffer(&b)));
    }
    let module = jit
        .compile(std::slice::from_ref(&lp.proc))
        .map_err(|e| Error::message(format!("error: {e}")))?;
    let kernel = module
        .kernel(&lp.proc.name)
        .map_err(|e| Error::message(format!("error: {e}")))?;
    let mut scalars: Vec<HostData> = value_of
        .iter()
        .filter(|v| v.dtype() != DType::I32)
        .map(|v| HostData::from_buffer(&Buffer::from_scalars(v.dtype(), vec![], vec![*v])))
        .collect();
    let mut best = std::time::Duration::MAX;
    for _ in 0..reps.max(1) {
        let mut args: Vec<weft_jit::Arg> = Vec::new();
        let mut sc = scalars.iter_mut();
        for v in &value_of {
            match v {
                Scalar::I32(x) => args.push(weft_jit::Arg::Int(*x as i64)),
                _ => args.push(sc.next().expect("one per parameter").as_arg(&[])),
            }
        }
        for ((shape, data), c) in args_data.iter_mut().zip(&ctrl) {
            args.extend(c.iter().map(|&v| weft_jit::Arg::Int(v)));
            args.push(data.as_arg(shape));
        }
        push_derived(&lp.proc, &mut args)?;
        let t = std::time::Instant::now();
        kernel
            .call(&mut args)
            .map_err(|e| Error::message(format!("error: {e}")))?;
        best = best.min(t.elapsed());
    }
    let mut data = args_data.into_iter().map(|(_, d)| d);
    let inputs = ctrl
        .iter()
        .take(p.inputs.len())
        .map(|c| InputData {
            region: c.chunks(2).map(|m| (m[0], m[1])).collect(),
            data: data.next().expect("one per input"),
        })
        .collect();
    let outputs = p
        .outputs
        .iter()
        .zip(data)
        .map(|(&o, d)| (p.funcs[o].name.clone(), d))
        .collect();
    Ok(Realization {
        window: window.to_vec(),
        outputs,
        inputs,
        time: best,
    })
}

/// Compare a realization with the pipeline interpreter (the reference semantics) on the same
/// inputs: every point where the reference has a value must be the same bits. Returns the
/// number of points compared.
pub fn check_against_reference(
    lp: &LoweredPipeline,
    params: &[(String, Scalar)],
    r: &Realization,
) -> Result<usize, Error> {
    let p = &lp.pipeline;
    let args = weft_pipe::interp::Args {
        params: p
            .params
            .iter()
            .map(|q| {
                params
                    .iter()
                    .find(|(k, _)| *k == q.name)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| Error::message(format!("error: no value for `{}`", q.name)))
            })
            .collect::<Result<_, _>>()?,
        inputs: r
            .inputs
            .iter()
            .map(|i| weft_pipe::interp::InputBuffer {
                region: i.region.clone(),
                data: (0..i.data.len()).map(|k| i.data.scalar(k)).collect(),
            })
            .collect(),
    };
    let mut compared = 0;
    for (&o, (name, got)) in p.outputs.iter().zip(&r.outputs) {
        let want = weft_pipe::interp::realize(p, &args, o, &r.window)
            .map_err(|e| Error::message(format!("error: the reference interpreter: {e}")))?;
        for (k, w) in want.iter().enumerate() {
            if let Ok(w) = w {
                let g = got.scalar(k);
                if !crate::hostbuf::same_bits(g, *w) {
                    return Err(Error::message(format!(
                        "error: `{name}` differs from the reference at point {k} of the window: {g:?}, the reference {w:?}"
                    )));
                }
                compared += 1;
            }
        }
    }
    Ok(compared)
}

/// Read a PNG as an input of element type `elem` (u8 or u16) and rank 2 (gray: x, y) or 3
/// (x, y, channel, planar as Halide's), placed at min 0.
pub fn read_png(path: &std::path::Path, elem: DType, rank: usize) -> Result<InputData, Error> {
    let img = image::open(path)
        .map_err(|e| Error::message(format!("error: cannot read {}: {e}", path.display())))?;
    let (w, h) = (img.width() as usize, img.height() as usize);
    let channels = match rank {
        2 => 1,
        3 => 3,
        _ => {
            return Err(Error::message(format!(
                "error: a PNG is an input of 2 (gray) or 3 (RGB) dimensions, not {rank}"
            )))
        }
    };
    let planar = |px: &[u16]| -> Vec<u16> {
        let mut out = vec![0u16; w * h * channels];
        for (i, chunk) in px.chunks(channels).enumerate() {
            for (c, v) in chunk.iter().enumerate() {
                out[c * w * h + i] = *v;
            }
        }
        out
    };
    let data = match (elem, channels) {
        (DType::U8, 1) => HostData::U8(img.to_luma8().into_raw()),
        (DType::U8, _) => HostData::U8(
            planar(
                &img.to_rgb8()
                    .into_raw()
                    .iter()
                    .map(|&v| v as u16)
                    .collect::<Vec<_>>(),
            )
            .into_iter()
            .map(|v| v as u8)
            .collect(),
        ),
        (DType::U16, 1) => HostData::U16(img.to_luma16().into_raw()),
        (DType::U16, _) => HostData::U16(planar(&img.to_rgb16().into_raw())),
        _ => {
            return Err(Error::message(format!(
                "error: a PNG is read into a u8 or u16 input, not {elem}"
            )))
        }
    };
    let mut region = vec![(0, w as i64), (0, h as i64)];
    if rank == 3 {
        region.push((0, 3));
    }
    Ok(InputData { region, data })
}

/// Write an output (u8 or u16, 2 dimensions, or 3 with 1 or 3 channels) as a PNG.
pub fn write_png(
    path: &std::path::Path,
    window: &[(i64, i64)],
    data: &HostData,
) -> Result<(), Error> {
    let (w, h) = (window[0].1 as u32, window.get(1).map_or(1, |d| d.1) as u32);
    let channels = window.get(2).map_or(1, |d| d.1) as usize;
    let n = (w * h) as usize;
    let interleave = |v: &dyn Fn(usize) -> u16| -> Vec<u16> {
        (0..n * channels)
            .map(|i| v((i % channels) * n + i / channels))
            .collect()
    };
    let err = |e: image::ImageError| {
        Error::message(format!("error: cannot write {}: {e}", path.display()))
    };
    match (data, channels) {
        (HostData::U8(v), 1) => image::GrayImage::from_raw(w, h, v.clone())
            .ok_or_else(|| Error::message("error: bad image size"))?
            .save(path)
            .map_err(err),
        (HostData::U8(v), 3) => image::RgbImage::from_raw(
            w,
            h,
            interleave(&|i| v[i] as u16).into_iter().map(|x| x as u8).collect(),
        )
        .ok_or_else(|| Error::message("error: bad image size"))?
        .save(path)
        .map_err(err),
        (HostData::U16(v), 1) => {
            image::ImageBuffer::<image::Luma<u16>, _>::from_raw(w, h, v.clone())
                .ok_or_else(|| Error::message("error: bad image size"))?
                .save(path)
                .map_err(err)
        }
        (HostData::U16(v), 3) => {
            image::ImageBuffer::<image::Rgb<u16>, _>::from_raw(w, h, interleave(&|i| v[i]))
                .ok_or_else(|| Error::message("error: bad image size"))?
                .save(path)
                .map_err(err)
        }
        _ => Err(Error::message(
            "error: PNG output needs a u8 or u16 output of 2 dimensions (or 3 with 1 or 3 channels)",
        )),
    }
}

/// Append to `args` (a lowered pipeline's arguments up to its outputs') the derived arguments
/// of `proc` (the named ends of its root funcs' regions, [`weft_pipe::lower::derived_args`]).
pub fn push_derived(proc: &Proc, args: &mut Vec<weft_jit::Arg>) -> Result<(), Error> {
    let ints: Vec<Option<i64>> = args
        .iter()
        .map(|a| match a {
            weft_jit::Arg::Int(v) => Some(*v),
            _ => None,
        })
        .collect();
    let derived = weft_pipe::lower::derived_args(proc, &ints)
        .map_err(|e| Error::message(format!("error: {e}")))?;
    args.extend(derived.into_iter().map(weft_jit::Arg::Int));
    Ok(())
}

/// The proc `name` of a lowered pipeline printed as text (a cache entry, or the text that
/// `weft::build` embeds to compute derived arguments).
pub fn lowered_from_text(text: &str, name: &str) -> Option<Arc<Proc>> {
    let module =
        weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "lowered", text).ok()?;
    module.procs.into_iter().find(|p| p.name == name)
}

/// A pipeline compiled by [`compile`].
pub struct CompiledPipeline {
    /// What [`push_derived`] reads of the lowered proc: its arguments and the preconditions
    /// that define the derived ones ([`weft_pipe::lower::derivation`]).
    pub derivation: Arc<Proc>,
    pub module: weft_jit::Module,
    /// Whether lowering and checking were skipped: the pipeline cache had an entry for this
    /// pipeline, schedule, compiler configuration and build of weft.
    pub cached: bool,
    /// The lowered, checked proc; on a cache hit read from `proc_file` when first asked for.
    proc: OnceLock<Arc<Proc>>,
    /// The cache's file of the proc's text and the text's hash.
    proc_file: Option<(std::path::PathBuf, String)>,
}

impl CompiledPipeline {
    /// The lowered, checked proc. A cache hit reads it back from its file (`pipe-<key>.proc`,
    /// checked against the hash its entry holds) only when it is asked for, since a hit needs
    /// only the derivation and the shared object.
    pub fn proc(&self) -> Result<Arc<Proc>, Vec<Diagnostic>> {
        if let Some(p) = self.proc.get() {
            return Ok(p.clone());
        }
        let p = self
            .proc_file
            .as_ref()
            .and_then(|(path, sha)| read_proc_file(path, sha, &self.derivation.name))
            .ok_or_else(|| {
                vec![Diagnostic::new(
                    "jit",
                    Span::DUMMY,
                    "the pipeline cache's proc is gone or damaged",
                )]
            })?;
        Ok(self.proc.get_or_init(|| p).clone())
    }
}

/// The proc `name` in the cache's file `path`, if its text has the hash `sha`.
fn read_proc_file(path: &std::path::Path, sha: &str, name: &str) -> Option<Arc<Proc>> {
    let text = std::fs::read_to_string(path).ok()?;
    (digest(&[&text]) == sha).then(|| lowered_from_text(&text, name))?
}

/// What proc-level steps may name, for a cache key: a step's text names procs, memories and
/// configs that the program defines (or imports), whose definitions change the result.
fn write_names(h: &mut impl std::fmt::Write, p: &Program) {
    for q in p.module.procs.iter().chain(p.scope.procs.values()) {
        let _ = write!(h, "\n{q}");
    }
    for m in p.module.memories.iter().chain(p.scope.memories.values()) {
        let _ = write!(h, "\n{m:?}");
    }
    for c in p.module.configs.iter().chain(p.scope.configs.values()) {
        let _ = write!(h, "\n{c:?}");
    }
}

/// The hex SHA-256 of length-prefixed parts.
fn digest(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A pipeline cache entry (`pipe-<key>.weft`): the derivation, the description of the shared
/// object ([`weft_jit::Module::describe`], `-` where there is none) and the hash of the proc's
/// text (`proc_text`, kept apart in `pipe-<key>.proc`: a hit reads the few lines it needs),
/// sealed with their hash.
fn cache_entry(proc: &Proc, proc_text: &str, module: &weft_jit::Module) -> String {
    let description = module.describe().unwrap_or_else(|| "-".to_string());
    let body = format!(
        "{}\n// module {description}\n// proc {}\n",
        weft_pipe::lower::derivation(proc),
        digest(&[proc_text])
    );
    format!("{body}// sha256: {}\n", digest(&[&body]))
}

/// The derivation, description and proc hash of a sealed entry; `None` when it is damaged.
fn read_cache_entry(text: &str) -> Option<(&str, &str, &str)> {
    let (body, seal) = text.rsplit_once("// sha256: ")?;
    if digest(&[body]) != seal.trim() {
        return None;
    }
    let (derivation, rest) = body.split_once("\n// module ")?;
    let (description, proc_sha) = rest.split_once("\n// proc ")?;
    Some((derivation, description, proc_sha.trim()))
}

/// Lower, check and compile a pipeline under a schedule with the JIT, caching the checked proc
/// beside the JIT's shared objects: a second compile of the same pipeline and schedule under
/// the same compiler configuration and build of weft (in this process or another; the key
/// holds a hash of weft's sources, so the shared object is the one this build's C compiles
/// to) reads the entry back
/// (`pipe-<key>.weft`: the proc's derivation, the shared object's description and the proc,
/// sealed with their hash), skips lowering and the checker's proofs, and loads the shared
/// object it names without emitting C; the proc is read only when asked for
/// ([`CompiledPipeline::proc`]). A damaged entry is ignored and rebuilt; an entry whose shared
/// object is gone compiles the proc it holds again. A [`Schedule`] holds directives only: the
/// proc-level steps of a text schedule are applied by [`compile_named`].
pub fn compile(
    jit: &weft_jit::Jit,
    pipeline: &Pipeline,
    schedule: &Schedule,
) -> Result<CompiledPipeline, Vec<Diagnostic>> {
    compile_stepped(jit, pipeline, schedule, None)
}

/// [`compile`] for the pipeline or pipeline schedule `name` of a program: its directives, then
/// its proc-level steps (`replace`, `insert_call`, `stage_mem`, ...) on the lowered proc, the
/// result checked as a whole. The cache key holds the steps and every proc, instruction, memory
/// and config the program can name, so an entry is found again only for the same definitions.
pub fn compile_named(
    jit: &weft_jit::Jit,
    p: &Program,
    name: &str,
) -> Result<CompiledPipeline, Error> {
    let (pipeline, schedule, steps) = parse(p, name)?;
    compile_stepped(jit, &pipeline, &schedule, Some((p, &steps)))
        .map_err(|d| Error::new(&p.sources, d))
}

/// [`compile`], then the proc-level steps of `steps` (with the program whose names they use).
fn compile_stepped(
    jit: &weft_jit::Jit,
    pipeline: &Pipeline,
    schedule: &Schedule,
    steps: Option<(&Program, &[(String, Span)])>,
) -> Result<CompiledPipeline, Vec<Diagnostic>> {
    let steps = steps.filter(|(_, s)| !s.is_empty());
    let io = |e: &dyn std::fmt::Display| vec![Diagnostic::new("jit", Span::DUMMY, e.to_string())];
    let key = {
        use sha2::{Digest, Sha256};
        use std::fmt::Write;
        // The pipeline and schedule are formatted into the hash as they are written: the
        // text of a large one would cost more to gather than to hash.
        struct Hashing(Sha256);
        impl Write for Hashing {
            fn write_str(&mut self, s: &str) -> std::fmt::Result {
                self.0.update(s.as_bytes());
                Ok(())
            }
        }
        let mut h = Hashing(Sha256::new());
        // Debug forms hold no newline (strings in them are escaped): the newlines separate.
        // The hash of weft's sources (see build.rs) keeps entries of other builds apart: their
        // lowering, checker or C may differ, and so may the shared object an entry names.
        let _ = write!(
            h,
            "weft-pipe {}\n{}\n{pipeline:?}\n{schedule:?}",
            env!("WEFT_SOURCE_HASH"),
            jit.fingerprint()
        );
        if let Some((p, steps)) = steps {
            let _ = write!(h, "\nsteps {steps:?}");
            write_names(&mut h, p);
        }
        h.0.finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let path = jit.cache_dir().join(format!("pipe-{key}.weft"));
    let proc_path = path.with_extension("proc");
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Some(hit) = compile_cached(jit, &text, &proc_path, &pipeline.name) {
            return Ok(hit);
        }
    }
    let lowered = lower_unchecked(pipeline, schedule, Span::DUMMY)?;
    let lowered = match steps {
        Some((p, steps)) => Lowered {
            proc: apply_proc_steps(p, &lowered.proc, steps)?,
            ..lowered
        },
        None => lowered,
    };
    // The C compiler runs while the checker proves the proc (on another core where there is
    // one); what it built is dropped unless the proc is accepted. Compiling and loading an
    // unchecked proc is harmless: nothing of it runs until the module is returned.
    let (checked, module) = std::thread::scope(|s| {
        let build = s.spawn(|| jit.compile(std::slice::from_ref(&lowered.proc)));
        let checked = check_lowered_once(&lowered.proc, Span::DUMMY, Some(jit.cache_dir()));
        (checked, build.join())
    });
    let (lowered, module) = match checked {
        Ok(()) => (
            lowered,
            module
                .map_err(|_| io(&"the C compiler's thread panicked"))?
                .map_err(|e| io(&e))?,
        ),
        Err(d) => {
            let plain = checked_fallback(
                pipeline,
                schedule,
                &lowered,
                d,
                steps,
                Span::DUMMY,
                Some(jit.cache_dir()),
            )?;
            let module = jit
                .compile(std::slice::from_ref(&plain.proc))
                .map_err(|e| io(&e))?;
            (plain, module)
        }
    };
    // Whole or not at all: each file written aside, then renamed into place; the proc first,
    // so that an entry found has its proc.
    let proc_text = standalone(&lowered.proc);
    let entry = cache_entry(&lowered.proc, &proc_text, &module);
    for (text, to) in [(&proc_text, &proc_path), (&entry, &path)] {
        let tmp = jit.cache_dir().join(entry_temporary(&key));
        std::fs::write(&tmp, text).map_err(|e| io(&e))?;
        std::fs::rename(&tmp, to).map_err(|e| io(&e))?;
    }
    Ok(CompiledPipeline {
        derivation: Arc::new(weft_pipe::lower::derivation(&lowered.proc)),
        module,
        cached: false,
        proc: OnceLock::from(lowered.proc),
        proc_file: None,
    })
}

/// The file that remembers that this build of weft accepted `proc` (see [`check_lowered_once`]),
/// named by the hash of the proc's [`standalone`] text: with what it calls, all the checker
/// reads of it.
fn verdict_marker(dir: &std::path::Path, proc: &Arc<Proc>) -> std::path::PathBuf {
    let key = digest(&[
        "weft-checked-lowered",
        env!("WEFT_SOURCE_HASH"),
        &standalone(proc),
    ]);
    dir.join(format!("checked-{key}"))
}

/// `proc` as the text of a module that reads back on its own: the memories outside the prelude
/// and the configs that it and its callees use, its callees (each before its callers), then
/// `proc` ([`weft_ir::visit::Deps`]). (A lowered proc calls instructions and procs only after
/// proc-level steps such as `replace` or `insert_call`.)
fn standalone(proc: &Arc<Proc>) -> String {
    let deps = weft_ir::visit::Deps::of(proc);
    let mut text = String::new();
    for m in &deps.memories {
        if weft_syntax::std_memory(&m.name).is_none() {
            text.push_str(&weft_ir::print::memory_to_string(m));
            text.push('\n');
        }
    }
    for c in &deps.configs {
        text.push_str(&weft_ir::print::config_to_string(c));
        text.push('\n');
    }
    for q in &deps.procs {
        text.push_str(&format!("{q}\n"));
    }
    text
}

/// The name a cache entry is written under before it is renamed into place: one of this
/// process and call, so that threads compiling one pipeline write their own (`tmp-<pid>-` is
/// what the JIT sweeps once the process is gone).
fn entry_temporary(key: &str) -> String {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "tmp-{}-pipe-{}-{key}",
        std::process::id(),
        WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// A cache hit from the entry `text`: the shared object its description names, or where that
/// cannot be loaded, the C of its proc (in `proc_path`) compiled again. `None` when the entry is
/// damaged or does not read back.
fn compile_cached(
    jit: &weft_jit::Jit,
    text: &str,
    proc_path: &std::path::Path,
    name: &str,
) -> Option<CompiledPipeline> {
    let (derivation, description, proc_sha) = read_cache_entry(text)?;
    let derivation = lowered_from_text(derivation, name)?;
    let (module, proc) = match jit.load_described(description) {
        Ok(m) => (m, OnceLock::new()),
        Err(_) => {
            let proc = read_proc_file(proc_path, proc_sha, name)?;
            (
                jit.compile(std::slice::from_ref(&proc)).ok()?,
                OnceLock::from(proc),
            )
        }
    };
    Some(CompiledPipeline {
        derivation,
        module,
        cached: true,
        proc,
        proc_file: Some((proc_path.to_path_buf(), proc_sha.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker's verdicts on lowered procs are remembered per proc text: an accepted proc
    /// leaves its marker, a rejected one none (it is proved, and rejected, every time), and a
    /// marker is what lets a proc through without the solver.
    #[test]
    fn accepted_lowered_procs_are_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let p = weft_pipe::parse::parse_pipeline(
            0,
            "pipeline twice(input: i32[1]) -> out { out(x): i32 = input(x) * 2; }",
            0,
        )
        .unwrap();
        let s = Schedule::new(&p);
        let good = lower_unchecked(&p, &s, Span::DUMMY).unwrap();
        let markers = || std::fs::read_dir(dir.path()).unwrap().count();
        check_lowered_once(&good.proc, Span::DUMMY, Some(dir.path())).unwrap();
        assert_eq!(markers(), 1);
        check_lowered_once(&good.proc, Span::DUMMY, Some(dir.path())).unwrap();
        assert_eq!(markers(), 1);
        let bad = lowered_from_text(
            "proc bad(n: size, a: f32[n] @ DRAM) {\n    a[n] = 0.0;\n}\n",
            "bad",
        )
        .unwrap();
        let bad = Lowered {
            proc: bad,
            ..lower_unchecked(&p, &s, Span::DUMMY).unwrap()
        };
        assert!(check_lowered_once(&bad.proc, Span::DUMMY, Some(dir.path())).is_err());
        assert_eq!(markers(), 1);
        std::fs::write(verdict_marker(dir.path(), &bad.proc), b"").unwrap();
        assert!(check_lowered_once(&bad.proc, Span::DUMMY, Some(dir.path())).is_ok());
        assert!(check_lowered_once(&bad.proc, Span::DUMMY, None).is_err());
    }

    /// Two writes of one entry (two threads) never share a temporary, and the JIT's sweep
    /// recognizes it as this process's.
    #[test]
    fn entry_temporaries_are_unique_per_write() {
        let (a, b) = (super::entry_temporary("k"), super::entry_temporary("k"));
        assert_ne!(a, b);
        assert!(
            a.starts_with(&format!("tmp-{}-", std::process::id())),
            "{a}"
        );
    }
}
