//! Instruction-set extensions that memories declare (`isa "avx512f"` in a `.weft` library): the
//! compiler flag that enables each, and whether the CPU running this process has it.

/// Each known extension: its name (as `std::is_x86_feature_detected!` spells it) and the GCC and
/// Clang flag that enables it.
macro_rules! extensions {
    ($($name:tt => $flag:literal),* $(,)?) => {
        /// The known extensions and their compiler flags.
        pub const EXTENSIONS: &[(&str, &str)] = &[$(($name, $flag)),*];

        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        fn detected(name: &str) -> bool {
            match name {
                $($name => std::is_x86_feature_detected!($name),)*
                _ => false,
            }
        }
    };
}

extensions! {
    "sse3" => "-msse3",
    "ssse3" => "-mssse3",
    "sse4.1" => "-msse4.1",
    "sse4.2" => "-msse4.2",
    "popcnt" => "-mpopcnt",
    "avx" => "-mavx",
    "avx2" => "-mavx2",
    "fma" => "-mfma",
    "f16c" => "-mf16c",
    "bmi1" => "-mbmi",
    "bmi2" => "-mbmi2",
    "avx512f" => "-mavx512f",
    "avx512cd" => "-mavx512cd",
    "avx512bw" => "-mavx512bw",
    "avx512dq" => "-mavx512dq",
    "avx512vl" => "-mavx512vl",
    "avx512vnni" => "-mavx512vnni",
    "avx512bf16" => "-mavx512bf16",
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
fn detected(_name: &str) -> bool {
    false
}

/// The compiler flags that enable `isa`, or the first unknown name.
pub fn flags(isa: &[String]) -> Result<Vec<String>, String> {
    isa.iter()
        .map(|n| {
            EXTENSIONS
                .iter()
                .find(|(name, _)| name == n)
                .map(|(_, flag)| flag.to_string())
                .ok_or_else(|| n.clone())
        })
        .collect()
}

/// Why code needing `isa` cannot run here (an unknown name, or extensions this CPU lacks), if it
/// cannot.
pub fn missing(isa: &[String]) -> Option<String> {
    if let Err(unknown) = flags(isa) {
        let known: Vec<&str> = EXTENSIONS.iter().map(|(n, _)| *n).collect();
        return Some(format!(
            "unknown instruction-set extension '{unknown}' (known: {})",
            known.join(", ")
        ));
    }
    let lacking: Vec<&str> = isa
        .iter()
        .filter(|n| !detected(n))
        .map(String::as_str)
        .collect();
    (!lacking.is_empty()).then(|| {
        format!(
            "the kernel needs the instruction-set extensions {}, which this CPU does not have",
            lacking.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_found_and_unknown_names_reported() {
        assert_eq!(flags(&["avx512f".into()]).unwrap(), vec!["-mavx512f"]);
        assert_eq!(flags(&["bmi1".into()]).unwrap(), vec!["-mbmi"]);
        assert_eq!(flags(&["x87fancy".into()]), Err("x87fancy".to_string()));
        assert!(missing(&["x87fancy".into()]).unwrap().contains("unknown"));
        assert_eq!(missing(&[]), None);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn detection_agrees_with_std() {
        assert_eq!(
            missing(&["sse3".into()]).is_none(),
            std::is_x86_feature_detected!("sse3")
        );
        assert_eq!(
            missing(&["avx512f".into()]).is_none(),
            std::is_x86_feature_detected!("avx512f")
        );
    }
}
