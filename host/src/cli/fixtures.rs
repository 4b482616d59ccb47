//! `airlock test HANDLER.wasm FIXTURE...`: runs a handler component
//! against hand-written fixtures (`crate::replay::fixture`) in a local
//! sandbox — canned answers, time skipped, nothing sent anywhere — and
//! checks each fixture's expectations. A directory stands for the `.json`
//! files in it. Exit code 0 when every fixture passed, 1 otherwise (or for
//! a usage or load error).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;

use super::limits::LimitFlags;
use crate::replay::fixture::{Fixture, Outcome};

/// Arguments of `airlock test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The handler component under test (`.wasm`): the very file you
    /// deploy.
    pub handler: PathBuf,
    /// Fixture files (`.json`), or directories of them.
    #[arg(required = true)]
    pub fixtures: Vec<PathBuf>,
    /// The runs' limits (over the sandbox defaults).
    #[command(flatten)]
    pub limits: LimitFlags,
}

/// The fixture files `paths` name, sorted within each directory.
fn fixture_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot read {}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

fn read_fixture(path: &Path) -> anyhow::Result<Fixture> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a fixture", path.display()))
}

/// Runs the command; returns the exit code.
pub async fn execute(json_output: bool, args: TestArgs) -> anyhow::Result<i32> {
    let limits = super::run::local_limits(&args.limits)?;
    let files = fixture_files(&args.fixtures)?;
    if files.is_empty() {
        anyhow::bail!("no fixture: the paths given hold no .json file");
    }
    let fixtures: Vec<(PathBuf, Fixture)> = files
        .into_iter()
        .map(|f| read_fixture(&f).map(|fixture| (f, fixture)))
        .collect::<anyhow::Result<_>>()?;
    let (sandbox, component) = super::run::local_component(&args.handler).await?;

    let mut outcomes: Vec<Outcome> = Vec::new();
    for (path, fixture) in &fixtures {
        let name = fixture
            .name
            .clone()
            .unwrap_or_else(|| path.display().to_string());
        outcomes.push(fixture.run(name, &sandbox, &component, &limits).await);
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    if json_output {
        println!("{}", serde_json::to_string_pretty(&outcomes)?);
    } else {
        for o in &outcomes {
            println!("{} {}", if o.passed { "ok  " } else { "FAIL" }, o.name);
            for f in &o.failures {
                println!("     {f}");
            }
        }
        println!("{} passed, {failed} failed", outcomes.len() - failed);
    }
    Ok(if failed == 0 { 0 } else { 1 })
}
