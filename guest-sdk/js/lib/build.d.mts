export declare const SDK_ROOT: string;
export declare const WIT_PATH: string;
export declare const WORLD: 'handler';
/** The world of a `batch` build: `handler`'s, plus `run-batch`. */
export declare const BATCH_WORLD: 'batch-handler';
export declare const ENGINES: readonly ['starlingmonkey', 'quickjs'];
export type Engine = 'starlingmonkey' | 'quickjs';
/** The SDK's toolchain/ folder: the toolchain's package.json, lockfile and loader. */
export declare const TOOLCHAIN_SOURCE: string;
/** A short hash of the toolchain's files: the name of its directory. */
export declare function toolchainId(): string;
/** `$AIRLOCK_JS_TOOLCHAIN`, else `${XDG_CACHE_HOME:-~/.cache}/airlock/js-toolchain/<toolchainId()>`. */
export declare function toolchainDir(): string;
/** Installs the toolchain when missing (printing one line through `log`); its directory. */
export declare function ensureToolchain(opts?: { log?: (line: string) => void }): Promise<{ dir: string; id: string; installedMs: number }>;
/** Bundles `entry` for `engine`; with `batch`, the entry also exports `runBatch` (a `batchHandler` default export). */
export declare function bundle(opts: { entry: string; engine?: Engine; minify?: boolean; batch?: boolean }): Promise<string>;
/** Builds `entry` into the component `out`: world `handler`, or with `batch` world `batch-handler`. */
export declare function build(opts: {
  entry: string;
  out: string;
  engine?: Engine;
  minify?: boolean;
  keepBundle?: boolean;
  batch?: boolean;
}): Promise<{
  out: string;
  engine: Engine;
  world: 'handler' | 'batch-handler';
  bytes: number;
  ms: number;
  bundleBytes: number;
  toolchainMs: number;
}>;
