//! Schedules as programs: `steps` items, their calls and loops in schedule bodies, expanded by
//! the parser into the flat list of steps `weft-sched` applies; their errors; and printing them as
//! written.

use weft_ir::Module;
use weft_syntax::{parse_module, SourceMap};

const PROC: &str = "proc p(n: size, x: f32[n, 64] @ DRAM) {
    for i in 0..n {
        for j in 0..64 {
            x[i, j] = x[i, j] * 2.0;
        }
    }
}
";

fn parse(text: &str) -> Module {
    let mut sm = SourceMap::new();
    parse_module(&mut sm, "t.weft", text).unwrap_or_else(|ds| {
        let shown: Vec<String> = ds.iter().map(|d| sm.render(d)).collect();
        panic!("parse failed:\n{}", shown.join("\n"))
    })
}

fn parse_err(text: &str) -> String {
    let mut sm = SourceMap::new();
    match parse_module(&mut sm, "t.weft", text) {
        Ok(m) => panic!("expected an error, parsed:\n{m}"),
        Err(ds) => ds
            .iter()
            .map(|d| sm.render(d))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn steps_of(m: &Module) -> Vec<String> {
    m.schedules
        .last()
        .expect("a schedule")
        .steps
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn calls_and_loops_expand_into_the_steps_they_stand_for() {
    let src = format!(
        "{PROC}
// Split `lp` by `f` into loops named after `name`.
steps halve(lp, f, name) {{
    split(lp, f, \"{{name}}o\", \"{{name}}i\", perfect);
}}

steps twice(lp) {{
    halve(lp, 2, a);
    unroll(\"for ai\");
}}

schedule q = p {{
    halve(j, 32, b);
    for w in [16, 8] {{
        split(\"for bi\", w, \"c{{w}}\", \"d{{w}}\", perfect);
        simplify();
    }}
    for r in -1..1 {{
        shift(i, r);
    }}
    twice(\"for d8\");
}}
"
    );
    let m = parse(&src);
    assert_eq!(
        steps_of(&m),
        [
            "split(j, 32, bo, bi, perfect)",
            "split(bi, 16, c16, d16, perfect)",
            "simplify()",
            "split(bi, 8, c8, d8, perfect)",
            "simplify()",
            "shift(i, -1)",
            "shift(i, 0)",
            "split(d8, 2, ao, ai, perfect)",
            "unroll(ai)",
        ]
    );
    let d = m.schedules.last().unwrap();
    assert!(d
        .text
        .as_deref()
        .is_some_and(|t| t.starts_with("schedule q = p {")));
    assert_eq!(m.steps_items.len(), 2);
    assert_eq!(m.steps_items[0].params, ["lp", "f", "name"]);
    // Printed as written, and read back the same.
    let printed = m.to_string();
    assert!(printed.contains("steps halve(lp, f, name) {"), "{printed}");
    assert!(printed.contains("    for w in [16, 8] {"), "{printed}");
    let again = parse(&printed);
    assert_eq!(again.to_string(), printed);
    assert_eq!(steps_of(&again), steps_of(&m));
}

#[test]
fn a_flat_schedule_is_printed_from_its_steps() {
    let m = parse(&format!(
        "{PROC}schedule q = p {{\n    split(j, 8, jo, ji, cut);\n}}\n"
    ));
    assert!(m.schedules[0].text.is_none());
    assert_eq!(steps_of(&m), ["split(j, 8, jo, ji, cut)"]);
}

#[test]
fn expansion_errors_name_the_place_and_the_rule() {
    // The wrong number of arguments.
    let e = parse_err(&format!(
        "{PROC}steps s(a, b) {{\n    unroll(a);\n}}\nschedule q = p {{\n    s(i);\n}}\n"
    ));
    assert!(e.contains("`s` takes 2 arguments (a, b), given 1"), "{e}");
    // A step of the body that does not read: reported at the body, with the call.
    let e = parse_err(&format!(
        "{PROC}steps s(a) {{\n    unroll(a, a);\n}}\nschedule q = p {{\n    s(i);\n}}\n"
    ));
    assert!(e.contains("unroll"), "{e}");
    // A name made from a string must be a name.
    let e = parse_err(&format!(
        "{PROC}schedule q = p {{\n    split(j, 8, \"not a name\", ji, cut);\n}}\n"
    ));
    assert!(e.contains("`not a name` is not a name"), "{e}");
    // Loops over something other than integers.
    let e = parse_err(&format!(
        "{PROC}schedule q = p {{\n    for w in [a, b] {{\n        simplify();\n    }}\n}}\n"
    ));
    assert!(e.contains("expected an integer"), "{e}");
    // A parameter named twice.
    let e = parse_err(&format!("{PROC}steps s(a, a) {{\n    simplify();\n}}\n"));
    assert!(e.contains("parameter `a` is named twice"), "{e}");
    // A loop too long to expand ends in an error, not in exhausted memory.
    let e = parse_err(&format!(
        "{PROC}schedule q = p {{\n    for w in 0..100000000 {{\n        simplify();\n    }}\n}}\n"
    ));
    assert!(e.contains("runs more than"), "{e}");
    let e = parse_err(&format!(
        "{PROC}schedule q = p {{\n    for a in 0..2000 {{\n        for b in 0..2000 {{\n            simplify();\n        }}\n    }}\n}}\n"
    ));
    assert!(e.contains("takes more than"), "{e}");
    // Loops with empty bodies, and calls that make nothing, cost work too (no hang).
    let e = parse_err(&format!(
        "{PROC}schedule q = p {{\n    for a in 0..1000000 {{\n        for b in 0..1000000 {{\n        }}\n    }}\n}}\n"
    ));
    assert!(e.contains("takes more than"), "{e}");
    let mut items = String::from("steps a0() {\n}\n");
    for k in 1..50 {
        items.push_str(&format!(
            "steps a{k}() {{\n    a{}();\n    a{}();\n}}\n",
            k - 1,
            k - 1
        ));
    }
    let e = parse_err(&format!("{PROC}{items}schedule q = p {{\n    a49();\n}}\n"));
    assert!(e.contains("takes more than"), "{e}");
    // Arguments that double at every call.
    let mut items = String::from("steps b0(x) {\n}\n");
    for k in 1..40 {
        items.push_str(&format!("steps b{k}(x) {{\n    b{}(x x);\n}}\n", k - 1));
    }
    let e = parse_err(&format!(
        "{PROC}{items}schedule q = p {{\n    b39(i);\n}}\n"
    ));
    assert!(e.contains("takes more than"), "{e}");
    // A `steps` item cannot take a primitive's name.
    let e = parse_err(&format!("{PROC}steps unroll(x) {{\n    simplify();\n}}\n"));
    assert!(e.contains("is a scheduling primitive"), "{e}");
    // An empty argument.
    let e = parse_err(&format!(
        "{PROC}steps s(a, b) {{\n    unroll(a);\n}}\nschedule q = p {{\n    s(, j);\n}}\n"
    ));
    assert!(e.contains("an argument of `s` is empty"), "{e}");
    // An item defined later is not callable (its name is read as a primitive's).
    let e = parse_err(&format!(
        "{PROC}steps s(x) {{\n    t(x);\n}}\nsteps t(x) {{\n    unroll(x);\n}}\nschedule q = p {{\n    s(j);\n}}\n"
    ));
    assert!(e.contains("unknown scheduling primitive `t`"), "{e}");
    // Nesting too deep.
    let mut body = String::from("simplify();");
    for k in 0..70 {
        body = format!("for v{k} in 0..1 {{ {body} }}");
    }
    let e = parse_err(&format!("{PROC}schedule q = p {{\n    {body}\n}}\n"));
    assert!(e.contains("nest more than"), "{e}");
}

#[test]
fn substitution_keeps_meaning_in_strings_and_expressions() {
    let src = format!(
        "{PROC}
steps named(l, nm, r) {{
    split(\"{{l}}\", 8, \"{{nm}}o\", \"{{nm}}{{r}}\", cut);
}}

steps shifted(r) {{
    shift(i, 2 * r);
}}

steps pattern(x, w) {{
    unroll(\"{{x}}\");
}}

steps neg(r) {{
    unroll(\"r{{r}}\");
}}

steps u(unroll) {{
    simplify();
}}

schedule q = p {{
    named(\"for j\", jj, 1);
    neg(-1);
    shifted(1 + 1);
    pattern(\"{{w}}\", j);
    u(x,);
}}
"
    );
    let m = parse(&src);
    assert_eq!(
        steps_of(&m),
        [
            // A quoted argument enters a string without its quotes.
            "split(j, 8, jjo, jj1, cut)",
            // A negative value has no space.
            "unroll(\"r-1\")",
            // An expression argument keeps its precedence.
            "shift(i, 2 * (1 + 1))",
            // What a replacement brings into a string is not replaced again.
            "unroll(\"{w}\")",
            // A parameter named like a primitive is the parameter; a trailing comma ends the
            // arguments.
            "simplify()",
        ]
    );
}

/// In a string, an argument that is an integer expression of literals stands for its value, so
/// that a loop can number the cursors it makes (`"for k #{n}"` with `n` = `6 - r`); other
/// expressions keep their text, and a division that is not of non-negative values by a positive
/// one, or a value past 64 bits, is not folded.
#[test]
fn integer_arguments_enter_strings_as_their_values() {
    let src = format!(
        "{PROC}
steps nth(n) {{
    unroll(\"for k #{{n}}\");
}}

schedule q = p {{
    for r in [5, 1] {{
        nth(6 - r);
    }}
    nth((2 + 3) * 4 % 7 / 2);
    nth(-(1 - 4));
    nth(2 * n);
    nth(7 / -2);
    nth(9223372036854775807 + 1);
}}
"
    );
    let m = parse(&src);
    assert_eq!(
        steps_of(&m),
        [
            "unroll(\"for k #1\")",
            "unroll(\"for k #5\")",
            "unroll(\"for k #3\")",
            "unroll(\"for k #3\")",
            "unroll(\"for k #(2 * n)\")",
            "unroll(\"for k #(7 / - 2)\")",
            "unroll(\"for k #(9223372036854775807 + 1)\")",
        ]
    );
}

/// Review hole: folding an argument into a string read it recursively, so 150,000 parentheses
/// (or 900,000 minus signs) overflowed the parser's stack. Past 64 levels it keeps its text.
#[test]
fn deeply_nested_arguments_in_strings_do_not_overflow_the_stack() {
    for arg in [
        format!("{}0{}", "(".repeat(150_000), ")".repeat(150_000)),
        format!("{}0", "-".repeat(900_000)),
    ] {
        let src = format!(
            "{PROC}
steps nth(n) {{
    unroll(\"for i #{{n}}\");
}}

schedule q = p {{
    nth({arg});
}}
"
        );
        let mut sm = SourceMap::new();
        let _ = parse_module(&mut sm, "t.weft", &src);
    }
    let src = format!(
        "{PROC}
steps nth(n) {{
    unroll(\"for j #{{n}}\");
}}

schedule q = p {{
    nth({}1{});
}}
",
        "(".repeat(40),
        ")".repeat(40)
    );
    assert_eq!(steps_of(&parse(&src)), ["unroll(\"for j #1\")"]);
}
