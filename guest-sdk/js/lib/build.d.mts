export declare const SDK_ROOT: string;
export declare const WIT_PATH: string;
export declare const WORLD: 'handler';
export declare const ENGINES: readonly ['starlingmonkey', 'quickjs'];
export type Engine = 'starlingmonkey' | 'quickjs';
export declare function bundle(opts: { entry: string; engine?: Engine; minify?: boolean }): Promise<string>;
export declare function build(opts: {
  entry: string;
  out: string;
  engine?: Engine;
  minify?: boolean;
  keepBundle?: boolean;
}): Promise<{ out: string; engine: Engine; bytes: number; ms: number; bundleBytes: number }>;
