//! `airlock new NAME --lang rust|ts|js|python`: a ready handler project.
//!
//! The templates live in `host/templates/<lang>/` and are compiled into the
//! binary. Every file is copied with three placeholders filled in:
//! `{{name}}` (the project name), `{{crate_file}}` (the name with `-` as
//! `_`, how Rust names the built `.wasm`) and `{{sdk_path}}` (where the
//! language's SDK is; a trailing `.template` on a file name is dropped, so a
//! template's `Cargo.toml` is not mistaken for a crate of this workspace).
//!
//! The SDKs are not published to a registry yet: a project depends on the
//! SDK in the Airlock checkout this binary was built from (`--sdk-dir`
//! points elsewhere).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use include_dir::{Dir, DirEntry, include_dir};

static TEMPLATES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// The checkout's `guest-sdk/` this binary was built from.
const BUILT_SDK_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../guest-sdk");

/// A handler's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// Rust, on the `airlock-guest` crate.
    Rust,
    /// TypeScript, on `@airlock/sdk` (StarlingMonkey engine).
    Ts,
    /// JavaScript, on `@airlock/sdk` (StarlingMonkey engine).
    Js,
    /// Python, on `airlock_sdk` (componentize-py).
    Python,
}

impl Lang {
    fn template(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Ts => "ts",
            Lang::Js => "js",
            Lang::Python => "python",
        }
    }

    /// Where this language's SDK sits inside `guest-sdk/`.
    fn sdk_subdir(self) -> &'static str {
        match self {
            Lang::Rust => "",
            Lang::Ts | Lang::Js => "js",
            Lang::Python => "python",
        }
    }

    /// The commands that build and run the new project.
    fn next_steps(self, name: &str) -> Vec<String> {
        let crate_file = name.replace('-', "_");
        match self {
            Lang::Rust => vec![
                "cargo build --release".into(),
                format!(
                    "airlock run target/wasm32-wasip2/release/{crate_file}.wasm --data \"$(cat payload.json)\""
                ),
            ],
            Lang::Ts | Lang::Js => vec![
                "npm install".into(),
                "npm run build".into(),
                format!("airlock run {name}.wasm --data \"$(cat payload.json)\""),
            ],
            Lang::Python => vec![
                "./build.sh".into(),
                format!("airlock run {name}.wasm --data \"$(cat payload.json)\""),
            ],
        }
    }
}

/// `airlock new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The project's name: its directory, its package and the handler name
    /// the README deploys it as (letters, digits, `-` and `_`, starting
    /// with a letter).
    pub name: String,
    /// The handler's language.
    #[arg(long, value_enum, default_value = "ts")]
    pub lang: Lang,
    /// The directory to create (default: `./NAME`); it must not exist or be
    /// empty.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The Airlock checkout's `guest-sdk` directory, whose SDK the project
    /// depends on (default: the one this binary was built from).
    #[arg(long)]
    pub sdk_dir: Option<PathBuf>,
}

/// Writes the project; exit code 0, or an error naming the argument.
pub fn execute(args: NewArgs) -> anyhow::Result<i32> {
    check_name(&args.name)?;
    let sdk_root = match &args.sdk_dir {
        Some(dir) => dir.clone(),
        None => PathBuf::from(BUILT_SDK_DIR),
    };
    let sdk = sdk_root.join(args.lang.sdk_subdir());
    let sdk = sdk.canonicalize().with_context(|| {
        format!(
            "--sdk-dir: the {} SDK is not at {} (this binary was built from another \
             checkout?); pass --sdk-dir <airlock>/guest-sdk",
            args.lang.template(),
            sdk.display()
        )
    })?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.exists() && std::fs::read_dir(&dir)?.next().is_some() {
        bail!("--dir: {} exists and is not empty", dir.display());
    }
    let template = TEMPLATES
        .get_dir(args.lang.template())
        .context("the binary carries no template for this language")?;
    let vars = Vars {
        name: &args.name,
        crate_file: &args.name.replace('-', "_"),
        sdk_path: &sdk.to_string_lossy(),
    };
    write_dir(template, Path::new(args.lang.template()), &dir, &vars)?;
    println!(
        "created {} ({} handler {}); next:",
        dir.display(),
        args.lang.template(),
        args.name
    );
    println!("  cd {}", dir.display());
    for step in args.lang.next_steps(&args.name) {
        println!("  {step}");
    }
    Ok(0)
}

/// A name every language accepts for a package and Airlock for a handler.
fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        bail!("NAME: `{name}` must be 1 to 64 letters, digits, `-` or `_`, starting with a letter");
    }
    Ok(())
}

struct Vars<'a> {
    name: &'a str,
    crate_file: &'a str,
    sdk_path: &'a str,
}

impl Vars<'_> {
    fn fill(&self, text: &str) -> String {
        text.replace("{{name}}", self.name)
            .replace("{{crate_file}}", self.crate_file)
            .replace("{{sdk_path}}", self.sdk_path)
    }
}

fn write_dir(dir: &Dir<'_>, base: &Path, to: &Path, vars: &Vars<'_>) -> anyhow::Result<()> {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(sub) => write_dir(sub, base, to, vars)?,
            DirEntry::File(file) => {
                let relative = file.path().strip_prefix(base)?;
                let mut target = to.join(relative);
                if let Some(stem) = target
                    .to_str()
                    .and_then(|path| path.strip_suffix(".template"))
                {
                    target = PathBuf::from(stem);
                }
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let text = file
                    .contents_utf8()
                    .with_context(|| format!("template {} is not text", relative.display()))?;
                std::fs::write(&target, vars.fill(text))
                    .with_context(|| format!("writing {}", target.display()))?;
                #[cfg(unix)]
                if target.extension().is_some_and(|e| e == "sh") {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(check_name("hello-world_2").is_ok());
        for bad in ["", "2fast", "a b", "../x", "é"] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.starts_with("NAME:"), "{err}");
        }
    }

    #[test]
    fn every_language_has_a_template() {
        for lang in [Lang::Rust, Lang::Ts, Lang::Js, Lang::Python] {
            assert!(TEMPLATES.get_dir(lang.template()).is_some(), "{lang:?}");
        }
        // The manifest a Rust project needs (named so that neither cargo nor
        // the root .gitignore's `*.tmp*` takes it).
        assert!(TEMPLATES.get_file("rust/Cargo.toml.template").is_some());
    }
}
