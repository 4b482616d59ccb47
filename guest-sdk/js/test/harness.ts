// `test` for both bundles: the QuickJS bundle's async functions return the
// SDK's SyncPromise, which the harness settles synchronously, as `run` does
// inside a QuickJS component.
import { test as nodeTest } from 'node:test';
import { ENGINE } from '../src/host';
import { settleNow } from '../src/sync-promise';
import { resetFake } from './fake/state';

export { ENGINE };

export function test(name: string, fn: () => unknown): void {
  nodeTest(`[${ENGINE}] ${name}`, (): Promise<void> | undefined => {
    resetFake();
    const result = fn();
    if (ENGINE === 'quickjs') {
      settleNow(result);
      return undefined;
    }
    return result as Promise<void>;
  });
}

/** What `fn` threw or rejected with (fails when it did neither). */
export async function caught(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected a failure');
}
