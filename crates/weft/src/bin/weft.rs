//! The `weft` command-line tool.

mod allocator;

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft::run::{run_and_compare, size_options, RunOptions};
use weft::{aot, Error};

#[derive(Parser)]
#[command(
    name = "weft",
    version,
    about = "weft: write what to compute, schedule how, get checked native code"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a .weft file: types, quasi-affine control, bounds and call preconditions; pipelines'
    /// validity and their directives' legality (exit 0 when well-formed and safe, 1 with
    /// diagnostics otherwise).
    Check { file: PathBuf },
    /// Print a .weft file in canonical form, its comments kept (`// run:` lines included).
    Fmt {
        file: PathBuf,
        /// Rewrite the file in place instead of printing it.
        #[arg(short = 'w', long)]
        write: bool,
        /// Print nothing; exit 1 when the file is not in canonical form.
        #[arg(long, conflicts_with = "write")]
        check: bool,
    },
    /// Emit C and a header (and a .d dependency file) for a .weft file.
    C {
        file: PathBuf,
        /// Export only this proc (default: every proc that is not an instruction).
        #[arg(long)]
        proc: Option<String>,
        /// Write NAME.c, NAME.h and NAME.d into this directory instead of printing the C.
        #[arg(short = 'o', long = "out-dir")]
        out_dir: Option<PathBuf>,
        /// The prefix of the exported C symbols (lowercase letters and digits; default: NAME, the
        /// proc's name or the file's stem, made lowercase letters and digits).
        #[arg(long)]
        namespace: Option<String>,
    },
    /// Run a proc on random inputs, compiled and interpreted; compare the results and time it.
    Run {
        file: PathBuf,
        #[arg(long)]
        proc: String,
        /// A control argument, NAME=VALUE, once for each: sizes in 1..=2147483647, indices and
        /// strides within ±2147483647, bools 0 or 1.
        #[arg(long = "size", value_parser = parse_size)]
        sizes: Vec<(String, i64)>,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Timed native repetitions (the best is reported).
        #[arg(long, default_value_t = 5)]
        reps: usize,
    },
    /// Apply a `schedule` of a .weft file and print the scheduled proc (exit 1 with the error when
    /// a step is rejected).
    Sched {
        file: PathBuf,
        /// The schedule's name.
        name: String,
        /// Print the proc after every step, with the step.
        #[arg(long)]
        trace: bool,
    },
    /// Print a pipeline's lowered proc: with every func at its default level, then after its
    /// schedule's directives and proc-level steps (PIPELINE names a pipeline or a schedule of one).
    Lower { file: PathBuf, pipeline: String },
    /// Print the region of every func of a lowered pipeline, and what it reads of its inputs
    /// (for a window `--size`, as numbers; without, as expressions).
    Bounds {
        file: PathBuf,
        pipeline: String,
        /// The window: `640x480` (mins 0), once per output dimension as `WxH...`.
        #[arg(long)]
        size: Option<String>,
        /// A parameter, NAME=VALUE.
        #[arg(long = "param", value_parser = parse_size)]
        params: Vec<(String, i64)>,
    },
    /// Realize a pipeline: compile it, run it on a window and write (or summarize) the output.
    Realize {
        file: PathBuf,
        pipeline: String,
        /// The window: `640x480` (mins 0); default the size of `--in`.
        #[arg(long)]
        size: Option<String>,
        /// A PNG (8- or 16-bit) for the first input; other inputs get random values.
        #[arg(long = "in")]
        input: Option<PathBuf>,
        /// Write the first output as a PNG.
        #[arg(long)]
        out: Option<PathBuf>,
        /// A parameter, NAME=VALUE (integers for i32 parameters, numbers for floats).
        #[arg(long = "param")]
        params: Vec<String>,
        /// Timed repetitions (the best is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Also run the pipeline interpreter on the same inputs and compare every point.
        #[arg(long)]
        check: bool,
    },
    /// Print the reference of the scheduling primitives (docs/schedules.md), or of one.
    Primitives { name: Option<String> },
    /// Run every `// run:` line of every .weft file in a directory (the shipped examples).
    Examples {
        #[arg(default_value = "examples")]
        dir: PathBuf,
    },
}

fn parse_size(s: &str) -> Result<(String, i64), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, found `{s}`"))?;
    let v: i64 = v
        .trim()
        .parse()
        .map_err(|_| format!("`{v}` is not an integer"))?;
    Ok((k.trim().to_string(), v))
}

fn run_one(
    file: &Path,
    proc: &str,
    sizes: &[(String, i64)],
    seed: u64,
    reps: usize,
) -> Result<String, Error> {
    let program = weft::load(file)?;
    let p = program
        .module
        .proc(proc)
        .ok_or_else(|| {
            Error::message(format!(
                "error: no proc named `{proc}` in {}",
                file.display()
            ))
        })?
        .clone();
    let jit = weft::jit::Jit::new().map_err(|e| Error::message(format!("error: {e}")))?;
    let opts = RunOptions {
        sizes: size_options(&p, sizes)?,
        seed,
        reps,
    };
    Ok(run_and_compare(&program, &p, &jit, &opts)?.to_string())
}

/// `640x480` as a window with mins 0.
fn parse_window(s: &str) -> Result<Vec<(i64, i64)>, Error> {
    s.split('x')
        .map(|d| {
            d.trim()
                .parse::<i64>()
                .ok()
                .filter(|&e| e >= 1)
                .map(|e| (0, e))
                .ok_or_else(|| Error::message(format!("error: `{s}` is not a size like 640x480")))
        })
        .collect()
}

fn bounds_report(
    lp: &weft::pipeline::LoweredPipeline,
    size: Option<&str>,
    params: &[(String, i64)],
) -> Result<String, Error> {
    use std::fmt::Write;
    let mut out = String::new();
    let range = |(a, b): &(weft::ir::Expr, weft::ir::Expr)| format!("[{a}, {b}]");
    let regions = |out: &mut String, rs: &[weft::pipe::lower::Region], indent: &str| {
        for r in rs {
            let c: Vec<String> = r.computed.iter().map(range).collect();
            let a: Vec<String> = r.allocated.iter().map(range).collect();
            let folded = match r.folded {
                Some((d, rows)) => format!(" (dimension {d} folded: {rows} rows, circular)"),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "{indent}{}: computed {}; allocated {}{folded}",
                r.func,
                c.join(" x "),
                a.join(" x ")
            );
        }
    };
    // With `specialize`, each version's regions and reads under the condition that selects
    // it (tried in order).
    if lp.lowered.versions.is_empty() {
        regions(&mut out, &lp.lowered.regions, "");
    }
    for v in &lp.lowered.versions {
        let _ = writeln!(out, "when {}:", v.when);
        regions(&mut out, &v.regions, "  ");
        for (name, dims) in &v.inputs {
            let d: Vec<String> = dims.iter().map(range).collect();
            let _ = writeln!(out, "  input {name}: reads {}", d.join(" x "));
        }
    }
    if !lp.lowered.versions.is_empty() {
        let _ = writeln!(out, "in all versions:");
    }
    for (name, dims) in &lp.lowered.inputs {
        let d: Vec<String> = dims.iter().map(range).collect();
        let _ = writeln!(out, "input {name}: reads {}", d.join(" x "));
    }
    if let Some(size) = size {
        let window = parse_window(size)?;
        let regions = weft::pipeline::input_regions(lp, &window, params)?;
        for ((name, _), r) in lp.lowered.inputs.iter().zip(regions) {
            let d: Vec<String> = r
                .iter()
                .map(|(m, e)| format!("[{m}, {}]", m + e - 1))
                .collect();
            let _ = writeln!(out, "input {name} for {size}: {}", d.join(" x "));
        }
    }
    Ok(out)
}

/// `weft realize`: lower, compile, run (and with `check`, compare with the pipeline interpreter).
#[allow(clippy::too_many_arguments)]
fn realize_one(
    file: &Path,
    pipeline: &str,
    size: Option<&str>,
    input: Option<&Path>,
    out: Option<&Path>,
    params: &[String],
    reps: usize,
    check: bool,
) -> Result<String, Error> {
    use weft::interp::Scalar;
    let program = weft::load(file)?;
    let lp = &weft::pipeline::lower(&program, pipeline)?;
    let p = &lp.pipeline;
    let mut inputs = Vec::new();
    if let Some(path) = input {
        let first = p
            .inputs
            .first()
            .ok_or_else(|| Error::message("error: the pipeline has no input"))?;
        inputs.push(Some(weft::pipeline::read_png(
            path, first.elem, first.rank,
        )?));
    }
    let window = match (size, inputs.first()) {
        (Some(s), _) => parse_window(s)?,
        (None, Some(Some(i))) => i.region.iter().take(2).cloned().collect(),
        _ => {
            return Err(Error::message(
                "error: give the window (`--size 640x480`) or an input image",
            ))
        }
    };
    let mut values = Vec::new();
    for kv in params {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| Error::message(format!("error: expected NAME=VALUE, found `{kv}`")))?;
        let q =
            p.params.iter().find(|q| q.name == k).ok_or_else(|| {
                Error::message(format!("error: the pipeline has no parameter `{k}`"))
            })?;
        let x: f64 = v
            .parse()
            .map_err(|_| Error::message(format!("error: `{v}` is not a number")))?;
        let s = if q.ty.is_float() {
            Scalar::F64(x).cast(q.ty)
        } else {
            Scalar::from_int_wrapping(x as i128, q.ty)
        };
        values.push((k.to_string(), s));
    }
    let jit = weft::jit::Jit::new().map_err(|e| Error::message(format!("error: {e}")))?;
    let r = weft::pipeline::realize(lp, &jit, &window, &values, inputs, reps)?;
    let (name, data) = &r.outputs[0];
    if let Some(path) = out {
        weft::pipeline::write_png(path, &r.window, data)?;
    }
    let checked = if check {
        let n = weft::pipeline::check_against_reference(lp, &values, &r)?;
        format!("; {n} points equal to the pipeline interpreter")
    } else {
        String::new()
    };
    let sum: f64 = (0..data.len()).map(|i| data.scalar(i).as_f64()).sum();
    Ok(format!(
        "{}: {name} on {:?} in {:.3} ms (best of {reps}); sum of values {sum}{checked}{}",
        p.name,
        r.window,
        r.time.as_secs_f64() * 1e3,
        out.map_or(String::new(), |o| format!("; wrote {}", o.display()))
    ))
}

/// The `// run: ARGS` and `// realize: ARGS` lines of a file: the command and its options.
fn run_lines(text: &str) -> Vec<(&'static str, Vec<String>)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("// run:")
                .map(|r| ("run", r))
                .or_else(|| l.strip_prefix("// realize:").map(|r| ("realize", r)))
        })
        .map(|(verb, rest)| (verb, rest.split_whitespace().map(str::to_string).collect()))
        .collect()
}

fn main() -> ExitCode {
    // A reader that stops early (`weft sched f.weft p | head`) ends the tool quietly, as it ends
    // `cat`: Rust ignores SIGPIPE, and printing to the closed pipe then panicked.
    // SAFETY: the default disposition of one signal, set first thing, before any other thread.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result: Result<(), Error> = (|| match cli.command {
        Command::Check { file } => {
            let t0 = std::time::Instant::now();
            let mut program = weft::parse(&file)?;
            let stats = weft::check::check_module(&program.module)
                .map_err(|d| Error::new(&program.sources, d))?;
            weft::check_parallel_loops(&program)?;
            let schedules = program.module.schedules.len();
            weft::apply_schedules(&mut program, None, |_, _, _| {})?;
            // Pipelines and their schedules: validity and every directive's legality (lowering
            // and its proofs are `weft lower`'s and `weft realize`'s).
            let pipelines = weft::pipeline::names(&program);
            for name in &pipelines {
                weft::pipeline::parse(&program, name)?;
            }
            println!(
                "{}: ok ({} procs, {} schedules, {} pipelines and pipeline schedules, {} solver queries, {:.1} ms)",
                file.display(),
                stats.procs,
                schedules,
                pipelines.len(),
                stats.queries,
                t0.elapsed().as_secs_f64() * 1e3
            );
            Ok(())
        }
        Command::Sched { file, name, trace } => {
            let t0 = std::time::Instant::now();
            let mut k = 0;
            let program = weft::load_traced(&file, Some(&name), |decl, step, proc| {
                if trace && decl.name == name {
                    k += 1;
                    println!("// step {k}: {step}");
                    println!("{proc}");
                }
            })?;
            if !program.module.schedules.iter().any(|d| d.name == name) {
                return Err(Error::message(format!(
                    "error: no schedule named `{name}` in {}",
                    file.display()
                )));
            }
            let p = program
                .module
                .proc(&name)
                .expect("an applied schedule is a proc");
            if trace {
                println!("// result ({:.1} ms)", t0.elapsed().as_secs_f64() * 1e3);
            }
            print!("{p}");
            Ok(())
        }
        Command::Lower { file, pipeline } => {
            let program = weft::load(&file)?;
            let lp = weft::pipeline::lower(&program, &pipeline)?;
            let dram = weft::syntax::std_memory("DRAM").expect("the prelude has DRAM");
            let plain = weft::pipe::schedule::Schedule::new(&lp.pipeline);
            println!("// {pipeline}: every func at its default level");
            // A pipeline too large to inline whole (a pyramid) still has a scheduled proc.
            match weft::pipe::lower::lower(&lp.pipeline, &plain, &dram) {
                Ok(before) => println!("{}", before.proc),
                Err(e) if e.rule == "inline-size" => println!("// not lowered: {e}\n"),
                Err(e) => return Err(Error::message(format!("error: {e}"))),
            }
            println!("// {pipeline}: after its schedule");
            print!("{}", lp.proc);
            Ok(())
        }
        Command::Bounds {
            file,
            pipeline,
            size,
            params,
        } => {
            let program = weft::load(&file)?;
            let lp = weft::pipeline::lower(&program, &pipeline)?;
            print!("{}", bounds_report(&lp, size.as_deref(), &params)?);
            Ok(())
        }
        Command::Realize {
            file,
            pipeline,
            size,
            input,
            out,
            params,
            reps,
            check,
        } => {
            let report = realize_one(
                &file,
                &pipeline,
                size.as_deref(),
                input.as_deref(),
                out.as_deref(),
                &params,
                reps,
                check,
            )?;
            println!("{report}");
            Ok(())
        }
        Command::Primitives { name: None } => {
            print!("{}", weft_ir::primitives::reference_markdown());
            Ok(())
        }
        Command::Primitives { name: Some(name) } => {
            let p = weft_ir::primitives::primitive(&name)
                .or_else(|| weft_ir::primitives::directive(&name))
                .ok_or_else(|| {
                    Error::message(format!(
                        "error: {}",
                        weft_ir::primitives::unknown_message(&name)
                    ))
                })?;
            print!("{}", weft_ir::primitives::reference_of(p));
            Ok(())
        }
        Command::Fmt { file, write, check } => {
            if write {
                if weft::format::format_in_place(&file)? {
                    eprintln!("formatted {}", file.display());
                }
            } else if check {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if weft::format::format_file(&file)? != text {
                    return Err(Error::message(format!(
                        "{} is not in canonical form (`weft fmt -w` formats it)",
                        file.display()
                    )));
                }
            } else {
                print!("{}", weft::format::format_file(&file)?);
            }
            Ok(())
        }
        Command::C {
            file,
            proc,
            out_dir,
            namespace,
        } => {
            let program = weft::load(&file)?;
            let procs = aot::select_procs(&program, proc.as_deref())?;
            let stem = proc.clone().unwrap_or_else(|| {
                file.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "weft".into())
            });
            let namespace = namespace.unwrap_or_else(|| weft::c::names::namespace_from(&stem));
            match out_dir {
                Some(dir) => {
                    let (files, _) = aot::write(&program, &procs, &dir, &stem, &namespace)?;
                    println!(
                        "wrote {}, {}, {}",
                        files.c.display(),
                        files.h.display(),
                        files.d.display()
                    );
                }
                None => {
                    let unit = weft::c::emit_in(&procs, &namespace)
                        .map_err(|d| Error::new(&program.sources, vec![d]))?;
                    print!("{}", unit.source);
                }
            }
            Ok(())
        }
        Command::Run {
            file,
            proc,
            sizes,
            seed,
            reps,
        } => {
            println!("{}", run_one(&file, &proc, &sizes, seed, reps)?);
            Ok(())
        }
        Command::Examples { dir } => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map_err(|e| Error::message(format!("error: cannot read {}: {e}", dir.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "weft"))
                .collect();
            files.sort();
            let mut failures = 0;
            let mut skipped = 0;
            let mut runs = 0;
            for f in &files {
                let text = std::fs::read_to_string(f).map_err(|e| {
                    Error::message(format!("error: cannot read {}: {e}", f.display()))
                })?;
                for (verb, line) in run_lines(&text) {
                    let argv = std::iter::once("weft".to_string())
                        .chain(std::iter::once(verb.to_string()))
                        .chain(std::iter::once(f.display().to_string()))
                        .chain(line);
                    runs += 1;
                    let outcome = match Cli::try_parse_from(argv) {
                        // A pipeline is realized compiled and compared with its interpreter.
                        Ok(Cli {
                            command:
                                Command::Realize {
                                    file,
                                    pipeline,
                                    size,
                                    input,
                                    out,
                                    params,
                                    reps,
                                    check: _,
                                },
                        }) => realize_one(
                            &file,
                            &pipeline,
                            size.as_deref(),
                            input.as_deref(),
                            out.as_deref(),
                            &params,
                            reps,
                            true,
                        ),
                        Ok(Cli {
                            command:
                                Command::Run {
                                    file,
                                    proc,
                                    sizes,
                                    seed,
                                    reps,
                                },
                        }) => run_one(&file, &proc, &sizes, seed, reps),
                        Ok(_) => Err(Error::message(
                            "error: a `// run:` line must hold `weft run` options, a `// realize:` line `weft realize` options",
                        )),
                        Err(e) => Err(Error::message(e.to_string())),
                    };
                    match outcome {
                        Ok(report) => println!("{}: {report}", f.display()),
                        // A kernel for instructions this CPU lacks is refused before it runs.
                        Err(e) if e.to_string().contains("which this CPU does not have") => {
                            skipped += 1;
                            println!("{}: skipped: {}", f.display(), e.to_string().trim());
                        }
                        Err(e) => {
                            failures += 1;
                            eprintln!("{}: FAILED\n{e}", f.display());
                        }
                    }
                }
            }
            println!(
                "{} passed, {failures} failed, {skipped} skipped",
                runs - failures - skipped
            );
            if failures > 0 {
                return Err(Error::message(format!(
                    "error: {failures} example run(s) failed"
                )));
            }
            Ok(())
        }
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}
