//! Checks that a blob is an Airlock handler component before anything runs
//! it, and explains precisely why when it is not.

use serde::{Deserialize, Serialize};
use wasmtime::Engine;
use wasmtime::component::Component;

/// WASI 0.2 packages the host links (filesystem and sockets denied at
/// runtime; HTTP under the run's egress policy).
const PROVIDED_WASI: [&str; 7] = [
    "cli",
    "clocks",
    "filesystem",
    "http",
    "io",
    "random",
    "sockets",
];

/// Why a blob was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// Over the size cap.
    #[error("component is {size} bytes, the maximum is {max}")]
    TooLarge {
        /// Size of the upload.
        size: usize,
        /// The cap.
        max: usize,
    },
    /// Not WebAssembly at all.
    #[error("not a WebAssembly binary (missing the \\0asm header)")]
    NotWasm,
    /// A core module where a component was expected.
    #[error(
        "this is a core WebAssembly module, not a component: build the handler for the \
         wasm32-wasip2 target (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule,
    /// Malformed or uncompilable.
    #[error("invalid component: {0}")]
    Invalid(String),
    /// Imports something the host does not provide.
    #[error("unsupported imports: {0}")]
    Imports(String),
    /// Does not export the Airlock `handler` world.
    #[error("does not export the airlock:job handler world: {0}")]
    Exports(String),
}

impl ValidationError {
    /// A short machine-readable code for API errors.
    pub fn code(&self) -> &'static str {
        match self {
            ValidationError::TooLarge { .. } => "component_too_large",
            ValidationError::NotWasm => "not_wasm",
            ValidationError::CoreModule => "core_module",
            ValidationError::Invalid(_) => "invalid_component",
            ValidationError::Imports(_) => "unsupported_imports",
            ValidationError::Exports(_) => "wrong_world",
        }
    }
}

/// What a validated component imports and exports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ComponentInfo {
    /// sha256 of the bytes, hex.
    pub digest: String,
    /// Size in bytes.
    pub size: usize,
    /// Imported interface names (`airlock:job/context@0.2.0`, `wasi:...`).
    pub imports: Vec<String>,
    /// Exported names (`run`; also `run-batch` for a batch handler).
    pub exports: Vec<String>,
    /// What its `producers` sections say built it, as written there by the
    /// tools themselves: languages (`language: Rust`) and tools
    /// (`rustc 1.95.0`, `ComponentizeJS 0.23.0`), once each, in the order
    /// met. A component's own claim, shown for people to read; nothing
    /// decides on it.
    #[serde(default, rename = "builtWith")]
    pub built_with: Vec<String>,
}

/// Most `built_with` entries kept (a claim from the upload: bounded).
const MAX_BUILT_WITH: usize = 32;
/// Longest `built_with` entry kept, in characters.
const MAX_BUILT_WITH_CHARS: usize = 120;

/// Rejects what is obviously not a component before compiling anything.
pub fn check_header(bytes: &[u8], max: usize) -> Result<(), ValidationError> {
    if bytes.len() > max {
        return Err(ValidationError::TooLarge {
            size: bytes.len(),
            max,
        });
    }
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(ValidationError::NotWasm);
    }
    // Bytes 4..8 are the version; byte 6 is the layer: 0 core, 1 component.
    if bytes[6] == 0 {
        return Err(ValidationError::CoreModule);
    }
    Ok(())
}

/// Lists a compiled component's imports and exports.
pub fn describe(
    engine: &Engine,
    component: &Component,
    digest: &str,
    bytes: &[u8],
) -> ComponentInfo {
    let ty = component.component_type();
    ComponentInfo {
        digest: digest.to_string(),
        size: bytes.len(),
        built_with: built_with(bytes),
        imports: ty
            .imports(engine)
            .map(|(name, _)| name.to_string())
            .collect(),
        exports: ty
            .exports(engine)
            .map(|(name, _)| name.to_string())
            .collect(),
    }
}

/// The imports and exports a component declares at its top level, read
/// from its binary without compiling it (milliseconds, where a compile of a
/// JavaScript or Python component takes seconds): what lets an upload be
/// refused before any compile, and before anything reaches the cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// Imported names, as in [`ComponentInfo::imports`].
    pub imports: Vec<String>,
    /// Exported names, as in [`ComponentInfo::exports`].
    pub exports: Vec<String>,
}

/// Reads the top-level import and export sections of a component binary
/// (nested components and modules are skipped: only the outer component's
/// imports are what a host must provide).
pub fn declared(bytes: &[u8]) -> Result<Declared, ValidationError> {
    use wasmparser::{Parser, Payload};
    let mut found = Declared::default();
    // Nesting depth: every nested module or component ends with its own
    // `End` payload.
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| ValidationError::Invalid(e.to_string()))?;
        match payload {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let import = import.map_err(|e| ValidationError::Invalid(e.to_string()))?;
                    // A type import (a world's `use`d record) grants
                    // nothing; wasmtime does not list them either.
                    if !matches!(import.ty, wasmparser::ComponentTypeRef::Type(_)) {
                        found.imports.push(import.name.name.to_string());
                    }
                }
            }
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    let export = export.map_err(|e| ValidationError::Invalid(e.to_string()))?;
                    found.exports.push(export.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The languages and tools the `producers` custom sections of a component
/// and of every module inside it name (see [`ComponentInfo::built_with`]).
/// A section that does not parse is skipped.
pub fn built_with(bytes: &[u8]) -> Vec<String> {
    use wasmparser::{KnownCustom, Parser, Payload};
    let mut found: Vec<String> = Vec::new();
    let mut add = |entry: String| {
        let entry: String = entry.chars().take(MAX_BUILT_WITH_CHARS).collect();
        if found.len() < MAX_BUILT_WITH && !found.contains(&entry) {
            found.push(entry);
        }
    };
    for payload in Parser::new(0).parse_all(bytes) {
        let Ok(Payload::CustomSection(section)) = payload else {
            continue;
        };
        let KnownCustom::Producers(reader) = section.as_known() else {
            continue;
        };
        for field in reader.into_iter().flatten() {
            for value in field.values.into_iter().flatten() {
                match field.name {
                    "language" => add(format!("language: {}", value.name)),
                    "processed-by" | "sdk" => add(format!("{} {}", value.name, value.version)),
                    _ => {}
                }
            }
        }
    }
    found
}

/// Refuses, before compiling, a component that imports what the host does
/// not provide or does not export `run`.
pub fn check_declared(declared: &Declared) -> Result<(), ValidationError> {
    check_import_names(&declared.imports)?;
    if !declared.exports.iter().any(|name| name == "run") {
        return Err(ValidationError::Exports(format!(
            "it exports {} but no `run` function",
            if declared.exports.is_empty() {
                "nothing".to_string()
            } else {
                declared
                    .exports
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )));
    }
    Ok(())
}

/// Whether the host provides an import of this name.
fn is_provided(name: &str) -> bool {
    let Some((package, version)) = name.split_once('@') else {
        return false;
    };
    if let Some(rest) = package.strip_prefix("airlock:job/") {
        return match rest {
            "context" | "types" => ["0.1.", "0.2.", "0.3.", "0.4.", "0.5.", "0.6."]
                .iter()
                .any(|minor| version.starts_with(minor)),
            "config" => ["0.2.", "0.3.", "0.4.", "0.5.", "0.6."]
                .iter()
                .any(|minor| version.starts_with(minor)),
            _ => false,
        };
    }
    if let Some(rest) = package.strip_prefix("wasi:") {
        let wasi_package = rest.split('/').next().unwrap_or_default();
        return PROVIDED_WASI.contains(&wasi_package) && version.starts_with("0.2.");
    }
    false
}

/// Refuses a component importing anything the host does not provide —
/// even an import the linker could satisfy trivially (an empty instance):
/// the policy is an allow-list, not "whatever links".
pub fn check_imports(info: &ComponentInfo) -> Result<(), ValidationError> {
    check_import_names(&info.imports)
}

fn check_import_names(imports: &[String]) -> Result<(), ValidationError> {
    let unknown: Vec<&str> = imports
        .iter()
        .map(String::as_str)
        .filter(|name| !is_provided(name))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ValidationError::Imports(format!(
        "the component imports {} which Airlock does not provide; a handler may import \
         airlock:job/context and config@0.3.x or 0.2.x (or context@0.1.x) and the WASI 0.2 \
         interfaces of {}",
        unknown
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", "),
        PROVIDED_WASI.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_told_apart() {
        assert_eq!(
            check_header(b"hello world", 100),
            Err(ValidationError::NotWasm)
        );
        let core = b"\0asm\x01\0\0\0";
        assert_eq!(check_header(core, 100), Err(ValidationError::CoreModule));
        let component = b"\0asm\x0d\0\x01\0";
        assert_eq!(check_header(component, 100), Ok(()));
        assert!(matches!(
            check_header(component, 4),
            Err(ValidationError::TooLarge { .. })
        ));
    }

    #[test]
    fn declared_imports_are_read_without_compiling() {
        let bytes = wat::parse_str(
            r#"(component
                (import "acme:exfil/socket@1.0.0" (instance))
                (type $t (record (field "id" string)))
                (import "job" (type (eq $t)))
                (component $inner (import "inner:only/nested@1.0.0" (instance)))
                (core module $m (func (export "f")))
                (core instance $i (instantiate $m))
                (func (export "run") (canon lift (core func $i "f")))
            )"#,
        )
        .unwrap();
        let found = declared(&bytes).unwrap();
        assert_eq!(found.imports, ["acme:exfil/socket@1.0.0"]);
        assert_eq!(found.exports, ["run"]);
        let err = check_declared(&found).unwrap_err();
        assert_eq!(err.code(), "unsupported_imports");
        assert!(
            err.to_string().contains("`acme:exfil/socket@1.0.0`"),
            "{err}"
        );

        let no_run = declared(&wat::parse_str("(component)").unwrap()).unwrap();
        assert_eq!(check_declared(&no_run).unwrap_err().code(), "wrong_world");
    }

    #[test]
    fn provided_imports() {
        assert!(is_provided("airlock:job/context@0.1.0"));
        assert!(is_provided("airlock:job/context@0.2.0"));
        assert!(is_provided("airlock:job/config@0.2.0"));
        assert!(is_provided("wasi:io/streams@0.2.3"));
        assert!(is_provided("wasi:http/outgoing-handler@0.2.0"));
        assert!(!is_provided("airlock:job/config@0.1.0"));
        assert!(is_provided("airlock:job/context@0.3.0"));
        assert!(is_provided("airlock:job/config@0.3.0"));
        assert!(is_provided("airlock:job/context@0.4.0"));
        assert!(is_provided("airlock:job/config@0.4.0"));
        assert!(is_provided("airlock:job/context@0.5.0"));
        assert!(is_provided("airlock:job/context@0.6.0"));
        assert!(is_provided("airlock:job/config@0.6.0"));
        assert!(!is_provided("airlock:job/context@0.7.0"));
        assert!(!is_provided("wasi:http/outgoing-handler@0.3.0"));
        assert!(!is_provided("evil"));
    }
}
