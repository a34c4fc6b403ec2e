//! A module's description: what [`crate::Jit::load_described`] needs to load a shared object of
//! the cache again without emitting its C: the object's file name and its entry points (names,
//! symbols, arguments, context, instruction-set extensions). Callers that cache what a module
//! was compiled from (the pipeline cache) store it beside their entry, so that a hit costs a
//! verification and a `dlopen`, not a walk over the proc. One line of tokens separated by
//! spaces, each written `=value` so that an empty value is a token too.

use weft_c::{ContextInfo, EntryArg, EntryArgKind, EntryInfo};
use weft_ir::{CtrlType, DType};

const MAGIC: &str = "weft-module/1";

/// What a description holds.
pub(crate) struct Described {
    pub file: String,
    pub entries: Vec<EntryInfo>,
    pub context: ContextInfo,
}

/// The description of a module in `file` (a name in the cache directory); `None` when a value
/// holds white space, which no token may (weft names and symbols never do).
pub(crate) fn describe(file: &str, entries: &[EntryInfo], context: &ContextInfo) -> Option<String> {
    let mut out = Tokens(Vec::new());
    out.push(file);
    out.context(context);
    out.push(&entries.len().to_string());
    for e in entries {
        for s in [&e.name, &e.direct_symbol, &e.symbol] {
            out.push(s);
        }
        out.context(&e.context);
        out.push(&e.isa.len().to_string());
        e.isa.iter().for_each(|i| out.push(i));
        out.push(&e.args.len().to_string());
        for a in &e.args {
            out.push(&a.name);
            match &a.kind {
                EntryArgKind::Int(t) => out.push(t.name()),
                EntryArgKind::Bool => out.push("bool"),
                EntryArgKind::Buffer {
                    elem,
                    rank,
                    window,
                    written,
                } => {
                    out.push("buffer");
                    out.push(elem.name());
                    out.push(&rank.to_string());
                    out.push(if *window { "window" } else { "dense" });
                    out.push(if *written { "written" } else { "read" });
                }
            }
        }
    }
    let Tokens(tokens) = out;
    if tokens.iter().any(|t| t.chars().any(char::is_whitespace)) {
        return None;
    }
    Some(
        std::iter::once(MAGIC.to_string())
            .chain(tokens)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Read a description back; `None` for anything [`describe`] does not write, or a file that is
/// not a plain `.so` name (the object must lie in the cache directory itself).
pub(crate) fn parse(text: &str) -> Option<Described> {
    let mut words = text.split(' ');
    if words.next()? != MAGIC {
        return None;
    }
    let mut next = || words.next()?.strip_prefix('=');
    let file = next()?.to_string();
    if file.contains(['/', '\\']) || !file.ends_with(".so") || file.starts_with('.') {
        return None;
    }
    let context = read_context(&mut next)?;
    let n = next()?.parse::<usize>().ok()?;
    let mut entries = Vec::new();
    for _ in 0..n {
        let name = next()?.to_string();
        let direct_symbol = next()?.to_string();
        let symbol = next()?.to_string();
        let context = read_context(&mut next)?;
        let isa = (0..next()?.parse::<usize>().ok()?)
            .map(|_| next().map(str::to_string))
            .collect::<Option<Vec<_>>>()?;
        let nargs = next()?.parse::<usize>().ok()?;
        let mut args = Vec::new();
        for _ in 0..nargs {
            let name = next()?.to_string();
            let kind = match next()? {
                "bool" => EntryArgKind::Bool,
                "buffer" => EntryArgKind::Buffer {
                    elem: DType::from_name(next()?)?,
                    rank: next()?.parse().ok()?,
                    window: match next()? {
                        "window" => true,
                        "dense" => false,
                        _ => return None,
                    },
                    written: match next()? {
                        "written" => true,
                        "read" => false,
                        _ => return None,
                    },
                },
                t => EntryArgKind::Int(CtrlType::from_name(t)?),
            };
            args.push(EntryArg { name, kind });
        }
        entries.push(EntryInfo {
            name,
            direct_symbol,
            symbol,
            args,
            context,
            isa,
        });
    }
    if next().is_some() {
        return None;
    }
    Some(Described {
        file,
        entries,
        context,
    })
}

/// The largest context a description may give: a context is a few config fields, and
/// [`crate::Module::context`] allocates what it says.
const CONTEXT_BYTES_MAX: usize = 1 << 20;

fn read_context<'a>(next: &mut impl FnMut() -> Option<&'a str>) -> Option<ContextInfo> {
    let signature = next()?.to_string();
    let bytes = next()?.parse().ok().filter(|&b| b <= CONTEXT_BYTES_MAX)?;
    Some(ContextInfo { signature, bytes })
}

struct Tokens(Vec<String>);

impl Tokens {
    fn push(&mut self, value: &str) {
        self.0.push(format!("={value}"));
    }

    fn context(&mut self, c: &ContextInfo) {
        self.push(&c.signature);
        self.push(&c.bytes.to_string());
    }
}
