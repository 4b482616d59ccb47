import assert from 'node:assert/strict';
import { FatalError, parseDuration } from '../src/index';
import { test } from './harness';

test('durations in Inngest notation', () => {
  const cases: [string | number, number][] = [
    [0, 0],
    [1500, 1500],
    ['1500', 1500],
    ['500ms', 500],
    ['30s', 30_000],
    ['5m', 300_000],
    ['24h', 86_400_000],
    ['1d', 86_400_000],
    ['1w', 604_800_000],
    ['1h30m', 5_400_000],
    ['1h 30m 15s', 5_415_000],
    ['2.5 hours', 9_000_000],
    ['10 minutes', 600_000],
    [' 3 Days ', 259_200_000],
    ['.5s', 500],
  ];
  for (const [input, ms] of cases) assert.equal(parseDuration(input), ms, String(input));
});

test('unreadable durations are fatal', () => {
  for (const input of ['', 'soon', '5 parsecs', '1h30', '-5s', '5s!', 'h', -1, Number.NaN, Infinity]) {
    assert.throws(() => parseDuration(input as string | number), FatalError, String(input));
  }
  assert.throws(() => parseDuration('fortnight'), /invalid duration "fortnight"/);
});
