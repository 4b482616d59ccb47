// The entry point of an installed toolchain: airlock-build (lib/toolchain.mjs)
// imports this file from the toolchain's directory, so the packages below
// resolve from that directory's node_modules, not from the project's.
export const esbuild = () => import('esbuild');
export const componentizeJs = () => import('@bytecodealliance/componentize-js');
export const componentizeQjs = () => import('componentize-qjs');
