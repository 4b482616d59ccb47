// The one module that touches the component's imports. Tests swap it out
// (the `airlock:job/*` specifiers are aliased to fakes), and the build
// keeps these specifiers external so the engine binds them to the WIT.
/// <reference path="./generated/airlock.d.ts" />
import * as context from 'airlock:job/context@0.6.0';
import * as config from 'airlock:job/config@0.6.0';

export type RawContext = typeof context;
export type RawConfig = typeof config;
export type RawJob = import('airlock:job/types@0.6.0').Job;

/** The imports as the engine's bindings give them (types per `jco guest-types`). */
export interface RawImports {
  context: RawContext;
  config: RawConfig;
}

export const rawImports: RawImports = { context, config };
